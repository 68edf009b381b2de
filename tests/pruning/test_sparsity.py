"""Exact top-k masks, local/global ranking and the mask parametrizations."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch.nn.utils import parametrize

import srnet.sparsity.threshold as selection
from srnet.errors import SrnetError
from srnet.sparsity import (
    FixedMask,
    HardConcreteMask,
    ScoreMask,
    attach,
    num_pruned,
    original_weight,
    rank,
    sparsity_of,
    topk_keep,
)


def test_topk_keep_hand_computed():
    keep, threshold = topk_keep(torch.tensor([0.5, 0.1, 0.9, 0.3]), 0.5)
    assert keep.tolist() == [True, False, True, False]
    assert threshold == pytest.approx(0.4)


def test_topk_keep_breaks_ties_by_index():
    keep, threshold = topk_keep(torch.zeros(10), 0.3)
    assert keep.tolist() == [True] * 7 + [False] * 3
    assert threshold == 0.0
    keep, _ = topk_keep(torch.tensor([[1.0, 2.0, 2.0], [2.0, 0.0, 2.0]]), 0.5)
    assert keep.tolist() == [[False, True, True], [True, False, False]]


@pytest.mark.parametrize("sparsity", [0.0, 0.1, 0.25, 0.5, 0.77, 0.9, 0.999])
@pytest.mark.parametrize("shape", [(7,), (13, 11), (64, 32)])
def test_topk_keep_exact_count(sparsity, shape):
    scores = torch.randint(0, 4, shape).float()  # many ties
    keep, _ = topk_keep(scores, sparsity)
    numel = math.prod(shape)
    assert int((~keep).sum()) == round(sparsity * numel) == num_pruned(numel, sparsity)
    assert keep.shape == scores.shape


@pytest.mark.parametrize("seed", range(6))
def test_both_selection_routines_match_a_python_sort(seed):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randint(0, 5 if seed % 2 else 1000, (37,), generator=g).float()
    keep_n = 37 - round(0.4 * 37)
    order = sorted(range(37), key=lambda i: (-scores[i].item(), i))
    expected = torch.zeros(37, dtype=torch.bool)
    expected[order[:keep_n]] = True
    cut = (scores[order[keep_n - 1]], scores[order[keep_n]])
    for select in (selection._select_by_quickselect, selection._select_by_sort):
        keep, lowest_kept, highest_dropped = select(scores, keep_n)
        assert torch.equal(keep, expected)
        assert (lowest_kept, highest_dropped) == cut
    keep, value = topk_keep(scores, 0.4)
    assert torch.equal(keep, expected)
    assert value == pytest.approx(float(sum(cut) / 2))


def test_topk_keep_extremes():
    keep, threshold = topk_keep(torch.randn(5), 0.0)
    assert keep.all() and threshold == float("-inf")
    keep, threshold = topk_keep(torch.randn(5), 0.95)  # round(4.75) = 5 zeros
    assert not keep.any() and threshold == float("inf")


@pytest.mark.parametrize("bad", [1.0, -0.1, 1.5])
def test_bad_sparsity_names_value(bad):
    with pytest.raises(SrnetError, match=str(bad)):
        topk_keep(torch.randn(4), bad)


def test_rank_local_and_global():
    small = torch.full((4, 5), 0.1)
    big = torch.arange(1.0, 31.0).reshape(5, 6)
    local = rank([small, big], 0.5, "local")
    assert [int((~k).sum()) for k, _ in local] == [10, 15]
    glob = rank([small, big], 0.5, "global")
    # 25 zeros in total: all of ``small`` (the lowest scores), then the 5 lowest of ``big``.
    assert [int((~k).sum()) for k, _ in glob] == [20, 5]
    assert glob[1][0].reshape(-1)[:5].tolist() == [False] * 5
    assert glob[0][1] == glob[1][1] == pytest.approx(5.5)
    with pytest.raises(SrnetError, match="blockwise"):
        rank([small], 0.5, "blockwise")  # type: ignore[arg-type]


def test_sparsity_of():
    assert sparsity_of(torch.tensor([1.0, 0.0, 0.0, 1.0])) == 0.5


def _linear() -> nn.Linear:
    torch.manual_seed(0)
    return nn.Linear(4, 3)


def test_fixed_mask_multiplies_weight():
    layer = _linear()
    w = layer.weight.detach().clone()
    keep = torch.rand(3, 4) > 0.5
    mask = attach(layer, FixedMask(keep, w))
    assert torch.equal(layer.weight, w * keep)
    assert torch.equal(original_weight(layer), w)
    assert torch.equal(mask.binary_mask(), keep)
    assert mask.mask.dtype == w.dtype


def test_score_mask_straight_through_gradient():
    layer = _linear()
    layer.weight.requires_grad_(False)
    w = layer.weight.detach().clone()
    scores = torch.tensor([[0.5, -1.0, 2.0, 0.0]] * 3)
    keep, threshold = topk_keep(scores, 0.5)
    mask = attach(layer, ScoreMask(scores, keep, threshold))
    x = torch.randn(2, 4)
    layer(x).sum().backward()
    # d(sum(x W_eff^T))/dW_eff[i, j] = sum_b x[b, j]; the STE passes it to scores times W.
    expected = x.sum(0).expand(3, 4) * w
    assert torch.allclose(mask.scores.grad, expected)
    assert original_weight(layer).grad is None
    assert torch.equal(layer.weight, w * keep)


def test_score_mask_holds_threshold_between_reranks():
    layer = _linear()
    scores = torch.tensor([[0.1, 0.2, 0.3, 0.4]] * 3)
    keep, threshold = topk_keep(scores, 0.5)
    assert threshold == pytest.approx(0.25)
    mask = attach(layer, ScoreMask(scores, keep, threshold))
    with torch.no_grad():
        mask.scores[0, 0] = 1.0
    assert mask.binary_mask().sum() == 6  # not recomputed until asked
    mask.update_mask()
    assert mask.binary_mask().sum() == 7 and mask.threshold == pytest.approx(0.25)
    mask.set_ranked(*topk_keep(mask.scores, 0.5))
    assert mask.binary_mask().sum() == 6


def test_hard_concrete_gates():
    layer = _linear()
    w = layer.weight.detach().clone()
    mask = attach(layer, HardConcreteMask(torch.ones(3, 4), w, init_keep=0.9))
    assert torch.allclose(mask.log_alpha, torch.full((3, 4), math.log(9.0)))
    expected = 1 / (1 + math.exp(-(math.log(9.0) - 2 / 3 * math.log(0.1 / 1.1))))
    assert torch.allclose(mask.keep_probability(), torch.full((3, 4), expected))
    layer.train()
    gates = mask.sample_gates()
    assert gates.min() >= 0 and gates.max() <= 1
    assert gates.requires_grad
    keep = torch.rand(3, 4) > 0.5
    mask.set_mask(keep)
    layer.eval()
    assert torch.equal(layer.weight, w * keep)


def test_parametrization_is_registered():
    layer = _linear()
    attach(layer, FixedMask(torch.ones(3, 4), layer.weight))
    assert parametrize.is_parametrized(layer, "weight")
    assert "parametrizations.weight.0.mask" in layer.state_dict()
