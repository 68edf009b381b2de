"""Mask analysis: hand-computed sparsity tables and Jaccard overlaps."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from conftest import tiny_classifier
from srnet.errors import SrnetError
from srnet.evaluation.mask_analysis import compare_masks, sparsity_table
from srnet.models import PrunableWeight, find_prunable

Q0 = "bert.encoder.layer.0.attention.self.query"
FFN0 = "bert.encoder.layer.0.intermediate.dense"


def _t(*values: int) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.bool)


def test_sparsity_table_from_names():
    masks = {
        Q0: _t(1, 1, 1, 0).reshape(2, 2),  # 1 zero of 4
        FFN0: _t(1, 0, 1, 0, 0, 1, 0, 1).reshape(4, 2),  # 4 of 8
        "classifier": torch.ones(2, 3, dtype=torch.bool),  # 0 of 6
    }
    table = sparsity_table(masks)
    assert table.overall == pytest.approx(5 / 18)
    assert table.by_layer_role == {(0, "query"): 0.25, (0, "ffn_in"): 0.5}
    assert [(m.name, m.role, m.layer, m.zeros, m.numel) for m in table.matrices] == [
        (Q0, "query", 0, 1, 4), (FFN0, "ffn_in", 0, 4, 8), ("classifier", "classifier", None, 0, 6),
    ]
    assert table.as_dict() == {
        "overall": pytest.approx(5 / 18),
        "by_layer_role": {"0.query": 0.25, "0.ffn_in": 0.5},
        "per_matrix": {Q0: 0.25, FFN0: 0.5, "classifier": 0.0},
    }
    assert table.rows()[1] == {
        "name": FFN0, "role": "ffn_in", "layer": 0, "numel": 8, "sparsity": 0.5,
    }


def test_sparsity_table_pools_by_numel_with_prunable():
    prunable = [
        PrunableWeight("a", "query", 1, nn.Linear(2, 2)),
        PrunableWeight("b", "query", 1, nn.Linear(3, 4)),
    ]
    masks = {"a": _t(0, 0, 1, 1).reshape(2, 2), "b": torch.ones(4, 3, dtype=torch.bool)}
    table = sparsity_table(masks, prunable)
    assert table.by_layer_role == {(1, "query"): 2 / 16}  # not the mean of 0.5 and 0.0
    assert table.overall == 2 / 16
    with pytest.raises(SrnetError, match="mask key 'c' is not among the given prunable weights"):
        sparsity_table({**masks, "c": _t(1)}, prunable)


def test_sparsity_table_covers_a_real_model():
    prunable = find_prunable(tiny_classifier(vocab_size=50))
    masks = {w.name: torch.zeros(w.module.weight.shape, dtype=torch.bool) for w in prunable}
    table = sparsity_table(masks, prunable)
    assert table.overall == 1.0
    assert len(table.by_layer_role) == 2 * 6
    assert {role for _, role in table.by_layer_role} == {
        "query", "key", "value", "attn_out", "ffn_in", "ffn_out",
    }


def test_compare_masks_hand_computed():
    a = {"m": _t(1, 1, 0, 0), "n": _t(1, 1), "z": _t(0, 0)}
    b = {"m": _t(1, 0, 1, 0), "n": _t(1, 1), "z": _t(0, 0)}
    result = compare_masks(a, b)
    assert result.per_matrix["m"].jaccard == pytest.approx(1 / 3)
    assert result.per_matrix["m"].distance == pytest.approx(2 / 3)
    assert result.per_matrix["n"].jaccard == 1.0
    assert result.per_matrix["z"].jaccard == 1.0  # nothing kept on either side: identical
    assert (result.overall.intersection, result.overall.union) == (3, 5)
    assert result.overall.jaccard == pytest.approx(3 / 5)
    assert result.rows()[-1] == {
        "name": "overall", "jaccard": pytest.approx(0.6), "distance": pytest.approx(0.4),
    }
    assert compare_masks(a, a).overall.distance == 0.0


def test_compare_masks_errors_name_the_key():
    a = {"m": _t(1, 0), "only_a": _t(1)}
    b = {"m": _t(1, 0)}
    with pytest.raises(SrnetError, match="mask key 'only_a' is in x_st but not in y_st"):
        compare_masks(a, b, labels=("x_st", "y_st"))
    with pytest.raises(SrnetError, match="mask key 'only_a' is in a but not in b"):
        compare_masks(b, a, labels=("b", "a"))
    with pytest.raises(SrnetError, match=r"mask 'm' has shape \(2,\) in a but \(3,\) in b"):
        compare_masks({"m": _t(1, 0)}, {"m": _t(1, 0, 1)})
