"""``rmc``: robust model compression (Du et al., 2023): distillation from a teacher smoothed by
sample difficulty."""

from __future__ import annotations

from collections.abc import Mapping

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor

from srnet.loss_inputs import DIFFICULTY, TEACHER
from srnet.losses.base import Loss, register_loss, scale


class RMCParams(BaseModel):
    """Parameters of the RMC loss."""

    model_config = ConfigDict(extra="forbid")

    distill_weight: float = Field(
        0.5, ge=0, le=1, description="λ: weight of the distillation term; 1 - λ weights the CE."
    )
    temperature: float = Field(
        1.0, gt=0, description="T: softens teacher and student; the KL term is scaled by T**2."
    )


@register_loss("rmc")
class RobustModelCompression(Loss):
    """RMC (Du et al., 2023): ``(1 - λ) CE + λ T² KL(q ‖ softmax(z / T))``.

    ``q`` is the teacher smoothed by the sample difficulty d: ``p_t ** (d / T)`` renormalised,
    so easy (low-variance, shortcut-prone) examples get a flatter teacher.
    """

    params_model = RMCParams
    requires = frozenset({TEACHER, DIFFICULTY})

    def compute(
        self, logits: Tensor, labels: Tensor, extras: Mapping[str, Tensor], progress: float
    ) -> Tensor:
        params: RMCParams = self.params  # type: ignore[assignment]
        t = params.temperature
        exponent = extras[DIFFICULTY].to(logits.dtype) / t
        targets = scale(extras[TEACHER].to(logits.dtype), exponent).detach()
        log_student = F.log_softmax(logits / t, dim=1)
        kl = (torch.xlogy(targets, targets) - targets * log_student).sum(dim=1).mean()
        ce = F.cross_entropy(logits, labels)
        return (1 - params.distill_weight) * ce + params.distill_weight * t * t * kl
