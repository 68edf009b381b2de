"""Gradient-based importance of heads and FFN neurons (Michel et al., "Are Sixteen Heads Really
Better than One?", 2019).

A gate ``xi = 1`` multiplies each head's (neuron's) output: the head's slice of the attention
output's input (the neuron's activation entering FFN-out), that is the input columns of the
group's one axis-1 member.  The importance of a group is ``E_batches |dL/dxi|``: the absolute
gradient of the training loss on each batch, averaged over batches.  Zeroing ``xi`` is exactly
what pruning the group does to the forward pass, so ``dL/dxi`` is the first-order (Taylor)
estimate of the loss change when the group is removed; it equals the sum over the group's
columns of ``W * dL/dW`` of that member.  (The group's own mask gate,
:class:`~srnet.sparsity.GroupMask`, also scales the Q, K, V rows and the FFN-in row; its gradient
adds softmax-temperature and activation terms that removal does not follow, so the gate here
sits on the output only.)

Optionally each layer's importances are divided by their root mean square: Michel et al.
divide by the L2 norm over a layer's heads; the extra ``sqrt(count)`` changes no ranking of
heads (every layer has as many) and keeps heads and neurons on one scale when both are ranked
together (``scope: global``, ``head+neuron``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import islice

import torch
from torch import Tensor, nn

from srnet.errors import SrnetError
from srnet.models import GroupMember, MaskGroup
from srnet.pruning.base import Calibration
from srnet.sparsity import original_weight


def output_member(group: MaskGroup) -> GroupMember:
    """The member that reads the group's units as input columns (attention output, FFN-out)."""
    outputs = [m for m in group.members if m.axis == 1]
    if len(outputs) != 1:
        raise RuntimeError(f"internal error: group '{group.name}' has {len(outputs)} output members")
    return outputs[0]


@contextmanager
def output_gates(groups: Sequence[MaskGroup]) -> Iterator[list[Tensor]]:
    """Within the block, a gate vector of ones (``requires_grad``) per group multiplies its output
    member's input, ``width`` columns per entry; yields the gates."""
    gates, handles = [], []
    for group in groups:
        member = output_member(group)
        gate = torch.ones(group.count, device=original_weight(member.module).device, requires_grad=True)

        def scale(module: nn.Module, args: tuple, gate: Tensor = gate, width: int = member.width) -> tuple:
            x = args[0]
            return (x * gate.to(x.dtype).repeat_interleave(width), *args[1:])

        gates.append(gate)
        handles.append(member.module.register_forward_pre_hook(scale))
    try:
        yield gates
    finally:
        for handle in handles:
            handle.remove()


def gradient_importance(
    model: nn.Module, groups: Sequence[MaskGroup], data: Calibration, batches: int, seed: int = 0
) -> list[Tensor]:
    """``E |dL/dxi|`` per group entry over the first ``batches`` of ``data.batches`` (float32, one
    vector per group).

    The model runs in eval mode (no dropout) with no weight gradients; what the objective draws
    at random (MLM masking, FreeLB's start) comes from a generator seeded with ``seed`` and the
    caller's random state is left untouched, so the importances are a function of the weights,
    the batches and ``seed``.  ``SrnetError`` when there is no batch, or when every importance
    is zero (a loss at its minimum with every gate on, e.g. distillation from the unmasked model).
    """
    params = list(model.parameters())
    trainable = [p.requires_grad for p in params]
    was_training = model.training
    device = original_weight(groups[0].module).device
    totals = [torch.zeros(g.count, device=device) for g in groups]
    seen = 0
    fork = torch.random.fork_rng(devices=[device] if device.type == "cuda" else [])
    try:
        for p in params:
            p.requires_grad_(False)
        model.eval()
        with fork, output_gates(groups) as gates, torch.enable_grad():
            torch.manual_seed(seed)
            for batch in islice(data.batches, batches):
                data.backward(model, batch)
                for total, gate in zip(totals, gates, strict=True):
                    if gate.grad is not None:
                        total += gate.grad.abs().to(device)
                    gate.grad = None
                seen += 1
    finally:
        for p, flag in zip(params, trainable, strict=True):
            p.requires_grad_(flag)
        model.train(was_training)
    if seen == 0:
        raise SrnetError("gradient importance got no training batch")
    if not any(bool(t.any()) for t in totals):
        raise SrnetError(
            "gradient importance is zero for every head/neuron: the training loss does not change "
            "with them at the unpruned model (e.g. objective distill against the unmasked teacher)"
        )
    return [t / seen for t in totals]


def normalize_per_layer(scores: Sequence[Tensor], eps: float = 1e-20) -> list[Tensor]:
    """Each vector divided by its root mean square (L2 norm / sqrt(count)); all-zero stays zero."""
    return [s / (s.pow(2).mean().sqrt() + eps) for s in scores]

