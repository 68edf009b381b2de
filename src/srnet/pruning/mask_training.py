"""Mask training (Win-win; Zhao et al. 2020): learn scores on frozen weights through an STE.

The applied mask is ``scores >= threshold``; a re-rank every ``rerank_every`` steps (and
at every ``freeze()``) applies the exact top-k of the scores at the scheduled target and
resets the threshold, which is held fixed in between.
"""

from __future__ import annotations

import logging
from typing import Literal

from pydantic import Field
from torch import Tensor, nn

from srnet.pruning.base import LearnedMaskMethod, LearnedMaskParams
from srnet.pruning.magnitude import magnitudes
from srnet.pruning.random import uniform_scores
from srnet.pruning.registry import register_method
from srnet.sparsity import FixedMask, ScoreMask, original_weight, rank

log = logging.getLogger("srnet.pruning")

START_NAMES = {"hard": "its OMP start", "soft": "its magnitude start", "random": "its random start"}
"""The mask a ``mask_train`` run starts from, by ``init``, in words."""


class MaskTrainingParams(LearnedMaskParams):
    """Settings of method mask_train."""

    init: Literal["hard", "soft", "random"] = Field(
        "hard",
        description="Score init: 'hard' alpha*phi on the top magnitudes, 'soft' |W|, 'random' "
        "seeded uniform.",
    )
    phi: float = Field(0.01, gt=0.0, description="Hard init: the score threshold phi.")
    alpha: float = Field(2.0, gt=0.0, description="Hard init: kept scores are alpha*phi.")
    rerank_every: int = Field(
        10, ge=1, description="Re-rank the threshold every N steps (and at freeze)."
    )


@register_method("mask_train")
class MaskTraining(LearnedMaskMethod):
    """Score masks with a straight-through estimator; weights frozen (optionally the head)."""

    params_model = MaskTrainingParams
    params: MaskTrainingParams
    _masks: list[ScoreMask]

    def initial_scores(self) -> list[Tensor]:
        """``hard``: alpha*phi on the top magnitudes at the final target, 0 elsewhere;
        ``soft``: |W|; ``random``: seeded U(0, 1)."""
        params = self.params
        if params.init == "soft":
            return magnitudes(self.targets)
        if params.init == "random":
            weights = [original_weight(t.module) for t in self.targets]
            return uniform_scores([t.shape for t in self.targets], self.seed, [w.device for w in weights])
        ranked = rank(magnitudes(self.targets), self.cfg.sparsity, self.cfg.scope)
        return [keep * (params.alpha * params.phi) for keep, _ in ranked]

    def setup(self, model: nn.Module) -> None:
        super().setup(model)
        self._check_reach()

    @property
    def start_name(self) -> str:
        return START_NAMES[self.params.init]

    def _check_reach(self) -> None:
        """Hard init keeps scores alpha*phi apart from the pruned ones (0).  AdamW moves a score by
        at most about the lr per step, and a linear warm-up/decay schedule averages half its peak,
        so ``total_steps * mask_lr / 2`` bounds the movement: when a kept and a pruned score moving
        toward each other cannot close the gap, say so before any step is spent."""
        params = self.params
        reach = self.total_steps * params.mask_lr / 2
        gap = params.alpha * params.phi
        if params.init == "hard" and 2 * reach < gap:
            log.warning(
                "pruning.params.mask_lr %g over %d steps moves a score by at most ~%.4f, and hard-init "
                "kept and pruned scores are %g apart: the mask cannot leave its OMP start (raise "
                "mask_lr to >= %.1e or the budget)", params.mask_lr, self.total_steps, reach, gap,
                gap / self.total_steps)

    def make_masks(self) -> list[FixedMask]:
        weights = [original_weight(t.module) for t in self.targets]
        return [
            ScoreMask(s.to(w.dtype), keep=s.new_ones(s.shape), threshold=float("-inf"))
            for s, w in zip(self.initial_scores(), weights, strict=True)
        ]

    def scores(self) -> dict[str, Tensor]:
        """The learned mask scores, keyed by module (or group) name."""
        return {t.name: m.scores.detach() for t, m in zip(self.targets, self._masks, strict=True)}

    def rerank(self, sparsity: float) -> None:
        scores = [m.scores for m in self._masks]
        for mask, (keep, threshold) in zip(
            self._masks, rank(scores, sparsity, self.cfg.scope), strict=True
        ):
            mask.set_ranked(keep, threshold)

    def on_step(self, step: int) -> bool:
        super().on_step(step)
        if step % self.params.rerank_every == 0:
            self.freeze()
        else:
            for mask in self._masks:
                mask.update_mask()
        return False
