"""``reweight``: example reweighting by the bias model's confidence in the gold label."""

from __future__ import annotations

from collections.abc import Mapping

import torch.nn.functional as F
from torch import Tensor

from srnet.loss_inputs import BIAS
from srnet.losses.base import TINY, Loss, gold, register_loss


@register_loss("reweight")
class Reweight(Loss):
    """Example reweighting: ``sum_i (1 - b_i) CE_i / sum_i (1 - b_i)``, ``b_i = p_b(gold)``."""

    requires = frozenset({BIAS})

    def compute(
        self, logits: Tensor, labels: Tensor, extras: Mapping[str, Tensor], progress: float
    ) -> Tensor:
        weights = 1.0 - gold(extras[BIAS].to(logits.dtype), labels).exp()
        per_example = F.cross_entropy(logits, labels, reduction="none")
        return (weights * per_example).sum() / weights.sum().clamp_min(TINY)
