"""Pre-training objectives for task-agnostic mask training (TAMT): ``mlm``, ``distill``, ``mlm+distill``.

They are registered in the one objective registry (:mod:`srnet.training.objectives`) and train
a model loaded with an MLM head (:func:`srnet.models.load_masked_lm`) on packed text blocks.

- ``mlm``: BERT's dynamic masking (15% of the non-special tokens: 80% ``[MASK]``, 10% a random
  token, 10% kept), cross-entropy of the MLM head on the selected tokens only.
- ``distill``: the mean over encoder layers 1..L and over non-padding tokens of
  ``1 - cos(h_student, h_teacher)`` (or the squared error).  The teacher is the *same* model with
  its masks switched off, run in eval mode under ``no_grad``: the parametrizations' cached
  weights are the unmasked originals, so no weight is copied.
- ``mlm+distill``: the equal-weight sum (one student forward on the masked-token input).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from accelerate.utils import extract_model_from_parallel
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from torch import Tensor, nn
from torch.nn.utils import parametrize

from srnet.errors import SrnetError
from srnet.training.data import model_inputs
from srnet.training.objectives.base import Objective, register_objective, with_penalty

IGNORE = -100
"""Label of tokens the MLM loss skips (as in ``transformers``)."""


class MLMParams(BaseModel):
    """BERT-style dynamic masking."""

    model_config = ConfigDict(extra="forbid")

    probability: float = Field(0.15, gt=0, lt=1, description="fraction of non-special tokens selected")
    mask_fraction: float = Field(0.8, ge=0, le=1, description="selected tokens replaced by [MASK]")
    random_fraction: float = Field(
        0.1, ge=0, le=1, validate_default=True,
        description="selected tokens replaced by a random token (the rest are kept)",
    )
    train_head: bool | None = Field(
        None, description="train the MLM head with the mask (null: only a fresh head, i.e. one "
        "the checkpoint does not have)"
    )

    @field_validator("random_fraction")
    @classmethod
    def _fractions(cls, value: float, info: ValidationInfo) -> float:
        total = info.data.get("mask_fraction", 0.0) + value
        if total > 1:
            raise ValueError(f"mask_fraction + random_fraction = {total:g} > 1")
        return value


class DistillParams(BaseModel):
    """Hidden-state distillation from the unmasked model."""

    model_config = ConfigDict(extra="forbid")

    layers: list[int] | None = Field(
        None, description="encoder layers to match, 1..L (null: all); 0 would be the embeddings"
    )
    distance: Literal["cosine", "mse"] = Field(
        "cosine", description="cosine: 1 - cos(h_s, h_t) per token; mse: mean squared error per token"
    )


class MLMDistillParams(MLMParams, DistillParams):
    """``mlm`` and ``distill`` parameters together."""


@dataclass(frozen=True)
class Masking:
    """What dynamic masking needs from the tokenizer."""

    mask_id: int
    special_ids: tuple[int, ...]
    vocab_size: int

    @classmethod
    def from_tokenizer(cls, tokenizer) -> Masking:
        if tokenizer.mask_token_id is None:
            name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
            raise SrnetError(f"objective 'mlm' needs a tokenizer with a mask token; '{name}' has none")
        return cls(tokenizer.mask_token_id, tuple(tokenizer.all_special_ids), len(tokenizer))


def mask_tokens(
    input_ids: Tensor, attention_mask: Tensor, masking: Masking, params: MLMParams
) -> tuple[Tensor, Tensor]:
    """(corrupted input ids, labels): labels are the original ids at selected tokens, else -100.

    Special tokens and padding are never selected.  Draws from the global RNG (seeded runs and
    resumed runs see the same masks).
    """
    special = torch.isin(input_ids, torch.tensor(masking.special_ids, device=input_ids.device))
    special |= attention_mask == 0
    chosen = torch.bernoulli(torch.full(input_ids.shape, params.probability, device=input_ids.device))
    chosen = chosen.bool() & ~special
    labels = torch.where(chosen, input_ids, IGNORE)
    u = torch.rand(input_ids.shape, device=input_ids.device)
    to_mask = chosen & (u < params.mask_fraction)
    to_random = chosen & (u >= params.mask_fraction) & (u < params.mask_fraction + params.random_fraction)
    corrupted = torch.where(to_mask, masking.mask_id, input_ids)
    random_ids = torch.randint(masking.vocab_size, input_ids.shape, device=input_ids.device)
    return torch.where(to_random, random_ids, corrupted), labels


def mlm_head(model: nn.Module) -> nn.Module:
    """The MLM head: the one child of ``model`` besides its base model (BERT ``cls``, RoBERTa
    ``lm_head``)."""
    others = [m for m in model.children() if m is not model.base_model]
    if len(others) != 1:
        raise SrnetError(
            f"objective 'mlm' needs a model whose MLM head is one module (BERT, RoBERTa); "
            f"{type(model).__name__} has {len(others)}"
        )
    return others[0]


def head_parameters(model: nn.Module) -> list[nn.Parameter]:
    """Parameters of the MLM head that are not the base model's (tied embeddings excluded)."""
    base = {id(p) for p in model.base_model.parameters()}
    return [p for p in mlm_head(model).parameters() if id(p) not in base]


