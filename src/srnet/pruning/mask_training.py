"""Mask training (Win-win; Zhao et al. 2020): learn scores on frozen weights through an STE.

The applied mask is ``scores >= threshold``; a re-rank every ``cfg.rerank_every`` steps (and
at every ``freeze()``) applies the exact top-k of the scores at the scheduled target and
resets the threshold, which is held fixed in between.
"""

from __future__ import annotations

import logging

from torch import Tensor, nn

from srnet.pruning.base import LearnedMaskMethod, register_method
from srnet.pruning.magnitude import magnitudes
from srnet.pruning.random import uniform_scores
from srnet.sparsity import FixedMask, ScoreMask, original_weight, rank

log = logging.getLogger("srnet.pruning")

START_NAMES = {"hard": "its OMP start", "soft": "its magnitude start", "random": "its random start"}
"""The mask a ``mask_train`` run starts from, by ``init``, in words."""


@register_method("mask_train")
class MaskTraining(LearnedMaskMethod):
    """Score masks with a straight-through estimator; weights frozen (optionally the head)."""

    _masks: list[ScoreMask]

    def initial_scores(self) -> list[Tensor]:
        """``hard``: alpha*phi on the top magnitudes at the final target, 0 elsewhere;
        ``soft``: |W|; ``random``: seeded U(0, 1)."""
        cfg = self.cfg
        if cfg.init == "soft":
            return magnitudes(self.targets)
        if cfg.init == "random":
            weights = [original_weight(t.module) for t in self.targets]
            return uniform_scores([t.shape for t in self.targets], self.seed, [w.device for w in weights])
        ranked = rank(magnitudes(self.targets), cfg.sparsity, cfg.scope)
        return [keep * (cfg.alpha * cfg.phi) for keep, _ in ranked]

    def setup(self, model: nn.Module) -> None:
        super().setup(model)
        self._check_reach()

    @property
    def start_name(self) -> str:
        return START_NAMES[self.cfg.init]

    def _check_reach(self) -> None:
        """Hard init keeps scores alpha*phi apart from the pruned ones (0).  AdamW moves a score by
        at most about the lr per step, and a linear warm-up/decay schedule averages half its peak,
        so ``total_steps * mask_lr / 2`` bounds the movement: when a kept and a pruned score moving
        toward each other cannot close the gap, say so before any step is spent."""
        cfg = self.cfg
        reach = self.total_steps * cfg.mask_lr / 2
        if cfg.init == "hard" and 2 * reach < cfg.alpha * cfg.phi:
            log.warning(
                "pruning.mask_lr %g over %d steps moves a score by at most ~%.4f, and hard-init kept "
                "and pruned scores are %g apart: the mask cannot leave its OMP start (raise mask_lr "
                "to >= %.1e or the budget)", cfg.mask_lr, self.total_steps, reach, cfg.alpha * cfg.phi,
                cfg.alpha * cfg.phi / self.total_steps)

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
        if step % self.cfg.rerank_every == 0:
            self.freeze()
        else:
            for mask in self._masks:
                mask.update_mask()
        return False
