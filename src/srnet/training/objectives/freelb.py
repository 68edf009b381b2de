"""The ``freelb`` objective: adversarial training in the embedding space (Zhu et al. 2020)."""

from __future__ import annotations

import torch
from accelerate.utils import extract_model_from_parallel
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor

from srnet.loss_inputs import batch_inputs
from srnet.training.data import model_inputs
from srnet.training.objectives.base import Objective, register_objective, with_penalty


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
        extras, labels = batch_inputs(batch), batch["labels"]
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