def mlm_loss(model: nn.Module, sequence_output: Tensor, labels: Tensor) -> Tensor:
    """Cross-entropy of the MLM head on the selected tokens only (the others cost nothing)."""
    selected = labels != IGNORE
    if not bool(selected.any()):
        return sequence_output.sum() * 0.0
    logits = mlm_head(model)(sequence_output[selected])
    return F.cross_entropy(logits.float(), labels[selected])


@contextmanager
def unmasked_weights(model: nn.Module) -> Iterator[None]:
    """Within the block, every masked weight of ``model`` reads as its unmasked original.

    ``parametrize``'s cache is filled with the ``original`` tensors themselves: nothing is
    copied and the masks are untouched.
    """
    modules = [m for m in model.modules() if parametrize.is_parametrized(m, "weight")]
    with parametrize.cached():
        for module in modules:
            parametrize._cache[(id(module), "weight")] = module.parametrizations.weight.original
        yield


def teacher_hidden_states(model: nn.Module, inputs: dict[str, Tensor]) -> tuple[Tensor, ...]:
    """Hidden states (embeddings, layer 1, ..., layer L) of the unmasked model in eval mode."""
    return teacher_outputs(model, inputs, output_hidden_states=True).hidden_states


@torch.no_grad()
def teacher_outputs(model: nn.Module, inputs: dict[str, Tensor], **outputs: bool) -> Any:
    """The encoder's outputs (``outputs``: ``output_hidden_states``, ``output_attentions``) with
    the masks lifted, in eval mode."""
    encoder = model.base_model
    was_training = encoder.training
    encoder.eval()
    try:
        with unmasked_weights(encoder):
            return encoder(**inputs, **outputs)
    finally:
        encoder.train(was_training)


def check_layers(layers: list[int] | None, model: nn.Module) -> list[int]:
    """The layers to distil (1..L); an index outside 1..L is an ``SrnetError``."""
    count = model.config.num_hidden_layers
    chosen = list(range(1, count + 1)) if layers is None else list(layers)
    bad = [i for i in chosen if not 1 <= i <= count]
    if bad or not chosen:
        raise SrnetError(
            f"objective distill: layers {bad or chosen} out of range; the model has layers 1..{count}"
        )
    return chosen


def hidden_distance(
    student: tuple[Tensor, ...], teacher: tuple[Tensor, ...], attention_mask: Tensor,
    layers: list[int], distance: str = "cosine",
) -> Tensor:
    """Mean over ``layers`` and non-padding tokens of 1 - cos (or the squared error) of the states."""
    keep = attention_mask.bool()
    per_layer = []
    for layer in layers:
        s, t = student[layer][keep].float(), teacher[layer][keep].float()
        if distance == "cosine":
            per_layer.append((1.0 - F.cosine_similarity(s, t, dim=-1)).mean())
        else:
            per_layer.append(((s - t) ** 2).mean(dim=-1).mean())
    return torch.stack(per_layer).mean()


