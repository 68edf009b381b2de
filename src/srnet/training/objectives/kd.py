"""The ``kd`` objective: the task loss plus distillation from a dense teacher (CoFi-style).

``loss = task_weight · task loss + pred_weight · T² · KL(teacher_T ‖ student_T)
+ hidden_weight · d(h_student, h_teacher)`` (+ the pruning method's penalty).

* **Prediction layer:** the teacher's probabilities on the training set come from ``loss.teacher``
  (a run directory's ``predictions/train.jsonl`` or a predictions file, e.g. a sweep's ``predict``
  stage: the cached-teacher path ``conf_reg`` uses); at temperature T its distribution is
  ``softmax(log p / T)``, the same as ``softmax(logits / T)``.
* **Hidden states:** layer i of the student is matched to layer i of the teacher (a fixed mapping:
  head/neuron pruning keeps every layer, an emptied one passes its input through), with the
  distance of TAMT's ``distill``. The teacher is the run's own starting model with its masks
  lifted: while the weights stay frozen (``mask_train``, ``l0``) that is the model itself
  (:func:`~srnet.training.objectives.pretraining.teacher_hidden_states`, nothing copied); when
  they train (``omp``, ``magnitude``, …; e.g. ``srnet compress``'s recovery, which starts from the
  dense PoE teacher) a frozen copy of the starting weights is taken when the objective is set up,
  before any step or resumed checkpoint, and costs one dense forward pass per step.

A debiasing loss as the task loss (``poe``, ``rmc``) is allowed: the student then follows the
teacher it is given, so a debiased student should distil from a debiased teacher (the dense PoE
run's predictions), not from the biased CE model.

* **Through the bias** (``through_bias``): teacher and student are each combined with the bias
  model's log-probabilities before the KL, ``KL(softmax((log p_t + log p_b)/T) ‖
  softmax((log_softmax(z) + log p_b)/T))``, as PoE combines the task loss: where the bias already
  explains the teacher's answer both sides agree whatever the student says, so those examples pull
  the student little (plain KL pulls it toward the teacher's answer on every example, shortcut
  ones included). Needs the bias input (``loss.bias_predictions`` or a bias feature).
"""

from __future__ import annotations

from copy import deepcopy
from typing import Literal

import torch
import torch.nn.functional as F
from accelerate.utils import extract_model_from_parallel
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn
from torch.nn.utils import parametrize

from srnet.loss_inputs import BIAS, TEACHER, batch_inputs
from srnet.training.data import model_inputs
from srnet.training.objectives.base import Objective, register_objective, with_penalty
from srnet.training.objectives.pretraining import check_layers, hidden_distance, teacher_hidden_states


class KDParams(BaseModel):
    """Weights of the task loss and of the two distillation terms."""

    model_config = ConfigDict(extra="forbid")

    task_weight: float = Field(1.0, ge=0.0, description="weight of the recipe's task loss")
    pred_weight: float = Field(
        1.0, ge=0.0, description="weight of T² · KL(teacher ‖ student) at temperature T (needs loss.teacher)"
    )
    temperature: float = Field(2.0, gt=0.0, description="distillation temperature T")
    through_bias: bool = Field(
        False, description="combine teacher and student with the bias model's log-probabilities "
        "before the KL (PoE applied to distillation; needs the bias input)"
    )
    hidden_weight: float = Field(
        0.0, ge=0.0, description="weight of the hidden-state term (the teacher: the run's starting "
        "model with its masks lifted; a frozen copy of it where the weights train)"
    )
    layers: list[int] | None = Field(None, description="hidden-state term: layers 1..L matched (null: all)")
    distance: Literal["mse", "cosine"] = Field("mse", description="hidden-state term: per-token distance")


@register_objective("kd")
class KnowledgeDistillation(Objective):
    """Task loss plus prediction-layer (cached teacher probabilities) and hidden-state distillation."""

    params_model = KDParams

    @property
    def requires(self) -> tuple[str, ...]:
        if self.params.pred_weight == 0:
            return ()
        return (TEACHER, BIAS) if self.params.through_bias else (TEACHER,)

    def setup(self, model: nn.Module, tokenizer) -> None:
        if self.params.hidden_weight == 0:
            return
        self.layers = check_layers(self.params.layers, model)
        self.frozen_teacher = frozen_copy(model) if weights_train(model) else None

    def step(self, model, batch, loss, *, progress, penalty, backward) -> dict[str, float]:
        p = self.params
        inputs = model_inputs(extract_model_from_parallel(model), batch)
        hidden = p.hidden_weight > 0
        out = model(**inputs, output_hidden_states=hidden)
        logits = out.logits.float()
        logs: dict[str, float] = {}
        extras = batch_inputs(batch)
        total = p.task_weight * loss(logits, batch["labels"], extras, progress)
        if p.pred_weight > 0:
            teacher, student = batch[TEACHER].float().clamp_min(1e-12).log(), logits
            if p.through_bias:
                log_bias = extras[BIAS].float()
                teacher, student = teacher + log_bias, F.log_softmax(logits, dim=-1) + log_bias
            teacher = F.log_softmax(teacher / p.temperature, dim=-1)
            student = F.log_softmax(student / p.temperature, dim=-1)
            kl = F.kl_div(student, teacher, log_target=True, reduction="batchmean") * p.temperature ** 2
            total = total + p.pred_weight * kl
            logs["kd_pred"] = kl.item()
        if hidden:
            targets = self._teacher_states(extract_model_from_parallel(model), inputs)
            distance = hidden_distance(out.hidden_states, targets, inputs["attention_mask"], self.layers,
                                       p.distance)
            total = total + p.hidden_weight * distance
            logs["kd_hidden"] = distance.item()
        value = with_penalty(total, penalty)
        backward(value)
        return {"loss": value.item(), **logs}

    @torch.no_grad()
    def _teacher_states(self, model: nn.Module, inputs: dict[str, Tensor]) -> tuple[Tensor, ...]:
        if self.frozen_teacher is None:
            return teacher_hidden_states(model, inputs)
        device = inputs["input_ids"].device
        if next(self.frozen_teacher.parameters()).device != device:
            self.frozen_teacher.to(device)
        return self.frozen_teacher(**inputs, output_hidden_states=True).hidden_states


def weights_train(model: nn.Module) -> bool:
    """Whether any weight of ``model`` is trained (masked or not), so its unmasked weights drift
    from the starting model's."""
    return any(p.requires_grad for name, p in model.base_model.named_parameters()
               if name.endswith("weight") or name.endswith(".original"))


def frozen_copy(model: nn.Module) -> nn.Module:
    """The encoder of ``model`` as it starts, masks lifted, frozen and in eval mode.

    A deep copy shares each parametrized module's generated class with the original, so the masks
    are lifted per instance (``parametrize.remove_parametrizations`` would delete the class's
    property and unmask the original too)."""
    copy = deepcopy(model.base_model)
    for module in list(copy.modules()):
        if not parametrize.is_parametrized(module):
            continue
        originals = {name: plist.original for name, plist in module.parametrizations.items()}
        module.__class__ = module.__class__.__bases__[0]
        delattr(module, "parametrizations")
        for name, original in originals.items():
            module.register_parameter(name, nn.Parameter(original.detach()))
    copy.eval().requires_grad_(False)
    return copy
