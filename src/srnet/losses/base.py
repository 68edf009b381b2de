"""The loss interface, its registry and the helpers the built-in losses share."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor

from srnet.errors import SrnetError
from srnet.loss_inputs import check_batch
from srnet.registry import Registry

TINY = 1e-12


class NoParams(BaseModel):
    """A loss without parameters."""

    model_config = ConfigDict(extra="forbid")


class AnnealParams(BaseModel):
    """Annealing of the bias strength (Utama et al., 2020b)."""

    model_config = ConfigDict(extra="forbid")

    anneal: bool = Field(
        False,
        description="Flatten the bias distribution over training: p_b ** a_t renormalised, "
        "a_t going linearly from 1 to anneal_min.",
    )
    anneal_min: float = Field(0.8, ge=0, le=1, description="The exponent a_t at the end of training.")


class Loss(ABC):
    """A registered training loss; call it as ``loss(logits, labels, extras, progress)``."""

    name: ClassVar[str]
    params_model: ClassVar[type[BaseModel]] = NoParams
    requires: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, params: BaseModel | None = None) -> None:
        self.params = params if params is not None else self.params_model()

    def __call__(
        self,
        logits: Tensor,
        labels: Tensor,
        extras: Mapping[str, Tensor] | None = None,
        progress: float = 0.0,
    ) -> Tensor:
        extras = extras or {}
        self._validate(logits, extras, progress)
        # Losses are computed in float32 even when the model runs in half precision.
        return self.compute(logits.float(), labels, extras, progress)

    @abstractmethod
    def compute(
        self, logits: Tensor, labels: Tensor, extras: Mapping[str, Tensor], progress: float
    ) -> Tensor:
        """The scalar loss; inputs are already validated."""

    def _validate(self, logits: Tensor, extras: Mapping[str, Tensor], progress: float) -> None:
        if logits.dim() != 2:
            raise SrnetError(f"loss '{self.name}': logits have shape {list(logits.shape)}; expected [B, C]")
        if not 0 <= progress <= 1:
            raise SrnetError(f"loss '{self.name}': progress {progress}; expected a number in [0, 1]")
        check_batch(f"loss '{self.name}'", self.requires, logits.shape, extras)


LOSSES: Registry[type[Loss]] = Registry("loss")
register_loss = LOSSES.register
"""Class decorator that registers a loss under a unique name."""


def build_loss(name: str, params: Mapping[str, Any] | BaseModel | None = None) -> Loss:
    """The loss ``name`` with validated ``params`` (an instance of its params model, e.g. a recipe's, as
    it is); SrnetError for an unknown name or parameter."""
    return LOSSES.get(name)(LOSSES.params(name, params))


def anneal(bias_log_probs: Tensor, params: AnnealParams, progress: float) -> Tensor:
    """``p_b ** a_t`` renormalised, ``a_t = 1 - progress * (1 - anneal_min)``; unchanged if off."""
    if not params.anneal:
        return bias_log_probs
    exponent = 1.0 - progress * (1.0 - params.anneal_min)
    return torch.log_softmax(exponent * bias_log_probs, dim=1)


def gold(values: Tensor, labels: Tensor) -> Tensor:
    """Each row's value at its gold label ([B, C] -> [B])."""
    return values.gather(1, labels.unsqueeze(1)).squeeze(1)


def scale(probs: Tensor, exponent: Tensor) -> Tensor:
    """Rows ``probs ** exponent`` renormalised (``exponent`` [B])."""
    return torch.softmax(exponent.unsqueeze(1) * probs.clamp_min(TINY).log(), dim=1)


def soft_cross_entropy(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean over the batch of ``-sum_c targets_c * log_softmax(logits)_c``."""
    return -(targets * F.log_softmax(logits, dim=1)).sum(dim=1).mean()
