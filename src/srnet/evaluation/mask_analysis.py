"""Mask analysis: sparsity per matrix and per layer × role, and overlap between two masks."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from srnet.errors import SrnetError
from srnet.models.structure import PrunableWeight, classify_weight
from srnet.sparsity.counting import pooled_sparsity, zero_counts


@dataclass(frozen=True)
class MatrixSparsity:
    """Zeros of one masked matrix."""

    name: str
    role: str | None
    layer: int | None
    zeros: int
    numel: int

    @property
    def sparsity(self) -> float:
        return self.zeros / self.numel if self.numel else 0.0


@dataclass(frozen=True)
class SparsityTable:
    """Sparsity per matrix, pooled per (layer, role), and overall (all weighted by numel)."""

    matrices: list[MatrixSparsity]
    by_layer_role: dict[tuple[int, str], float]
    overall: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary: overall, per ``"<layer>.<role>"`` and per matrix."""
        return {
            "overall": self.overall,
            "by_layer_role": {f"{layer}.{role}": v for (layer, role), v in self.by_layer_role.items()},
            "per_matrix": {m.name: m.sparsity for m in self.matrices},
        }

    def rows(self) -> list[dict[str, Any]]:
        """One row per matrix, for ``report.format_table``."""
        return [
            {"name": m.name, "role": m.role, "layer": m.layer, "numel": m.numel,
             "sparsity": m.sparsity}
            for m in self.matrices
        ]


def sparsity_table(
    masks: Mapping[str, torch.Tensor], prunable: list[PrunableWeight] | None = None
) -> SparsityTable:
    """Tabulate the sparsity of ``masks``.

    Roles and layers come from ``prunable`` when given (every mask key must be in it), otherwise
    from the module names; weights outside any layer (classifier, embeddings) appear per matrix
    and in the overall figure but not in ``by_layer_role``.
    """
    if prunable is None:
        where = {name: classify_weight(name) for name in masks}
    else:
        known = {w.name: (w.role, w.layer) for w in prunable}
        missing = [name for name in masks if name not in known]
        if missing:
            raise SrnetError(f"mask key '{missing[0]}' is not among the given prunable weights")
        where = {name: known[name] for name in masks}
    counts = zero_counts(masks)
    matrices = [
        MatrixSparsity(name, *where[name], zeros=z, numel=n) for name, (z, n) in counts.items()
    ]
    groups: dict[tuple[int, str], list[tuple[int, int]]] = defaultdict(list)
    for m in matrices:
        if m.layer is not None and m.role is not None:
            groups[(m.layer, m.role)].append((m.zeros, m.numel))
    by_layer_role = {key: pooled_sparsity(pairs) for key, pairs in sorted(groups.items())}
    return SparsityTable(matrices, by_layer_role, pooled_sparsity(counts.values()))


@dataclass(frozen=True)
class Overlap:
    """Kept-entry counts shared by two masks."""

    intersection: int
    union: int

    @property
    def jaccard(self) -> float:
        """|A ∩ B| / |A ∪ B| of the kept entries; 1.0 when neither keeps anything."""
        return self.intersection / self.union if self.union else 1.0

    @property
    def distance(self) -> float:
        return 1.0 - self.jaccard


@dataclass(frozen=True)
class MaskComparison:
    """Jaccard overlap of the kept entries of two masks, per matrix and pooled overall."""

    per_matrix: dict[str, Overlap]
    overall: Overlap

    def rows(self) -> list[dict[str, Any]]:
        """One row per matrix plus an ``overall`` row, for ``report.format_table``."""
        items = [*self.per_matrix.items(), ("overall", self.overall)]
        return [{"name": n, "jaccard": o.jaccard, "distance": o.distance} for n, o in items]


def compare_masks(
    a: Mapping[str, torch.Tensor],
    b: Mapping[str, torch.Tensor],
    labels: tuple[str, str] = ("a", "b"),
) -> MaskComparison:
    """Compare two masks with the same keys and shapes; ``labels`` name them in errors."""
    for x, y, (lx, ly) in ((a, b, labels), (b, a, labels[::-1])):
        extra = [name for name in x if name not in y]
        if extra:
            raise SrnetError(f"mask key '{extra[0]}' is in {lx} but not in {ly}")
    per_matrix: dict[str, Overlap] = {}
    for name, ma in a.items():
        mb = b[name]
        if ma.shape != mb.shape:
            raise SrnetError(
                f"mask '{name}' has shape {tuple(ma.shape)} in {labels[0]} but "
                f"{tuple(mb.shape)} in {labels[1]}"
            )
        ka, kb = ma != 0, mb.to(ma.device) != 0
        per_matrix[name] = Overlap(int((ka & kb).sum()), int((ka | kb).sum()))
    overall = Overlap(
        sum(o.intersection for o in per_matrix.values()),
        sum(o.union for o in per_matrix.values()),
    )
    return MaskComparison(per_matrix, overall)


MIN_MOVEMENT = 0.01
"""A learned mask whose kept entries are within this Jaccard distance of its start did not move
(it is its start plus noise: docs/studies/winwin_calibration_cpu.md has a PoE mask that did not
move)."""


def mask_movement(start: Mapping[str, torch.Tensor], final: Mapping[str, torch.Tensor]) -> dict[str, Any]:
    """How far a learned mask moved from its start: the fraction of entries flipped and the
    Jaccard similarity of the kept entries, overall and per matrix (``moved``: a Jaccard distance
    of at least :data:`MIN_MOVEMENT`)."""
    overlap = compare_masks(start, final, ("the starting mask", "the final mask"))
    flips = {name: int(((start[name] != 0) != (final[name].to(start[name].device) != 0)).sum())
             for name in start}
    total = sum(m.numel() for m in start.values())
    flipped = sum(flips.values()) / total if total else 0.0
    return {
        "flipped": flipped,
        "flipped_entries": sum(flips.values()),
        "jaccard": overlap.overall.jaccard,
        "moved": 1.0 - overlap.overall.jaccard >= MIN_MOVEMENT,
        "per_matrix": {name: {"flipped": flips[name] / start[name].numel(),
                              "jaccard": overlap.per_matrix[name].jaccard} for name in start},
    }


def unmoved_warning(who: str, start_name: str, movement: Mapping[str, Any], fix: str) -> str | None:
    """The one warning line for a learned mask that did not move from its start (None when it
    moved); ``fix`` names the settings to raise (``pruning.params.mask_lr``, ``mask_lr in pruning=``)."""
    if movement["moved"]:
        return None
    return (f"{who}: the mask did not move from {start_name} (Jaccard {movement['jaccard']:.4f}, "
            f"{movement['flipped']:.4%} of entries flipped; a learned mask should move by >= "
            f"{MIN_MOVEMENT:.0%}): raise {fix} or the budget")
