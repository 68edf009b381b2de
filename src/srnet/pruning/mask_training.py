"""Mask training (Win-win; Zhao et al. 2020): learn scores on frozen weights through an STE.

The applied mask is ``scores >= threshold``; a re-rank every ``rerank_every`` steps (and
at every ``freeze()``) applies the exact top-k of the scores at the scheduled target and
resets the threshold, which is held fixed in between.
"""

from __future__ import annotations

import logging
import math
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator
from torch import Tensor, nn

from srnet.pruning.base import Calibration, LearnedMaskMethod, LearnedMaskParams
from srnet.pruning.importance import gradient_importance, normalize_per_layer
from srnet.pruning.magnitude import magnitudes
from srnet.pruning.random import uniform_scores
from srnet.pruning.registry import register_method
from srnet.sparsity import FixedMask, ScoreMask, original_weight, rank

log = logging.getLogger("srnet.pruning")

START_NAMES = {"hard": "its OMP start", "soft": "its magnitude start", "random": "its random start",
               "importance": "its OMP-gradient start"}
"""The mask a ``mask_train`` run starts from, by ``init``, in words."""


SCHEDULE_MEAN = 0.5
"""The mean of the trainer's learning-rate factor over a run: a linear warm-up then a linear decay
to 0 averages half the peak, whatever the warm-up ratio."""

DEFAULT_REACH = {"hard": 0.65, "soft": 0.16}
"""``mask_lr: auto``'s default reach by score init (see :func:`auto_mask_lr`), calibrated on the MNLI
sample (PoE, 50%, 933 steps); the measurements are in docs/studies/winwin_calibration_cpu.md."""


MIN_STEPS_PER_THRESHOLD = 33
"""``mask_lr: auto``'s cap: a score needs at least this many peak-lr steps to travel one initial
threshold (``scale / lr``).  Adam moves every score by about the lr per step whatever its gradient,
so below this a few noisy re-rank intervals reshuffle the whole mask.  Calibrated on the demo's
126 steps and the 933-step MNLI schedule (the runs at each step count:
docs/studies/winwin_calibration_cpu.md).  So ``auto`` never runs faster than the calibrated
933-step rate: the cap binds on schedules under ~920 steps (hard init) or ~56 (soft)."""


def auto_mask_lr(reach: float, scale: float, steps: int) -> float:
    """The mask lr whose random-walk reach is ``reach`` score units of ``scale``, capped at
    ``scale / MIN_STEPS_PER_THRESHOLD`` (:func:`auto_lr_capped` says when the cap binds).

    AdamW moves a score by about the lr per step; on noisy gradients the moves add up like a random
    walk, to about ``lr * sqrt(effective steps)``, with ``effective steps = SCHEDULE_MEAN * steps``.
    ``scale`` is the initial threshold (hard init: alpha*phi/2; soft: the |W| quantile at the
    target), so ``reach`` ~ 1 lets noise carry scores near the threshold across it and lets a
    consistent gradient carry any score well beyond, while the largest weights stay kept.  On a
    short schedule that lr would let a score cross the threshold in a handful of steps: the cap.
    """
    return min(reach * scale / math.sqrt(SCHEDULE_MEAN * steps), scale / MIN_STEPS_PER_THRESHOLD)


def auto_lr_capped(reach: float, scale: float, steps: int) -> bool:
    """Whether :func:`auto_mask_lr`'s cap, not the reach, sets the lr on this schedule."""
    return reach * scale / math.sqrt(SCHEDULE_MEAN * steps) > scale / MIN_STEPS_PER_THRESHOLD


def implied_reach(mask_lr: float, scale: float, steps: int) -> float:
    """The reach of a given ``mask_lr`` (the inverse of :func:`auto_mask_lr`)."""
    return mask_lr * math.sqrt(SCHEDULE_MEAN * steps) / scale


TIE_BREAK = 1e-3
"""Hard init: the largest tie-break added to a score, as a fraction of the kept score."""

