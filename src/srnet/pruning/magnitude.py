"""One-shot pruning (OMP) of the current weights: by magnitude, or heads/neurons by gradient importance."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field
from torch import Tensor, nn

from srnet.models import MaskGroup, PrunableWeight
from srnet.pruning.base import Calibration, OneShotMethod, OneShotParams
from srnet.pruning.config import PruningConfig
from srnet.pruning.importance import gradient_importance, normalize_per_layer
from srnet.pruning.registry import register_method
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
        total = total + squares.view(member.parts, group.count, member.width).sum((0, 2))
        numel += member.parts * member.width * weight.shape[1 - member.axis]
    return (total / numel).sqrt()  # type: ignore[operator]


class OmpParams(OneShotParams):
    """Settings of method omp: how weights and groups are scored."""

    importance: Literal["magnitude", "gradient"] = Field(
        "magnitude",
        description="'magnitude': |W| (a group's RMS); 'gradient' (heads/neurons only): E|dL/dxi| "
        "of a gate xi = 1 on each head's or neuron's output over the first importance_batches "
        "training batches (Michel et al. 2019).",
    )
    importance_batches: int = Field(
        32, ge=1,
        description="importance 'gradient': training batches averaged (fewer if the split has fewer).",
    )
    importance_normalize: bool = Field(
        True,
        description="importance 'gradient': divide each layer's head (neuron) importances by their "
        "root mean square (Michel et al.'s per-layer L2 norm, scaled so heads and neurons compare).",
    )


@register_method("omp")
class OneShotMagnitude(OneShotMethod):
    """Keep the most important weights or groups (per matrix/layer or globally) at the target.

    Importance (``params.importance``): the magnitude of the weights, or for heads and neurons the
    gradient of the training loss with respect to a gate on each (:mod:`srnet.pruning.importance`),
    which is measured in :meth:`calibrate` on training batches.
    """

    params_model = OmpParams
    params: OmpParams
    importances: list[Tensor] | None = None
    """The gradient importances that :meth:`calibrate` ranked (normalised when configured)."""

    @classmethod
    def check_config(cls, cfg: PruningConfig) -> None:
        if cfg.params.importance == "gradient" and cfg.granularity == "unstructured":
            raise ValueError(
                "importance 'gradient' scores heads and neurons: it needs granularity head, neuron "
                "or head+neuron, not 'unstructured'"
            )

    @property
    def calibrates(self) -> bool:
        return self.params.importance == "gradient"

    def decide(self) -> list[Tensor]:
        return self.ranked(magnitudes(self.targets))

    def calibrate_masks(self, model: nn.Module, data: Calibration) -> None:
        scores = gradient_importance(model, self.targets, data, self.params.importance_batches, self.seed)
        if self.params.importance_normalize:
            scores = normalize_per_layer(scores)
        self.importances = scores
        for mask, keep in zip(self._masks, self.ranked(scores), strict=True):
            mask.set_mask(keep)

    def ranked(self, scores: list[Tensor]) -> list[Tensor]:
        """Keep masks of the highest ``scores`` at the target sparsity, per ``cfg.scope``."""
        return [keep for keep, _ in rank(scores, self.cfg.sparsity, self.cfg.scope)]
