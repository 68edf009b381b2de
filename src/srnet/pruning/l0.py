"""L0 regularisation with hard-concrete gates (Louizos et al. 2018; Robust Tickets).

Training draws stochastic gates and adds ``lambda_t`` times the expected fraction of non-zero
gates to the loss; ``freeze()`` applies the exact top-k of ``log_alpha`` at the target, which
the model uses in eval mode.

With a structured ``granularity`` a gate is a whole head or FFN neuron: one ``log_alpha`` per
group, one draw per forward pass broadcast onto every row/column of the group (as
:class:`GroupMask` does for fixed and score gates).  The ranking, the penalty and the keep
probabilities then count groups, as structured sparsity does (the fraction of heads/neurons
removed), not the weights they hold.
"""

from __future__ import annotations

from pydantic import Field, model_validator
from torch import Tensor

from srnet.pruning.base import LearnedMaskMethod, LearnedMaskParams
from srnet.pruning.registry import register_method
from srnet.sparsity import FixedMask, HardConcreteMask, original_weight, rank


class L0Params(LearnedMaskParams):
    """Settings of method l0: hard-concrete L0 gates (Louizos et al. 2018; Robust Tickets), per
    weight or per head/neuron."""

    lambda_: float = Field(
        1.0, ge=0.0,
        description="Weight of the normalised L0 penalty: the expected fraction of non-zero gates "
        "(weights, or heads/neurons for a structured granularity).",
    )
    lambda_start: float = Field(
        0.0, ge=0.0, le=1.0,
        description="Fraction of steps with lambda = 0 before the ramp (Robust Tickets' code: 0.1).",
    )
    lambda_warmup: float = Field(
        0.0, ge=0.0, le=1.0,
        description="Fraction of steps over which lambda then ramps linearly from 0 (Robust Tickets: 0.3).",
    )
    temperature: float = Field(2 / 3, gt=0.0, description="Concrete temperature beta.")
    gamma: float = Field(-0.1, lt=0.0, description="Lower stretch limit (< 0).")
    zeta: float = Field(1.1, gt=1.0, description="Upper stretch limit (> 1).")
    init_keep: float = Field(
        0.9, gt=0.0, lt=1.0, description="Initial keep probability: log_alpha = logit(init_keep)."
    )
    train_weights: bool = Field(False, description="Also train the masked weights.")

    @model_validator(mode="after")
    def _check_lambda_schedule(self) -> L0Params:
        if self.lambda_start + self.lambda_warmup > 1.0:
            raise ValueError(
                f"lambda_start {self.lambda_start} + lambda_warmup {self.lambda_warmup} exceeds 1"
            )
        return self

    def lambda_at(self, step: int, total_steps: int) -> float:
        """The penalty weight at ``step``: 0 for the first ``lambda_start`` of the steps, then a
        linear ramp to ``lambda_`` over the next ``lambda_warmup`` (no ramp when it is 0)."""
        start, ramp = self.lambda_start * total_steps, self.lambda_warmup * total_steps
        if step < start:
            return 0.0
        return self.lambda_ * (min(1.0, (step - start) / ramp) if ramp > 0 else 1.0)


@register_method("l0")
class L0Gates(LearnedMaskMethod):
    """Hard-concrete gates on frozen weights or heads/neurons (``params.train_weights`` trains
    the weights too)."""

    params_model = L0Params
    params: L0Params
    _masks: list[HardConcreteMask]

    @property
    def trains_weights(self) -> bool:
        return self.params.train_weights

    def make_masks(self) -> list[FixedMask]:
        l0 = self.params
        weights = [original_weight(t.module) for t in self.targets]
        return [
            HardConcreteMask(w.new_ones(t.shape), w, l0.init_keep, l0.temperature, l0.gamma, l0.zeta)
            for t, w in zip(self.targets, weights, strict=True)
        ]

    def rerank(self, sparsity: float) -> None:
        scores = [m.log_alpha for m in self._masks]
        for mask, (keep, _) in zip(self._masks, rank(scores, sparsity, self.cfg.scope), strict=True):
            mask.set_mask(keep)

    def lambda_at(self, step: int) -> float:
        """The penalty weight at ``step`` (see :meth:`L0Params.lambda_at`)."""
        return self.params.lambda_at(step, self.total_steps)

    def scores(self) -> dict[str, Tensor]:
        """Each gate's keep probability P(gate != 0), keyed by module (or group) name."""
        return {t.name: m.keep_probability().detach() for t, m in zip(self.targets, self._masks, strict=True)}

    def expected_density(self) -> Tensor:
        """The expected fraction of non-zero gates, weights or heads/neurons (differentiable in
        ``log_alpha``)."""
        kept = sum(m.keep_probability().sum() for m in self._masks)
        return kept / sum(m.mask.numel() for m in self._masks)

    def penalty(self) -> Tensor:
        return self.lambda_at(self.step) * self.expected_density()
