"""The objective interface, its registry and the one training step.

An objective turns a batch into gradients: given the model, the batch (token tensors, labels and
the loss extras the collator carries) and a loss from :mod:`srnet.losses`, it computes the loss,
runs ``backward`` and returns what to log.  Objectives see the whole model and batch, so ones
that need more than class logits (an MLM head, a teacher's hidden states) fit the same interface.

:func:`train_step` is the training step used by the trainer, the tests and the step benchmark:
objective (forward + backward), optional clipping, optimizer step.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import torch
from pydantic import BaseModel, ConfigDict
from torch import Tensor, nn

from srnet.losses import Loss
from srnet.registry import Registry

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

    @property
    def requires(self) -> tuple[str, ...]:
        """Per-example extras the objective reads from the batch (e.g. ``teacher_probs``), on top
        of what the loss requires.  Default: none."""
        return ()

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


def build_objective(name: str, params: Mapping[str, Any] | BaseModel | None = None) -> Objective:
    """The objective ``name`` with validated ``params`` (an instance of its params model, e.g. a
    recipe's, as it is); SrnetError for an unknown name or value."""
    return OBJECTIVES.get(name)(OBJECTIVES.params(name, params))


def with_penalty(value: Tensor, penalty: Penalty) -> Tensor:
    """``value`` plus the pruning method's penalty, when it has one."""
    extra = penalty()
    return value if extra is None else value + extra


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
