"""Issues 30 and 40: every model family prunes its whole encoder or is refused in one line before
training.  Tiny random models of families outside BERT's names are masked in full: DeBERTa-v2
(query_proj ...), DeBERTa-v3 (also its relative-position projections pos_key_proj/pos_query_proj),
MPNet (attn.q ...), XLM-R (BERT's names under another model_type), ALBERT (one layer shared across
depth, masked and counted once) and ModernBERT (fused Wqkv, GLU Wi); their exports reload with
plain ``transformers`` and give the masked model's logits.  A layout srnet cannot cover is refused,
where such models once ran and reported 50% while masking only the classifier."""

from __future__ import annotations

import numpy as np
import pytest
from torch import nn
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from conftest import save_tiny_model, tiny_classifier, tiny_recipe
from srnet import api
from srnet.errors import SrnetError
from srnet.evaluation.predict import predict_logits
from srnet.experiments.run import task as run_module
from srnet.models import BLOCK_ROLES, ENCODER_ROLES, classify_weight, encoder_blocks
from srnet.models import SUPPORTED_FAMILIES as SHRINKS
from srnet.tasks import generate_synthetic

BERT_IDS = {"pad_token_id": 0, "cls_token_id": 101, "sep_token_id": 102,  # the bundled vocabulary's
            "bos_token_id": 101, "eos_token_id": 102}
DEBERTA_V3 = {"relative_attention": True, "pos_att_type": ["p2c", "c2p"], "share_att_key": False,
              "position_buckets": 16, "norm_rel_ebd": "layer_norm"}
FAMILIES = {  # test id -> (model_type, config, encoder matrices)
    "deberta-v2": ("deberta-v2", {}, 12),  # 2 layers x Q, K, V, attention output, FFN in, FFN out
    "deberta-v3": ("deberta-v2", DEBERTA_V3, 16),  # + the relative-position key and query
    "mpnet": ("mpnet", {}, 12),
    "xlm-roberta": ("xlm-roberta", {}, 12),
    "albert": ("albert", {}, 6),  # one layer, shared by both
    "modernbert": ("modernbert", BERT_IDS, 8),  # 2 layers x Wqkv, attention Wo, Wi, FFN Wo
}
STRUCTURED = [f for f in FAMILIES if f != "modernbert"]


def encoder_matrices(model: nn.Module) -> list[str]:
    return [f"{prefix}.{n}" for prefix, block in encoder_blocks(model)
            for n, m in block.named_modules() if isinstance(m, nn.Linear)]


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("method", ["mask_train", "omp"])
def test_a_covered_family_masks_every_encoder_matrix_to_the_target_and_exports(tmp_path, monkeypatch,
                                                                               family, method):
    model_type, config, count = FAMILIES[family]
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
def test_a_covered_family_prunes_whole_heads_and_neurons_and_refuses_only_to_shrink(tmp_path, family):
    """Head/neuron masks need only the six encoder roles and a head count in the config, so the
    covered families prune structurally too (every layer loses half its heads and neurons; ALBERT's
    shared layer once); a shrunk export needs srnet's shrunk class for the family and is refused in
    one line without one."""
    from srnet.sparsity.mask_io import load_masks

    model_type, config, _ = FAMILIES[family]
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
    if model_type not in SHRINKS:
        with pytest.raises(SrnetError, match=rf"cannot shrink a {model_type} model: srnet has shrunk"):
            api.export_masked(None, run_dir / "masks.safetensors", tmp_path / "shrunk", shrink=True)
        assert not (tmp_path / "shrunk").exists()


def test_a_fused_family_refuses_heads_neurons_and_shrinking_in_one_line(tmp_path):
    """ModernBERT's fused Wqkv (and GLU Wi) keep a head's rows apart: head/neuron masks are refused
    before the run folder, and so is shrinking its (unstructured) masks."""
    model_dir = save_tiny_model(tmp_path / "model", "modernbert", **BERT_IDS)
    recipe = tiny_recipe(tmp_path / "runs", model_dir, "hn",
                         pruning={"method": "omp", "granularity": "head", "sparsity": 0.5})
    with pytest.raises(SrnetError, match=r"structured masks \(heads, neurons\) are not supported for "
                                         r"'modernbert' models: its fused Wqkv matrix") as info:
        api.run(recipe)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "runs" / "hn").exists()
    recipe = tiny_recipe(tmp_path / "runs", model_dir, "omp", training={"mixed_precision": "no"},
                         pruning={"method": "omp", "sparsity": 0.5})
    run_dir = api.run(recipe).run_dir
    with pytest.raises(SrnetError, match=r"cannot shrink a modernbert model: srnet has shrunk classes"):
        api.export_masked(None, run_dir / "masks.safetensors", tmp_path / "shrunk", shrink=True)
    assert not (tmp_path / "shrunk").exists()
