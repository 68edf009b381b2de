"""``conf_reg``: confidence regularisation (Utama et al., 2020)."""

from __future__ import annotations

from collections.abc import Mapping

from torch import Tensor

from srnet.loss_inputs import BIAS, TEACHER
from srnet.losses.base import AnnealParams, Loss, anneal, gold, register_loss, scale, soft_cross_entropy


@register_loss("conf_reg")
class ConfidenceRegularization(Loss):
    """Confidence regularisation (Utama et al., 2020): distil from ``p_t ** (1 - b)`` renormalised."""

    params_model = AnnealParams
    requires = frozenset({BIAS, TEACHER})

    def compute(
        self, logits: Tensor, labels: Tensor, extras: Mapping[str, Tensor], progress: float
    ) -> Tensor:
        log_bias = anneal(extras[BIAS].to(logits.dtype), self.params, progress)
        bias_gold = gold(log_bias, labels).exp()
        targets = scale(extras[TEACHER].to(logits.dtype), 1.0 - bias_gold)
        return soft_cross_entropy(logits, targets.detach())
