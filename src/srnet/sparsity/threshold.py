"""Sparsity control: exact top-k keep masks, per matrix (local) or across matrices (global).

A ranking keeps the ``numel - round(s * numel)`` highest scores, so the number of zeros is
exactly ``round(s * numel)`` (``round`` is Python's).  Ties at the cut are broken by index
order (lower flat index kept first), which makes the result deterministic on any device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor

from srnet.errors import SrnetError

Scope = Literal["local", "global"]


def check_sparsity(sparsity: float, what: str = "sparsity") -> float:
    """Return ``sparsity`` if it lies in [0, 1); raise ``SrnetError`` naming the value otherwise."""
    if not 0.0 <= sparsity < 1.0:
        raise SrnetError(f"{what} must be in [0, 1), got {sparsity}")
    return float(sparsity)


def num_pruned(numel: int, sparsity: float) -> int:
    """The number of zeros a mask over ``numel`` entries has at ``sparsity``."""
    return round(check_sparsity(sparsity) * numel)


def topk_keep(scores: Tensor, sparsity: float) -> tuple[Tensor, float]:
    """Keep the highest scores so that exactly ``round(s * numel)`` entries are dropped.

    Returns the boolean keep mask (shaped like ``scores``) and a threshold half-way between
    the lowest kept and the highest dropped score, so that ``scores >= threshold`` reproduces
    the mask when there are no ties at the cut (``-inf``/``inf`` when nothing/everything is
    dropped).  Both selection routines give the same result: a quickselect on CPUs, a stable
    sort (much faster there) on accelerators.
    """
    flat = scores.detach().reshape(-1)
    n = flat.numel()
    keep_n = n - num_pruned(n, sparsity)
    if keep_n == n:
        return torch.ones_like(scores, dtype=torch.bool), float("-inf")
    if keep_n == 0:
        return torch.zeros_like(scores, dtype=torch.bool), float("inf")
    select = _select_by_quickselect if flat.device.type == "cpu" else _select_by_sort
    keep, lowest_kept, highest_dropped = select(flat, keep_n)
    return keep.view_as(scores), float((lowest_kept + highest_dropped) / 2)


def _select_by_quickselect(flat: Tensor, keep_n: int) -> tuple[Tensor, Tensor, Tensor]:
    """Keep mask of the ``keep_n`` largest entries (ties: lower index first) and the cut values."""
    lowest_kept = torch.kthvalue(flat, flat.numel() - keep_n + 1).values
    keep = flat > lowest_kept
    ties = flat == lowest_kept
    missing = keep_n - int(keep.sum())  # 1 <= missing <= number of ties
    if missing < int(ties.sum()):  # the cut falls inside a run of ties: keep the first ones
        keep[torch.nonzero(ties).squeeze(1)[:missing]] = True
        return keep, lowest_kept, lowest_kept
    keep |= ties
    return keep, lowest_kept, flat.masked_fill(keep, float("-inf")).max()


def _select_by_sort(flat: Tensor, keep_n: int) -> tuple[Tensor, Tensor, Tensor]:
    """Same contract as :func:`_select_by_quickselect`, with one stable descending sort."""
    values, order = torch.sort(flat, descending=True, stable=True)
    keep = torch.zeros_like(flat, dtype=torch.bool)
    keep[order[:keep_n]] = True
    return keep, values[keep_n - 1], values[keep_n]


def rank(
    scores: Sequence[Tensor], sparsity: float, scope: Scope = "local"
) -> list[tuple[Tensor, float]]:
    """Keep masks (and thresholds) for several score tensors at ``sparsity``.

    A score tensor is a matrix's entries, or a layer's group gates (heads, neurons).
    ``local``: each tensor gets exactly the target sparsity.  ``global``: one threshold over
    all scores compared across tensors, so the *total* number of zeros is exact.
    """
    if scope == "local":
        return [topk_keep(s, sparsity) for s in scores]
    if scope != "global":
        raise SrnetError(f"scope must be 'local' or 'global', got '{scope}'")
    device = scores[0].device
    flat = torch.cat([s.detach().reshape(-1).to(device) for s in scores])
    keep, threshold = topk_keep(flat, sparsity)
    parts = keep.split([s.numel() for s in scores])
    return [(p.view_as(s).to(s.device), threshold) for p, s in zip(parts, scores, strict=True)]


def sparsity_of(mask: Tensor) -> float:
    """The fraction of zeros in a 0/1 mask."""
    return 1.0 - float(torch.count_nonzero(mask)) / mask.numel()
