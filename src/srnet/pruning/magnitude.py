"""One-shot magnitude pruning (OMP) of the current weights."""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor

from srnet.models import MaskGroup, PrunableWeight
from srnet.pruning.base import OneShotMethod, register_method
from srnet.sparsity import FixedMask, original_weight, rank


def magnitudes(
    targets: Sequence[PrunableWeight | MaskGroup], masks: Sequence[FixedMask] | None = None
) -> list[Tensor]:
    """|W| of each target (a group's RMS, see :func:`group_magnitude`); with ``masks``, pruned
    entries score -1 so that they stay pruned."""
    scores = [
        group_magnitude(t) if isinstance(t, MaskGroup) else original_weight(t.module).detach().abs()
        for t in targets
    ]
    if masks is not None:
        scores = [s.masked_fill(m.mask == 0, -1.0) for s, m in zip(scores, masks, strict=True)]
    return scores


def group_magnitude(group: MaskGroup) -> Tensor:
    """The root mean square of each group's weights over all its members.

    The mean, not the sum, keeps heads and neurons (groups of different sizes) comparable when
    they are ranked together (``scope: global``).
    """
    total: Tensor | float = 0.0
    numel = 0
    for member in group.members:
        weight = original_weight(member.module).detach()
        squares = weight.pow(2).sum(dim=1 - member.axis)  # per row (axis 0) or column (axis 1)
        total = total + squares.view(group.count, member.width).sum(1)
        numel += member.width * weight.shape[1 - member.axis]
    return (total / numel).sqrt()  # type: ignore[operator]


@register_method("omp")
class OneShotMagnitude(OneShotMethod):
    """Keep the largest-magnitude weights or groups (per matrix/layer or globally) at the target."""

    def decide(self) -> list[Tensor]:
        ranked = rank(magnitudes(self.targets), self.cfg.sparsity, self.cfg.scope)
        return [keep for keep, _ in ranked]
