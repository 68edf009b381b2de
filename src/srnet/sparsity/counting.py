"""Masks as 0/1 values: checked as bool, and their zeros counted per mask and pooled (sparsity is
counted from the mask that is actually applied)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import torch

from srnet.errors import SrnetError


def zero_counts(masks: Mapping[str, torch.Tensor]) -> dict[str, tuple[int, int]]:
    """Map each name to ``(zeros, numel)`` of its 0/1 (or bool) tensor."""
    return {name: (int((m == 0).sum()), m.numel()) for name, m in masks.items()}


def pooled_sparsity(counts: Iterable[tuple[int, int]]) -> float:
    """Overall fraction of zeros of ``(zeros, numel)`` pairs, weighted by numel."""
    pairs = list(counts)
    total = sum(n for _, n in pairs)
    return sum(z for z, _ in pairs) / total if total else 0.0


def as_bool(name: str, mask: torch.Tensor) -> torch.Tensor:
    """``mask`` as a bool tensor; SrnetError naming it when it holds other values than 0 and 1."""
    if mask.dtype == torch.bool:
        return mask
    if not bool(((mask == 0) | (mask == 1)).all()):
        raise SrnetError(f"mask '{name}' has entries other than 0 and 1 ({mask.dtype})")
    return mask.to(torch.bool)
