"""Training objectives behind one registry (``standard``, ``freelb``; ``mlm``, ``distill`` and
``mlm+distill`` in :mod:`srnet.training.pretraining`), and the one training step.

An objective turns a batch into gradients: given the model, the batch (token tensors, labels and
the loss extras the collator carries) and a loss from :mod:`srnet.losses`, it computes the loss,
runs ``backward`` and returns what to log.  Objectives see the whole model and batch, so ones
that need more than class logits (an MLM head, a teacher's hidden states) fit the same interface.

:func:`train_step` is the training step used by the trainer, the tests and the step benchmark:
objective (forward + backward), optional clipping, optimizer step.

Adding an objective is one class and its registry line::

    @register_objective("mine")
    class Mine(Objective):
        params_model = MineParams          # pydantic model of its parameters (with descriptions)
        def step(self, model, batch, loss, *, progress, penalty, backward): ...
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import torch
from accelerate.utils import extract_model_from_parallel
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn

from srnet.losses import EXTRA_KEYS, Loss
from srnet.registry import Registry
from srnet.training.data import model_inputs

Backward = Callable[[Tensor], None]
"""``loss -> None``: ``Tensor.backward`` or ``accelerator.backward`` (mixed-precision scaling)."""
Penalty = Callable[[], Tensor | None]
"""The pruning method's regulariser (``method.penalty``); added once per step."""


class NoParams(BaseModel):
    """An objective without parameters."""

    model_config = ConfigDict(extra="forbid")


class Objective(ABC):
    """A registered training objective; ``step`` computes the loss and runs ``backward``."""

    name: ClassVar[str] = ""
    params_model: ClassVar[type[BaseModel]] = NoParams

    def __init__(self, params: BaseModel | None = None) -> None:
        self.params = params if params is not None else self.params_model()

    def setup(self, model: nn.Module, tokenizer) -> None:
        """Called once by the trainer after the pruning method is prepared and before the optimizer
        is built: check what the objective needs (e.g. a mask token) and make the parameters it
        trains itself trainable (e.g. a fresh MLM head).  Default: nothing."""
        return None

    @abstractmethod
    def step(
        self,
        model: nn.Module,
        batch: Mapping[str, Tensor],
        loss: Loss,
        *,
        progress: float,
        penalty: Penalty,
        backward: Backward,
    ) -> dict[str, float]:
        """Accumulate this batch's gradients into ``model``; return the values to log (``loss``)."""


OBJECTIVES: Registry[type[Objective]] = Registry("objective")
register_objective = OBJECTIVES.register
"""Class decorator that registers an objective under a unique name."""
available_objectives = OBJECTIVES.names


def build_objective(name: str, params: Mapping[str, Any] | None = None) -> Objective:
    """The objective ``name`` with validated ``params``; SrnetError for an unknown name or value."""
    return OBJECTIVES.get(name)(OBJECTIVES.params(name, params))


