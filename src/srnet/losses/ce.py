"""``ce``: standard cross-entropy."""

from __future__ import annotations

from collections.abc import Mapping

import torch.nn.functional as F
from torch import Tensor

from srnet.losses.base import Loss, register_loss


@register_loss("ce")
class CrossEntropy(Loss):
    """Standard cross-entropy (batch mean)."""

    def compute(
        self, logits: Tensor, labels: Tensor, extras: Mapping[str, Tensor], progress: float
    ) -> Tensor:
        return F.cross_entropy(logits, labels)
