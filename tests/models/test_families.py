"""Every model family prunes its whole encoder or is refused in one line before
training.  Tiny random models of families outside BERT's names are masked in full: DeBERTa-v2
(query_proj ...), DeBERTa-v3 (also its relative-position projections pos_key_proj/pos_query_proj),
MPNet (attn.q ...), XLM-R (BERT's names under another model_type), ALBERT (one layer shared across
depth, masked and counted once) and ModernBERT (fused Wqkv, GLU Wi); their exports reload with
plain ``transformers`` and give the masked model's logits.  A layout srnet cannot cover is refused,
where such models once ran and reported 50% while masking only the classifier."""

from __future__ import annotations

import json
from importlib.util import find_spec
from types import SimpleNamespace

import numpy as np
import pytest
from torch import nn
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from conftest import (
    BERT_IDS,
    FAMILY_MODELS,
    assert_reloads_without_srnet,
    save_tiny_model,
    tiny_classifier,
    tiny_recipe,
)
from srnet import api
from srnet.errors import SrnetError
from srnet.evaluation.predict import predict_logits
from srnet.experiments.run import task as run_module
from srnet.models import (
    BLOCK_ROLES,
    ENCODER_ROLES,
    FAMILIES,
    classify_weight,
    encoder_blocks,
    find_groups,
    shrinkable,
)
from srnet.tasks import generate_synthetic

MATRICES = {  # test id -> encoder matrices of its tiny model (2 layers)
    "deberta-v2": 12,  # 2 layers x Q, K, V, attention output, FFN in, FFN out
    "deberta-v3": 16,  # + the relative-position key and query
    "mpnet": 12,
    "xlm-roberta": 12,
    "albert": 6,  # one layer, shared by both
    "modernbert": 8,  # 2 layers x Wqkv, attention Wo, Wi, FFN Wo
}
STRUCTURED = sorted(MATRICES)


def encoder_matrices(model: nn.Module) -> list[str]:
    return [f"{prefix}.{n}" for prefix, block in encoder_blocks(model)
            for n, m in block.named_modules() if isinstance(m, nn.Linear)]


@pytest.mark.parametrize("family", sorted(MATRICES))
@pytest.mark.parametrize("method", ["mask_train", "omp"])
def test_a_covered_family_masks_every_encoder_matrix_to_the_target_and_exports(tmp_path, monkeypatch,
                                                                               family, method):
    (model_type, config), count = FAMILY_MODELS[family], MATRICES[family]
    dev = generate_synthetic("dev", 8, seed=0)
    masked_logits = []
    check = run_module.check_baked_model

    def capture_masked_model(masked, baked, tokenizer, probe, max_length):
        masked_logits.append(predict_logits(masked, tokenizer, dev, max_length=max_length))
        check(masked, baked, tokenizer, probe, max_length)

    monkeypatch.setattr(run_module, "check_baked_model", capture_masked_model)
    model_dir = save_tiny_model(tmp_path / "model", model_type, **config)
    recipe = tiny_recipe(tmp_path, model_dir, f"{family}_{method}", training={"mixed_precision": "no"},
                         pruning={"method": method, "sparsity": 0.5})
    result = api.run(recipe)
    per_matrix = result.metrics.sparsity.per_matrix
    expected = encoder_matrices(tiny_classifier(model_type, **config))
    assert len(expected) == count
    assert all(classify_weight(name)[0] in BLOCK_ROLES for name in expected)
    assert set(expected) <= set(per_matrix)
    assert sum(classify_weight(name)[0] in BLOCK_ROLES for name in per_matrix) == count  # ALBERT's once
    assert all(per_matrix[name] == pytest.approx(0.5, abs=0.01) for name in expected)

    exported, info = AutoModelForSequenceClassification.from_pretrained(
        result.run_dir / "model", output_loading_info=True)
    assert not info["missing_keys"] and not info["mismatched_keys"]
    assert all(float((exported.get_submodule(name).weight == 0).float().mean()) >= 0.49 for name in expected)
    tokenizer = AutoTokenizer.from_pretrained(result.run_dir / "model")
    logits = predict_logits(exported.eval(), tokenizer, dev, max_length=48)
    np.testing.assert_allclose(logits, masked_logits[0], atol=1e-5)


