"""One-shot magnitude pruning (OMP) of the current weights."""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor

from srnet.models import PrunableWeight
from srnet.pruning.base import OneShotMethod, register_method
from srnet.sparsity import FixedMask, original_weight, rank


def magnitudes(targets: Sequence[PrunableWeight], masks: Sequence[FixedMask] | None = None) -> list[Tensor]:
    """|W| of each target; with ``masks``, pruned entries score -1 so that they stay pruned."""
    scores = [original_weight(t.module).detach().abs() for t in targets]
    if masks is not None:
        scores = [s.masked_fill(m.mask == 0, -1.0) for s, m in zip(scores, masks, strict=True)]
    return scores


@register_method("omp")
class OneShotMagnitude(OneShotMethod):
    """Keep the largest-magnitude weights (per matrix or globally) at the target sparsity."""

    def decide(self) -> list[Tensor]:
        ranked = rank(magnitudes(self.targets), self.cfg.sparsity, self.cfg.granularity)
        return [keep for keep, _ in ranked]