def loss_extras(batch: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """The per-example loss extras (bias log-probs, teacher probs, difficulty) in ``batch``."""
    return {k: batch[k] for k in EXTRA_KEYS if k in batch}


def with_penalty(value: Tensor, penalty: Penalty) -> Tensor:
    """``value`` plus the pruning method's penalty, when it has one."""
    extra = penalty()
    return value if extra is None else value + extra


@register_objective("standard")
class Standard(Objective):
    """Forward, ``loss(logits, labels, extras, progress)`` (+ the method's penalty), backward.

    ``model`` may be wrapped (DDP); its forward runs through the wrapper, so gradients sync."""

    def step(self, model, batch, loss, *, progress, penalty, backward) -> dict[str, float]:
        logits = model(**model_inputs(extract_model_from_parallel(model), batch)).logits
        value = with_penalty(loss(logits.float(), batch["labels"], loss_extras(batch), progress), penalty)
        backward(value)
        return {"loss": value.item()}


def train_step(
    model: nn.Module,
    batch: Mapping[str, Tensor],
    objective: Objective,
    loss: Loss,
    optimizer: torch.optim.Optimizer,
    *,
    progress: float = 0.0,
    penalty: Penalty = lambda: None,
    backward: Backward = Tensor.backward,
    clip: Callable[[], None] | None = None,
) -> dict[str, float]:
    """One training (micro-)step: the objective's forward/backward, ``clip``, optimizer step,
    zeroed gradients.  Returns what the objective logged.

    Under ``accelerator.accumulate`` the prepared optimizer skips its step on micro-batches that
    do not end an accumulation window.  The learning-rate scheduler and the pruning method's
    ``on_step`` belong to the caller (they run once per optimizer step, not per micro-batch).
    """
    logs = objective.step(model, batch, loss, progress=progress, penalty=penalty, backward=backward)
    if clip is not None:
        clip()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return logs


def loss_backward(
    objective: Objective, loss: Loss | None
) -> Callable[[nn.Module, Mapping[str, Tensor]], None]:
    """``(model, batch) -> None``: the objective's forward, loss and ``backward`` on one batch, with
    no penalty and no optimizer step (what a pruning method's ``calibrate`` differentiates)."""

    def run(model: nn.Module, batch: Mapping[str, Tensor]) -> None:
        objective.step(model, batch, loss, progress=0.0, penalty=lambda: None, backward=Tensor.backward)

    return run


class FreeLBParams(BaseModel):
    """FreeLB (Zhu et al., 2020) as Robust Tickets runs it: L2 ascent on the input embeddings."""

    model_config = ConfigDict(extra="forbid")

    steps: int = Field(3, ge=1, description="K: ascent steps per batch (paper: 2-5); gradients of "
                       "the K forward passes accumulate, each loss divided by K.")
    init_magnitude: float = Field(0.05, ge=0, description="epsilon_0: L2 magnitude of the random "
                                  "start per example, scaled by 1/sqrt(tokens x hidden); 0 = start at zero.")
    step_size: float = Field(0.03, ge=0, description="eta: size of each L2-normalised ascent step "
                             "(paper: 0.03, 0.2 for MNLI).")
    max_norm: float = Field(0.0, ge=0, description="bound on the per-example L2 norm of delta "
                            "(0 = unbounded, as in the paper's code).")


def _per_example_norm(x: Tensor) -> Tensor:
    """L2 norm of each example's [T, H] slice, shaped [B, 1, 1]."""
    return x.float().flatten(1).norm(dim=1).view(-1, 1, 1)


@register_objective("freelb")
class FreeLB(Objective):
    """Adversarial training on the word-embedding output: ``K`` ascent steps on a perturbation
    ``delta`` whose parameter gradients accumulate over the ``K`` forward passes (loss / K each).

    ``delta`` is zero at padding positions (init and every ascent step); token type ids and the
    attention mask are passed unchanged, so only the word embeddings are perturbed.  Works with
    any loss (its extras are used at every ascent step) and any pruning method; the method's
    penalty is added once per batch.
    """

    params_model = FreeLBParams

    def step(self, model, batch, loss, *, progress, penalty, backward) -> dict[str, float]:
        p: FreeLBParams = self.params  # type: ignore[assignment]
        base = extract_model_from_parallel(model)
        embed = base.get_input_embeddings()
        inputs = model_inputs(base, batch)
        input_ids = inputs.pop("input_ids")
        keep = batch["attention_mask"].unsqueeze(-1).to(torch.float32)  # [B, T, 1], 0 at padding
        extras, labels = loss_extras(batch), batch["labels"]
        embeds = embed(input_ids)
        delta = torch.zeros_like(embeds)
        if p.init_magnitude > 0:
            dims = keep.sum(dim=(1, 2)) * embeds.size(-1)
            scale = (p.init_magnitude / dims.sqrt()).view(-1, 1, 1)
            delta = (torch.empty_like(embeds).uniform_(-1, 1) * keep * scale).to(embeds.dtype)
        total = 0.0
        for k in range(p.steps):
            delta.requires_grad_(True)
            logits = model(inputs_embeds=embeds + delta, **inputs).logits
            value = loss(logits.float(), labels, extras, progress) / p.steps
            if k == 0:
                value = with_penalty(value, penalty)
            backward(value)
            total += value.item()
            if k == p.steps - 1:
                break
            grad = delta.grad.detach() * keep
            delta = (delta.detach() + p.step_size * grad / _per_example_norm(grad).clamp_min(1e-8)).to(
                embeds.dtype
            )
            if p.max_norm > 0:
                norm = _per_example_norm(delta)
                delta = (delta * torch.where(norm > p.max_norm, p.max_norm / norm, 1.0)).to(embeds.dtype)
            embeds = embed(input_ids)  # the backward freed the lookup's graph
        return {"loss": total}


from srnet.training import pretraining  # noqa: E402, F401  (registers mlm, distill, mlm+distill)