REFUSED = {  # a layout srnet cannot cover -> (model_type, config, roles, the one-line refusal)
    "albert-two-inner-layers": ("albert", {"inner_group_num": 2}, list(ENCODER_ROLES),
                                r"this albert model cannot be masked in full: its matrices .* take no role"),
    "modernbert-query-alone": ("modernbert", BERT_IDS, ["query", "attn_out", "ffn_in", "ffn_out"],
                               r"this modernbert model cannot be masked in full: roles \['query'\] are "
                               r"missing in model\.layers\.0"),  # Wqkv is masked for query, key and value
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_layout_srnet_cannot_cover_is_refused_before_training(tmp_path, case):
    model_type, config, roles, message = REFUSED[case]
    model_dir = save_tiny_model(tmp_path / "model", model_type, **config)
    recipe = tiny_recipe(tmp_path / "runs", model_dir, "partial",
                         pruning={"method": "mask_train", "sparsity": 0.5, "roles": roles})
    with pytest.raises(SrnetError, match=message) as info:
        api.run(recipe)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "runs" / "partial").exists()  # refused before the run folder


@pytest.mark.parametrize("family", STRUCTURED)
def test_a_covered_family_prunes_whole_heads_and_neurons_and_shrinks_or_refuses_in_one_line(tmp_path, family):
    """Head/neuron masks need the encoder roles and a head count, so every covered family prunes
    structurally (every layer loses half its heads and neurons; ALBERT's shared layer once; a
    ModernBERT head is its rows in each of Wqkv's Q, K and V parts, a neuron both halves of its GLU
    Wi).  A family whose entry names a shrunk class shrinks: the shrunk export gives the masked
    model's logits, reloaded by plain transformers in a process that never imports srnet, and its
    ONNX and INT8 graphs export; the others (MPNet, ALBERT) are refused in one line."""
    from srnet.sparsity.mask_io import load_masks

    model_type, config = FAMILY_MODELS[family]
    model_dir = save_tiny_model(tmp_path / "model", model_type, **config)
    recipe = tiny_recipe(tmp_path, model_dir, f"{family}_hn", training={"mixed_precision": "no"},
                         pruning={"method": "omp", "granularity": "head+neuron", "sparsity": 0.5})
    run_dir = api.run(recipe).run_dir
    masks, _ = load_masks(run_dir / "masks.safetensors")
    layers = len(encoder_blocks(tiny_classifier(model_type, **config)))
    assert sorted(name.rsplit(".", 1)[-1] for name in masks) == ["heads"] * layers + ["neurons"] * layers
    assert all(int((~gate).sum()) == gate.numel() // 2 for gate in masks.values())
    out = api.export_masked(None, run_dir / "masks.safetensors", tmp_path / "plain")  # zeros, full size
    assert (out / "model.safetensors").is_file()
    if model_type not in shrinkable():
        with pytest.raises(SrnetError, match=rf"cannot shrink a {model_type} model: srnet has shrunk"):
            api.export_masked(None, run_dir / "masks.safetensors", tmp_path / "shrunk", shrink=True)
        assert not (tmp_path / "shrunk").exists()
        return
    onnx = find_spec("onnxruntime") is not None and find_spec("onnx") is not None
    shrunk = api.export_masked(None, run_dir / "masks.safetensors", tmp_path / "shrunk", shrink=True,
                               onnx=onnx, quantize="int8" if onnx else None)
    info = json.loads((shrunk / "srnet_export.json").read_text())
    assert info["shrunk"]["parameters"] < info["shrunk"]["dense_parameters"]
    if onnx:
        assert info["onnx"]["check"]["max_abs_diff"] <= 1e-4 and (shrunk / "model.int8.onnx").is_file()
    assert_reloads_without_srnet(shrunk, run_dir / "model", tmp_path)


def test_every_family_entry_has_a_tiny_model_in_the_tests():
    """A new entry in the family table is not silently untested: conftest's FAMILY_MODELS makes
    a tiny model of each, and the matrices above run them."""
    assert {model_type for model_type, _ in FAMILY_MODELS.values()} == set(FAMILIES.names())
    assert set(MATRICES) | {"bert", "roberta", "distilbert", "electra", "camembert"} == set(FAMILY_MODELS)


def test_a_fused_matrix_whose_head_count_does_not_divide_is_one_line():
    model = tiny_classifier("modernbert", **BERT_IDS)
    model.config.num_attention_heads = 5  # Wqkv: 96 rows, not 3 parts of 5 heads
    with pytest.raises(SrnetError, match=r"its Wqkv has 96 rows, not 3 part\(s\) of 5 heads") as info:
        find_groups(model, ["head"])
    assert "\n" not in str(info.value)


class ToyBlock(nn.Module):
    """A transformer block named as no built-in family names its matrices."""

    def __init__(self) -> None:
        super().__init__()
        self.att_q, self.att_k, self.att_v, self.att_o = (nn.Linear(8, 8) for _ in range(4))
        self.up, self.down = nn.Linear(8, 16), nn.Linear(16, 8)


class ToyEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.config = SimpleNamespace(model_type="toy-encoder", heads=2)
        self.blocks = nn.ModuleList(ToyBlock() for _ in range(2))


def test_a_family_added_from_outside_is_one_entry():
    """One ``register_family`` call (no srnet file edited) makes a new layout's matrices take roles,
    its heads and neurons group, its coverage check pass, and puts it in the docs' table."""
    from srnet.models import Family, check_encoder_coverage, family_of, find_prunable, register_family
    from srnet.models.families import family_table

    model = ToyEncoder()
    with pytest.raises(SrnetError, match="this toy-encoder model cannot be masked in full"):
        check_encoder_coverage(model, ENCODER_ROLES)
    with FAMILIES.scoped():
        register_family(Family("toy-encoder", "Toy", r"(^|\.)blocks\.(?P<layer>\d+)\.",
                               {"query": "att_q", "key": "att_k", "value": "att_v", "attn_out": "att_o",
                                "ffn_in": "up", "ffn_out": "down"}, heads_key="heads"))
        assert family_of("toy-encoder").label == "Toy"
        check_encoder_coverage(model, ENCODER_ROLES)
        assert classify_weight("blocks.1.att_o") == ("attn_out", 1)
        assert len(find_prunable(model, ENCODER_ROLES)) == 12
        groups = {g.name: g for g in find_groups(model, ["head", "neuron"])}
        assert {n: g.count for n, g in groups.items()} == {"blocks.0.heads": 2, "blocks.0.neurons": 16,
                                                            "blocks.1.heads": 2, "blocks.1.neurons": 16}
        assert [m.width for m in groups["blocks.0.heads"].members] == [4, 4, 4, 4]
        assert "| `toy-encoder` | Toy | `blocks.N` |" in family_table()
    assert family_of("toy-encoder") is None and "toy-encoder" not in family_table()


BAD_ENTRIES = {  # a family entry that cannot be -> its one-line refusal
    "role-matches-nothing": ({"ffn_in": "mlp.up"},
                             r"model family 'bert': role 'ffn_in' \(module path 'mlp\.up'\) matches no "
                             r"module of this model; fix the entry"),
    "unknown-role": ({"gate": "x"}, r"model family 'bert': unknown role 'gate'"),
    "no-layer-group": ({}, r"its layer pattern '\\.layer\\.' has no \(\?P<layer>\.\.\.\) group"),
}


@pytest.mark.parametrize("case", sorted(BAD_ENTRIES))
def test_a_bad_family_entry_is_one_line_before_training(tmp_path, tiny_model_dir, case):
    from srnet.models import Family, register_family

    change, message = BAD_ENTRIES[case]
    bert = FAMILIES["bert"]
    layer = r"\.layer\." if case == "no-layer-group" else bert.layer
    with FAMILIES.scoped(), pytest.raises(SrnetError, match=message) as info:
        FAMILIES.remove("bert")
        register_family(Family("bert", "BERT", layer, {**bert.roles, **change}))
        api.run(tiny_recipe(tmp_path / "runs", tiny_model_dir, "bad",
                            pruning={"method": "omp", "sparsity": 0.5}))
    assert "\n" not in str(info.value)
    assert not (tmp_path / "runs" / "bad").exists()
