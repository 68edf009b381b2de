"""``poe``: product of experts with the bias model (Clark et al., 2019; He et al., 2019)."""

from __future__ import annotations

from collections.abc import Mapping

import torch.nn.functional as F
from torch import Tensor

from srnet.loss_inputs import BIAS
from srnet.losses.base import AnnealParams, Loss, anneal, register_loss


@register_loss("poe")
class ProductOfExperts(Loss):
    """Product of experts: ``CE(log_softmax(z) + log p_b)``; only the main model is trained."""

    params_model = AnnealParams
    requires = frozenset({BIAS})

    def compute(
        self, logits: Tensor, labels: Tensor, extras: Mapping[str, Tensor], progress: float
    ) -> Tensor:
        log_bias = anneal(extras[BIAS].to(logits.dtype), self.params, progress)
        return F.cross_entropy(F.log_softmax(logits, dim=1) + log_bias, labels)
