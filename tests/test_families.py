"""Issue 30: every model family prunes its whole encoder or is refused in one line before training.
Tiny random models of families outside BERT's names: DeBERTa-v2 (query_proj ...), MPNet
(attn.q ...) and XLM-R (BERT's names under another model_type) are masked in full; ALBERT (shared
layers) and ModernBERT (fused Wqkv) are refused, where they once ran and reported 50% while masking
only the classifier."""

from __future__ import annotations

import pytest
from torch import nn

from conftest import save_tiny_model, tiny_classifier, tiny_recipe
from srnet import api
from srnet.errors import SrnetError
from srnet.models import ENCODER_ROLES, classify_weight, encoder_blocks
from srnet.models import SUPPORTED_FAMILIES as SHRINKS

COVERED = ["deberta-v2", "mpnet", "xlm-roberta"]
REFUSED = {"albert": {"embedding_size": 16},  # the special ids of the bundled (BERT) vocabulary:
           "modernbert": {"pad_token_id": 0, "cls_token_id": 101, "sep_token_id": 102,
                          "bos_token_id": 101, "eos_token_id": 102}}


def encoder_matrices(model: nn.Module) -> list[str]:
    return [f"{prefix}.{n}" for prefix, block in encoder_blocks(model)
            for n, m in block.named_modules() if isinstance(m, nn.Linear)]


@pytest.mark.parametrize("family", COVERED)
@pytest.mark.parametrize("method", ["mask_train", "omp"])
def test_a_covered_family_masks_every_encoder_matrix_to_the_target(tmp_path, family, method):
    model_dir = save_tiny_model(tmp_path / "model", family)
    recipe = tiny_recipe(tmp_path, model_dir, f"{family}_{method}", training={"mixed_precision": "no"},
                         pruning={"method": method, "sparsity": 0.5})
    per_matrix = api.run(recipe).metrics.sparsity.per_matrix
    expected = encoder_matrices(tiny_classifier(family))
    assert len(expected) == 12  # 2 layers x Q, K, V, attention output, FFN in, FFN out
    assert all(classify_weight(name)[0] in ENCODER_ROLES for name in expected)
    assert set(expected) <= set(per_matrix)
    assert all(per_matrix[name] == pytest.approx(0.5, abs=0.01) for name in expected)


@pytest.mark.parametrize("family", sorted(REFUSED))
def test_a_family_srnet_cannot_cover_is_refused_before_training(tmp_path, family):
    model_dir = save_tiny_model(tmp_path / "model", family, **REFUSED[family])
    recipe = tiny_recipe(tmp_path / "runs", model_dir, "partial",
                         pruning={"method": "mask_train", "sparsity": 0.5})
    with pytest.raises(SrnetError, match=rf"this {family} model cannot be masked in full: its matrices .* "
                                         r"take no role") as info:
        api.run(recipe)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "runs" / "partial").exists()  # refused before the run folder


@pytest.mark.parametrize("family", sorted(REFUSED))
def test_an_uncovered_family_still_fine_tunes_dense(tmp_path, family):
    model_dir = save_tiny_model(tmp_path / "model", family, **REFUSED[family])
    recipe = tiny_recipe(tmp_path, model_dir, "dense", training={"mixed_precision": "no", "max_steps": 2})
    assert api.run(recipe).metrics.sparsity.overall == 0.0


@pytest.mark.parametrize("family", COVERED)
def test_a_covered_family_prunes_whole_heads_and_neurons_and_refuses_only_to_shrink(tmp_path, family):
    """Head/neuron masks need only the six encoder roles and a head count in the config, so the
    covered families prune structurally too (every layer loses half its heads and neurons); a
    shrunk export needs srnet's shrunk class for the family and is refused in one line without one."""
    from srnet.sparsity.mask_io import load_masks

    model_dir = save_tiny_model(tmp_path / "model", family)
    recipe = tiny_recipe(tmp_path, model_dir, f"{family}_hn", training={"mixed_precision": "no"},
                         pruning={"method": "omp", "granularity": "head+neuron", "sparsity": 0.5})
    run_dir = api.run(recipe).run_dir
    masks, _ = load_masks(run_dir / "masks.safetensors")
    assert sorted(name.rsplit(".", 1)[-1] for name in masks) == ["heads", "heads", "neurons", "neurons"]
    assert all(int((~gate).sum()) == gate.numel() // 2 for gate in masks.values())
    out = api.export_masked(None, run_dir / "masks.safetensors", tmp_path / "plain")  # zeros, full size
    assert (out / "model.safetensors").is_file()
    if family not in SHRINKS:
        with pytest.raises(SrnetError, match=rf"cannot shrink a {family} model: srnet has shrunk classes"):
            api.export_masked(None, run_dir / "masks.safetensors", tmp_path / "shrunk", shrink=True)
        assert not (tmp_path / "shrunk").exists()
