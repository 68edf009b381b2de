"""Backbones: the bundled default, clear errors for unreachable models, prunable weights per family."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from conftest import save_tiny_model
from srnet.errors import SrnetError
from srnet.models import ENCODER_ROLES, default_model_path, find_prunable, load_classifier, load_tokenizer

FAMILIES = ["bert", "roberta", "distilbert", "electra"]


def test_default_backbone_is_the_bundled_minilm():
    path = default_model_path()
    assert (path / "config.json").is_file() and (path / "model.safetensors").is_file()
    tokenizer = load_tokenizer("default")
    assert tokenizer("a test")["input_ids"][0] == tokenizer.cls_token_id


@pytest.mark.parametrize("name, reason", [
    ("no-such-org/no-such-model", "the hub cannot be reached (offline)"), ("/no/such/dir", "not found"),
])
def test_unreachable_model_is_one_clear_error(name, reason, monkeypatch):
    monkeypatch.setattr("srnet.models.loading._hub_reachable", lambda: False)
    with pytest.raises(SrnetError) as info:
        load_classifier(name, ["a", "b", "c"])
    assert str(info.value).startswith(f"model '{name}'") and reason in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("family", FAMILIES)
def test_prunable_weights_per_family(family, tmp_path):
    model = load_classifier(str(save_tiny_model(tmp_path / family, family)))
    found = find_prunable(model)
    roles = Counter(w.role for w in found)
    layers = 2
    assert all(roles[r] == layers for r in ENCODER_ROLES), roles
    assert roles["classifier"] >= 1
    assert {w.layer for w in found if w.role in ENCODER_ROLES} == {0, 1}
    for w in found:
        assert isinstance(w.module, torch.nn.Linear)
    embeddings = find_prunable(model, ["embeddings"])
    assert len(embeddings) == 1 and isinstance(embeddings[0].module, torch.nn.Embedding)
    # the FFN output is never confused with the attention output
    attn_out = {w.name for w in found if w.role == "attn_out"}
    ffn_out = {w.name for w in found if w.role == "ffn_out"}
    assert attn_out.isdisjoint(ffn_out)


def test_role_and_pattern_selection_errors(tiny_model_dir):
    model = load_classifier(str(tiny_model_dir))
    only_layer0 = find_prunable(model, ["query", "key"], pattern=r"layer\.0\.")
    assert [w.name for w in only_layer0] == ["bert.encoder.layer.0.attention.self.query",
                                             "bert.encoder.layer.0.attention.self.key"]
    with pytest.raises(SrnetError, match="unknown role"):
        find_prunable(model, ["heads"])
    with pytest.raises(SrnetError, match="select no weight"):
        find_prunable(model, ["query"], pattern="layer\\.7\\.")


def test_named_head_in_another_label_order_is_reordered(tmp_path):
    """A hub model trained with labels (contradiction, neutral, entailment) predicts the same
    classes after loading for a task ordered (entailment, neutral, contradiction)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    path = save_tiny_model(tmp_path / "m")
    original = AutoModelForSequenceClassification.from_pretrained(path)
    original.config.id2label = {0: "contradiction", 1: "neutral", 2: "entailment"}
    original.config.label2id = {v: k for k, v in original.config.id2label.items()}
    original.save_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    batch = tokenizer(["a cat sat", "two dogs"], ["a cat", "no dogs"], return_tensors="pt", padding=True)
    before = original.eval()(**batch).logits
    task_labels = ["entailment", "neutral", "contradiction"]
    loaded = load_classifier(str(path), task_labels).eval()
    after = loaded(**batch).logits
    assert torch.allclose(after, before[:, [2, 1, 0]], atol=1e-6)
    assert loaded.config.id2label[0] == "entailment"
    with pytest.raises(SrnetError, match="does not match the task's labels"):
        load_classifier(str(path), ["negative", "positive", "other"])


def test_generic_head_of_another_size_is_replaced(tmp_path):
    path = save_tiny_model(tmp_path / "m", num_labels=3)
    assert load_classifier(str(path), ["no", "yes"]).config.num_labels == 2


def test_structure_imports_only_the_family_table_from_its_package():
    """The family table (``families``) sits below roles and groups (``structure``), which sit below
    model loading (``loading``)."""
    import ast
    from pathlib import Path

    import srnet.models.families as families
    import srnet.models.structure as structure

    def imported(module) -> set[str]:
        tree = ast.parse(Path(module.__file__).read_text())
        return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module and node.module.startswith("srnet.models")}

    assert imported(structure) == {"srnet.models.families"}
    assert imported(families) == set()
