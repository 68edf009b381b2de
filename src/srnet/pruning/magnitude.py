"""One-shot pruning (OMP) of the current weights: by magnitude, or heads/neurons by gradient importance.

With gradient importance the cut may also deepen during training (``gradual``): ``gradual_steps``
equal steps over the first ``gradual`` fraction of training, each re-scoring the heads and neurons
still on the model being trained (the ones cut stay cut), as Michel et al. prune iteratively.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice
from typing import Any, Literal

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
    gradual: float = Field(
        0.0, ge=0.0, le=0.9,
        description="importance 'gradient': the fraction of training over which the cut deepens in "
        "gradual_steps equal steps, each re-scoring the groups left on the trained model (cut ones "
        "stay cut); 0: the whole cut before the first step.",
    )
    gradual_steps: int = Field(4, ge=2, le=100, description="gradual > 0: the number of cuts.")


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
    """The gradient importances of the last cut (normalised when configured)."""
    level: float = 0.0
    """The sparsity cut so far (gradient importance)."""

    @classmethod
    def check_config(cls, cfg: PruningConfig) -> None:
        if cfg.params.importance == "gradient" and cfg.granularity == "unstructured":
            raise ValueError(
                "importance 'gradient' scores heads and neurons: it needs granularity head, neuron "
                "or head+neuron, not 'unstructured'"
            )
        if cfg.params.gradual and cfg.params.importance != "gradient":
            raise ValueError("omp gradual re-scores heads and neurons on the trained model: it needs "
                             "importance 'gradient'")

    @property
    def calibrates(self) -> bool:
        return self.params.importance == "gradient"

    def decide(self) -> list[Tensor]:
        return self.ranked(magnitudes(self.targets))

    def calibrate_masks(self, model: nn.Module, data: Calibration) -> None:
        batches = list(islice(data.batches, self.params.importance_batches))
        self._scoring = (model, Calibration(batches, data.backward))
        self.level = 0.0
        self._cut(self.current_sparsity(0))

    def _cut(self, level: float) -> None:
        """Score the groups on the model as it is and cut to ``level``, the cut ones staying cut."""
        model, data = self._scoring
        scores = gradient_importance(model, self.targets, data, self.params.importance_batches, self.seed)
        if self.params.importance_normalize:
            scores = normalize_per_layer(scores)
        self.importances = scores
        if self.level:
            scores = [s.masked_fill(m.mask == 0, -1.0) for s, m in zip(scores, self._masks, strict=True)]
        for mask, keep in zip(self._masks, self.ranked(scores, level), strict=True):
            mask.set_mask(keep)
        self.level = level

    def cut_steps(self) -> list[int]:
        """The optimizer steps after which the cut deepens (``gradual``; none for a one-shot cut)."""
        span, cuts = self.params.gradual * self.total_steps, self.params.gradual_steps
        return [max(1, round(k * span / cuts)) for k in range(1, cuts)]

    def current_sparsity(self, step: int) -> float:
        if not self.params.gradual:
            return self.cfg.sparsity
        done = 1 + sum(step >= at for at in self.cut_steps())
        return self.cfg.sparsity * done / self.params.gradual_steps

    def on_step(self, step: int) -> bool:
        super().on_step(step)
        target = self.current_sparsity(step)
        if self.params.gradual and target > self.level:
            self._cut(target)
        return False

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "level": self.level}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.level = float(state.get("level", self.cfg.sparsity))  # checkpoints before gradual: cut

    def ranked(self, scores: list[Tensor], level: float | None = None) -> list[Tensor]:
        """Keep masks of the highest ``scores`` at ``level`` (the target sparsity), per ``cfg.scope``."""
        target = self.cfg.sparsity if level is None else level
        return [keep for keep, _ in rank(scores, target, self.cfg.scope)]
