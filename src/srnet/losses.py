"""Training losses behind one registry: ``ce``, ``poe``, ``reweight``, ``conf_reg``, ``rmc``.

A loss maps ``(logits [B, C], labels [B], extras, progress) -> scalar``.  ``extras`` holds the
per-example batch tensors a loss declares in ``requires``: registered loss inputs
(:mod:`srnet.loss_inputs`: ``bias_log_probs`` [B, C], ``teacher_probs`` [B, C], ``difficulty``
[B]), each checked on every call by its input's check; a bad one is a one-line ``SrnetError``.

``progress`` is the fraction of training done, in [0, 1] (used by annealing).

Adding a loss is one class and its ``@register_loss("name")`` line::

    @register_loss("mine")
    class Mine(Loss):
        params_model = MineParams          # pydantic model of its parameters
        requires = frozenset({BIAS})       # extras it needs
        def compute(self, logits, labels, extras, progress): ...
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor

from srnet.errors import SrnetError
from srnet.loss_inputs import BIAS, DIFFICULTY, TEACHER, check_batch
from srnet.registry import Registry

_TINY = 1e-12


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


def _gold(values: Tensor, labels: Tensor) -> Tensor:
    return values.gather(1, labels.unsqueeze(1)).squeeze(1)


def _scale(probs: Tensor, exponent: Tensor) -> Tensor:
    """Rows ``probs ** exponent`` renormalised (``exponent`` [B])."""
    return torch.softmax(exponent.unsqueeze(1) * probs.clamp_min(_TINY).log(), dim=1)


def soft_cross_entropy(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean over the batch of ``-sum_c targets_c * log_softmax(logits)_c``."""
    return -(targets * F.log_softmax(logits, dim=1)).sum(dim=1).mean()


@register_loss("ce")
class CrossEntropy(Loss):
    """Standard cross-entropy (batch mean)."""

    def compute(
        self, logits: Tensor, labels: Tensor, extras: Mapping[str, Tensor], progress: float
    ) -> Tensor:
        return F.cross_entropy(logits, labels)


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


@register_loss("reweight")
class Reweight(Loss):
    """Example reweighting: ``sum_i (1 - b_i) CE_i / sum_i (1 - b_i)``, ``b_i = p_b(gold)``."""

    requires = frozenset({BIAS})

    def compute(
        self, logits: Tensor, labels: Tensor, extras: Mapping[str, Tensor], progress: float
    ) -> Tensor:
        weights = 1.0 - _gold(extras[BIAS].to(logits.dtype), labels).exp()
        per_example = F.cross_entropy(logits, labels, reduction="none")
        return (weights * per_example).sum() / weights.sum().clamp_min(_TINY)


@register_loss("conf_reg")
class ConfidenceRegularization(Loss):
    """Confidence regularisation (Utama et al., 2020): distil from ``p_t ** (1 - b)`` renormalised."""

    params_model = AnnealParams
    requires = frozenset({BIAS, TEACHER})

    def compute(
        self, logits: Tensor, labels: Tensor, extras: Mapping[str, Tensor], progress: float
    ) -> Tensor:
        log_bias = anneal(extras[BIAS].to(logits.dtype), self.params, progress)
        bias_gold = _gold(log_bias, labels).exp()
        targets = _scale(extras[TEACHER].to(logits.dtype), 1.0 - bias_gold)
        return soft_cross_entropy(logits, targets.detach())


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
        targets = _scale(extras[TEACHER].to(logits.dtype), exponent).detach()
        log_student = F.log_softmax(logits / t, dim=1)
        kl = (torch.xlogy(targets, targets) - targets * log_student).sum(dim=1).mean()
        ce = F.cross_entropy(logits, labels)
        return (1 - params.distill_weight) * ce + params.distill_weight * t * t * kl
