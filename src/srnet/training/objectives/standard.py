"""The ``standard`` objective: the task loss on the model's logits."""

from __future__ import annotations

from accelerate.utils import extract_model_from_parallel

from srnet.loss_inputs import batch_inputs
from srnet.training.data import model_inputs
from srnet.training.objectives.base import Objective, register_objective, with_penalty


@register_objective("standard")
class Standard(Objective):
    """Forward, ``loss(logits, labels, extras, progress)`` (+ the method's penalty), backward.

    ``model`` may be wrapped (DDP); its forward runs through the wrapper, so gradients sync."""

    def step(self, model, batch, loss, *, progress, penalty, backward) -> dict[str, float]:
        logits = model(**model_inputs(extract_model_from_parallel(model), batch)).logits
        value = with_penalty(loss(logits.float(), batch["labels"], batch_inputs(batch), progress), penalty)
        backward(value)
        return {"loss": value.item()}