class Pretraining(Objective):
    """An MLM and/or distillation loss on packed text blocks (the batch has no labels)."""

    uses_mlm: ClassVar[bool] = False
    uses_kd: ClassVar[bool] = False

    def __init__(self, params: BaseModel | None = None) -> None:
        super().__init__(params)
        self.masking: Masking | None = None
        self.layers: list[int] = []

    def check(self, model: nn.Module, tokenizer) -> None:
        """Resolve what the objective needs: the tokenizer's mask token (mlm), the layers (distill);
        ``SrnetError`` when they are missing or out of range."""
        model = extract_model_from_parallel(model)
        if self.uses_mlm:
            self.masking = Masking.from_tokenizer(tokenizer)
            mlm_head(model)
        if self.uses_kd:
            self.layers = check_layers(self.params.layers, model)

    def setup(self, model: nn.Module, tokenizer) -> None:
        """:meth:`check`, then make the MLM head trainable when it trains (``train_head``)."""
        self.check(model, tokenizer)
        if self.uses_mlm and self.params.train_head:
            for p in head_parameters(extract_model_from_parallel(model)):
                p.requires_grad_(True)

    def trains_head(self, fresh: bool) -> bool:
        """Whether the MLM head trains: ``train_head`` when set, else exactly when it is ``fresh``;
        the choice is recorded in the parameters."""
        if not self.uses_mlm:
            return False
        if self.params.train_head is None:
            self.params = self.params.model_copy(update={"train_head": fresh})
        return bool(self.params.train_head)

    def losses(self, model: nn.Module, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        """``mlm`` and/or ``kd`` of one batch (with gradients to whatever is trainable)."""
        if (self.uses_mlm and self.masking is None) or (self.uses_kd and not self.layers):
            raise RuntimeError(f"internal error: objective '{self.name}' used before setup()")
        base = extract_model_from_parallel(model)
        inputs = model_inputs(base, batch)
        attention = inputs.get("attention_mask", torch.ones_like(inputs["input_ids"]))
        labels = None
        if self.uses_mlm:
            corrupted, labels = mask_tokens(inputs["input_ids"], attention, self.masking, self.params)
            inputs = {**inputs, "input_ids": corrupted}
        teacher = teacher_hidden_states(base, inputs) if self.uses_kd else None
        out = base.base_model(**inputs, output_hidden_states=self.uses_kd)
        parts: dict[str, Tensor] = {}
        if labels is not None:
            parts["mlm"] = mlm_loss(base, out.last_hidden_state, labels)
        if teacher is not None:
            parts["kd"] = hidden_distance(
                out.hidden_states, teacher, attention, self.layers, self.params.distance
            )
        return parts

    def step(self, model, batch, loss, *, progress, penalty, backward) -> dict[str, float]:
        parts = self.losses(model, batch)
        value = with_penalty(sum(parts.values()), penalty)
        backward(value)
        return {"loss": value.item(), **{k: v.item() for k, v in parts.items()}}


@register_objective("mlm")
class MaskedLanguageModel(Pretraining):
    """BERT-style masked language modelling (dynamic 15% masking, 80/10/10)."""

    params_model = MLMParams
    uses_mlm = True


@register_objective("distill")
class HiddenStateDistillation(Pretraining):
    """Match the unmasked model's hidden states (TAMT-KD)."""

    params_model = DistillParams
    uses_kd = True


@register_objective("mlm+distill")
class MLMAndDistillation(Pretraining):
    """The equal-weight sum of ``mlm`` and ``distill``."""

    params_model = MLMDistillParams
    uses_mlm = True
    uses_kd = True


@torch.no_grad()
def dev_losses(
    model: nn.Module, blocks: Tensor, tokenizer, *, batch_size: int, seed: int,
    layers: list[int] | None = None, distance: str = "cosine",
) -> dict[str, float]:
    """The MLM and KD losses of ``model`` on dev ``blocks`` (eval mode; the same token masks for
    a given ``seed``, so runs compare on the same corrupted text)."""
    mlm = MaskedLanguageModel()
    kd = HiddenStateDistillation(DistillParams(layers=layers, distance=distance))
    mlm.setup(model, tokenizer)
    kd.setup(model, tokenizer)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    totals = {"mlm": 0.0, "kd": 0.0}
    try:
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(seed)
            for start in range(0, len(blocks), batch_size):
                ids = blocks[start : start + batch_size].to(device)
                batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
                for name, objective in (("mlm", mlm), ("kd", kd)):
                    totals[name] += objective.losses(model, batch)[name].item() * len(ids)
    finally:
        model.train(was_training)
    return {"mlm_dev_loss": totals["mlm"] / len(blocks), "kd_dev_loss": totals["kd"] / len(blocks)}
