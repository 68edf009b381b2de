"""The ``kd`` objective: the task loss plus distillation from a dense teacher (CoFi-style).

``loss = task_weight · task loss + pred_weight · T² · KL(teacher_T ‖ student_T)
+ hidden_weight · d(h_student, h_teacher) + attention_weight · KL(A_teacher ‖ A_student)``
(+ the pruning method's penalty).

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
* **Attention maps** (TinyBERT, MiniLM): on the same layers and from the same teacher, the KL of
  each head's attention distribution over the keys, per non-padding query, averaged over the
  student's **live** heads (a cut head, whose output columns are all masked, has no attention to
  match). Attention maps need the eager attention kernel, so setting ``attention_weight`` switches
  the model (and the teacher copy) to it.

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
from typing import Any, Literal

import torch
import torch.nn.functional as F
from accelerate.utils import extract_model_from_parallel
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn
from torch.nn.utils import parametrize

from srnet.errors import SrnetError
from srnet.loss_inputs import BIAS, TEACHER, batch_inputs
from srnet.models import MaskGroup, find_groups
from srnet.pruning.importance import output_member
from srnet.training.data import model_inputs
from srnet.training.objectives.base import Objective, register_objective, with_penalty
from srnet.training.objectives.pretraining import check_layers, hidden_distance, teacher_outputs


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
    attention_weight: float = Field(
        0.0, ge=0.0, description="weight of the attention-map term: KL(teacher ‖ student) of each live "
        "head's attention distribution per token (the same teacher and layers; runs eager attention)"
    )
    layers: list[int] | None = Field(
        None, description="hidden-state and attention terms: layers 1..L matched (null: all)"
    )
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
        if self.params.hidden_weight == 0 and self.params.attention_weight == 0:
            return
        self.layers = check_layers(self.params.layers, model)
        if self.params.attention_weight:
            eager_attention(model)
            self.heads = find_groups(model, ["head"])
        self.frozen_teacher = frozen_copy(model) if weights_train(model) else None

    def step(self, model, batch, loss, *, progress, penalty, backward) -> dict[str, float]:
        p = self.params
        inputs = model_inputs(extract_model_from_parallel(model), batch)
        hidden, attention = p.hidden_weight > 0, p.attention_weight > 0
        out = model(**inputs, output_hidden_states=hidden, output_attentions=attention)
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
        if hidden or attention:
            flags = {"output_hidden_states": hidden, "output_attentions": attention}
            teacher = self._teacher(extract_model_from_parallel(model), inputs, flags)
        if hidden:
            distance = hidden_distance(out.hidden_states, teacher.hidden_states, inputs["attention_mask"],
                                       self.layers, p.distance)
            total = total + p.hidden_weight * distance
            logs["kd_hidden"] = distance.item()
        if attention:
            live = live_heads(self.heads)
            kl_maps = attention_distance(out.attentions, teacher.attentions, inputs["attention_mask"],
                                         self.layers, live)
            total = total + p.attention_weight * kl_maps
            logs["kd_attention"] = kl_maps.item()
        value = with_penalty(total, penalty)
        backward(value)
        return {"loss": value.item(), **logs}

    @torch.no_grad()
    def _teacher(self, model: nn.Module, inputs: dict[str, Tensor], flags: dict[str, bool]) -> Any:
        if self.frozen_teacher is None:
            return teacher_outputs(model, inputs, **flags)
        device = inputs["input_ids"].device
        if next(self.frozen_teacher.parameters()).device != device:
            self.frozen_teacher.to(device)
        return self.frozen_teacher(**inputs, **flags)


def eager_attention(model: nn.Module) -> None:
    """Switch ``model`` to the eager attention kernel, the one that returns attention maps; one
    line when it cannot."""
    if getattr(model.config, "_attn_implementation", "eager") == "eager":
        return
    if not hasattr(model, "set_attn_implementation"):
        raise SrnetError(f"kd attention_weight: {type(model).__name__} cannot switch to eager attention, "
                         "which attention maps need; set attention_weight 0")
    model.set_attn_implementation("eager")


def live_heads(groups: list[MaskGroup]) -> dict[int, Tensor]:
    """Layer index (0-based) -> which of its heads are live: some weight of their output columns
    is not masked to zero."""
    live = {}
    for group in groups:
        member = output_member(group)
        weight = member.module.weight.detach()  # the masked weight where a mask is applied
        columns = weight.abs().sum(dim=0).view(member.parts, group.count, member.width)
        live[group.layer] = columns.sum(dim=(0, 2)) > 0
    return live


def attention_distance(
    student: tuple[Tensor, ...], teacher: tuple[Tensor, ...], attention_mask: Tensor,
    layers: list[int], live: dict[int, Tensor],
) -> Tensor:
    """Mean over ``layers`` (1..L) of KL(teacher ‖ student) of the attention over the keys, per
    live head and non-padding query; 0 where no head of those layers is live."""
    queries = attention_mask.bool()
    per_layer = []
    for layer in layers:
        heads = live[layer - 1]
        if not heads.any():
            continue
        t = teacher[layer - 1][:, heads].float()
        s = student[layer - 1][:, heads].float()
        kl = (t * (t.clamp_min(1e-12).log() - s.clamp_min(1e-12).log())).sum(dim=-1)  # batch, head, query
        per_layer.append(kl.transpose(1, 2)[queries].mean())
    return torch.stack(per_layer).mean() if per_layer else student[0].new_zeros(())


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
