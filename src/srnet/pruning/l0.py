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

from torch import Tensor

from srnet.pruning.base import LearnedMaskMethod, register_method
from srnet.sparsity import FixedMask, HardConcreteMask, original_weight, rank


@register_method("l0")
class L0Gates(LearnedMaskMethod):
    """Hard-concrete gates on frozen weights or heads/neurons (``cfg.l0.train_weights`` trains
    the weights too)."""

    _masks: list[HardConcreteMask]

    @property
    def trains_weights(self) -> bool:
        return self.cfg.l0.train_weights

    def make_masks(self) -> list[FixedMask]:
        l0 = self.cfg.l0
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
        """The penalty weight at ``step`` (see :meth:`L0Config.lambda_at`)."""
        return self.cfg.l0.lambda_at(step, self.total_steps)

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