REACH_RANGE = {"hard": (0.3, 1.5), "soft": (0.05, 1.0)}
"""By init, the reaches below/above which a run warns that its mask will barely move / may be
scrambled (measured in docs/studies/winwin_calibration_cpu.md)."""


class MaskTrainingParams(LearnedMaskParams):
    """Settings of method mask_train."""

    mask_lr: Annotated[float, Field(gt=0.0)] | Literal["auto"] = Field(  # type: ignore[assignment]
        "auto",
        description="Learning rate of the scores, or 'auto' (the default): set from the schedule so "
        "that a score's random-walk reach is mask_reach times the initial threshold (lr = mask_reach "
        "* threshold / sqrt(steps / 2)); recorded in metrics.json's mask_budget.  Win-win: 5e-5 "
        "over ~61k steps (reach 0.87; auto gives 3.7e-5 there).",
    )
    auto_lr: ClassVar[bool] = True

    mask_reach: float | None = Field(
        None, gt=0.0,
        description="With mask_lr: auto, the reach in units of the initial threshold (null = the "
        "calibrated default of the init: hard 0.65, soft 0.16; recorded resolved).",
    )

    @model_validator(mode="after")
    def _resolve_default_reach(self) -> MaskTrainingParams:
        """``mask_lr: auto`` without a reach takes its init's calibrated default, written into the
        config (so a recorded run names the reach it used, and its fingerprint depends on it)."""
        if self.mask_lr == "auto" and self.mask_reach is None:
            if self.init not in DEFAULT_REACH:
                raise ValueError(f"mask_lr: auto is calibrated for init {' and '.join(DEFAULT_REACH)}, "
                                 f"not '{self.init}'; give mask_reach or a number")
            self.mask_reach = DEFAULT_REACH[self.init]
        return self

    init: Literal["hard", "soft", "random", "importance"] = Field(
        "hard",
        description="Score init: 'hard' alpha*phi on the top magnitudes, 'soft' |W|, 'random' "
        "seeded uniform, 'importance' (heads/neurons only) each head's and neuron's gradient "
        "importance E|dL/dxi| under the run's own loss, normalised per layer (omp's importance: "
        "gradient; the search starts from that mask).  mask_lr: auto has no calibrated reach "
        "for 'importance' or 'random': give mask_reach.",
    )
    importance_batches: int = Field(
        32, ge=1, description="init 'importance': training batches averaged for the start scores."
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
        """``hard``: alpha*phi on the top magnitudes at the final target, 0 elsewhere, plus a
        tie-break of at most ``TIE_BREAK * alpha * phi`` in the order of |W| (so a gradual schedule's
        earlier, lower targets keep the next-largest weights, not the first in index order);
        ``soft``: |W|; ``random``: seeded U(0, 1)."""
        params = self.params
        if params.init == "soft":
            return magnitudes(self.targets)
        if params.init == "random":
            weights = [original_weight(t.module) for t in self.targets]
            return uniform_scores([t.shape for t in self.targets], self.seed, [w.device for w in weights])
        weights = magnitudes(self.targets)
        ranked = rank(weights, self.cfg.sparsity, self.cfg.scope)
        kept = params.alpha * params.phi
        return [keep * kept + (TIE_BREAK * kept) * w / w.max().clamp_min(1e-12)
                for (keep, _), w in zip(ranked, weights, strict=True)]

    @classmethod
    def check_config(cls, cfg) -> None:
        if cfg.params.init == "importance" and cfg.granularity == "unstructured":
            raise ValueError("init 'importance' scores heads and neurons: it needs granularity head, "
                             "neuron or head+neuron, not 'unstructured'")
        if cfg.params.mask_reach is not None and cfg.params.mask_lr != "auto":
            raise ValueError("pruning.params.mask_reach applies only with mask_lr: auto (give one of "
                             "mask_lr: <number> or mask_lr: auto + mask_reach)")

    @property
    def calibrates(self) -> bool:
        return self.params.init == "importance"

    def setup(self, model: nn.Module) -> None:
        super().setup(model)
        if not self.calibrates:
            self._resolve_budget()

    def calibrate_masks(self, model: nn.Module, data: Calibration) -> None:
        """``init: importance``: the start scores are the per-layer normalised gradient importances
        of the heads and neurons under the run's loss (all groups kept while measuring)."""
        scores = gradient_importance(model, self.targets, data, self.params.importance_batches, self.seed)
        for mask, score in zip(self._masks, normalize_per_layer(scores), strict=True):
            mask.scores.data.copy_(score.to(mask.scores.dtype))
        self.start()
        self._resolve_budget()

    def _resolve_budget(self) -> None:
        """The score scale (the mean initial threshold at the target) and the resolved mask lr."""
        initial = rank([m.scores.detach() for m in self._masks], self.cfg.sparsity, self.cfg.scope)
        self._scale = sum(threshold for _, threshold in initial) / len(initial)
        params = self.params
        auto = params.mask_lr == "auto"
        reach = float(params.mask_reach or 0.0)
        self._lr = auto_mask_lr(reach, self._scale, self.total_steps) if auto else float(params.mask_lr)
        self._capped = auto and auto_lr_capped(reach, self._scale, self.total_steps)
        self._check_reach()

    @property
    def mask_lr(self) -> float:
        """The scores' learning rate, resolved from the schedule for ``mask_lr: auto``."""
        return self._lr

    def mask_budget(self) -> dict[str, Any]:
        given = self.params.mask_lr != "auto"
        return {"mask_lr": self._lr, "rule": "given" if given else "auto", "capped": self._capped,
                "reach": implied_reach(self._lr, self._scale, self.total_steps),
                "steps_per_threshold": self._scale / self._lr,
                "score_scale": self._scale, "steps": self.total_steps, "init": self.params.init}

    @property
    def start_name(self) -> str:
        return START_NAMES[self.params.init]

    def _check_reach(self) -> None:
        """Say, before any step is spent, when ``mask_lr: auto`` is capped on this schedule, and
        warn when the lr's reach (:func:`implied_reach`) or its steps per threshold are outside the
        range where the calibration saw masks move without losing the model (its lower bound scaled
        down to what the cap allows where the cap binds)."""
        init, steps = self.params.init, self.total_steps
        reach = implied_reach(self._lr, self._scale, steps)
        if self._capped:
            log.info("pruning.params.mask_lr: auto is capped at %.1e on this %d-step schedule (a score "
                     "travels the initial threshold %.3g in no fewer than %d steps; reach %.2f)",
                     self._lr, steps, self._scale, MIN_STEPS_PER_THRESHOLD, reach)
            return
        if init not in REACH_RANGE:
            return
        low, high = REACH_RANGE[init]
        auto = auto_mask_lr(DEFAULT_REACH[init], self._scale, steps)
        # on a schedule where the cap binds, no safe lr reaches the calibrated range: the lower
        # bound shrinks with what the cap allows (the demo's 3e-4 on 126 steps moves its masks)
        low *= min(1.0, implied_reach(auto, self._scale, steps) / DEFAULT_REACH[init])
        if reach < low:
            log.warning(
                "pruning.params.mask_lr %g over %d steps reaches %.2f of the initial threshold %.3g: "
                "the mask will barely leave %s (mask_lr: auto gives %.1e)", self._lr, steps,
                reach, self._scale, self.start_name, auto)
        elif reach > high or self._scale / self._lr < MIN_STEPS_PER_THRESHOLD:
            log.warning(
                "pruning.params.mask_lr %g over %d steps reaches %.1f times the initial threshold %.3g "
                "(one threshold in %.0f steps): gradient noise may scramble the mask and lose the model "
                "(mask_lr: auto gives %.1e)", self._lr, steps, reach, self._scale,
                self._scale / self._lr, auto)

    def make_masks(self) -> list[FixedMask]:
        weights = [original_weight(t.module) for t in self.targets]
        if self.calibrates:  # every group kept until calibrate_masks scores them
            return [ScoreMask(w.new_ones(t.shape), keep=w.new_ones(t.shape), threshold=float("-inf"))
                    for t, w in zip(self.targets, weights, strict=True)]
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
