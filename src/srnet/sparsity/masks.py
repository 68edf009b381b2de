"""Mask parametrizations: ``weight -> weight * mask`` attached with ``torch.nn.utils.parametrize``.

Every parametrization keeps the applied binary mask as a 0/1 buffer ``mask`` in the weight's
dtype (it follows ``model.to(...)``), so the applied mask is always one tensor away and the
forward pass costs one multiplication.

- :class:`FixedMask`: a given mask (one-shot methods, IMP).
- :class:`ScoreMask`: learnable scores; the mask ``scores >= threshold`` is applied in the
  forward pass and the gradient reaches the scores unchanged (straight-through estimator).
  The mask is recomputed only when asked (:meth:`ScoreMask.update_mask` after an optimizer
  step, :meth:`ScoreMask.set_ranked` at a re-rank), never per forward.
- :class:`HardConcreteMask`: L0 hard-concrete gates (Louizos et al. 2018); stochastic gates
  in training mode, the deterministic ``mask`` buffer in eval mode.
- :class:`GroupMask`: one gate per head/neuron broadcast onto a member weight's rows or columns;
  all members of a group share the gate, a hard-concrete one included (one draw per forward).

The training hot path (:class:`FusedMaskForward`): in training mode, every fixed or score mask
of a model is applied by one fused straight-through op per forward pass (``torch._foreach_mul``
over all matrices, forward and backward), and the results are served from ``parametrize``'s
cache, so the per-access parametrization machinery does not run per matrix.  The arithmetic is
the same elementwise products, so masks, weights and gradients are bit-identical.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn.utils import parametrize


class FixedMask(nn.Module):
    """Multiply the weight by a fixed 0/1 mask (the base of every mask parametrization)."""

    mask: Tensor

    def __init__(self, keep: Tensor, like: Tensor) -> None:
        """``keep``: the 0/1 mask; ``like``: the weight, whose device and dtype the mask takes."""
        super().__init__()
        self.register_buffer("mask", keep.detach().to(like.device, like.dtype, copy=True))

    def forward(self, weight: Tensor) -> Tensor:
        return weight * self.mask

    def set_mask(self, keep: Tensor) -> None:
        """Apply a new binary mask (same shape)."""
        self.mask.copy_(keep)

    def binary_mask(self) -> Tensor:
        """The applied mask as a boolean tensor."""
        return self.mask.bool()

    def group_gates(self, member: nn.Module) -> Tensor:
        """The gates that ``member`` (a :class:`GroupMask`) broadcasts onto its weight.

        The gradient of a learnable gate flows through this value (straight-through for scores).
        """
        return self(torch.ones_like(self.mask))


class _StraightThrough(torch.autograd.Function):
    """``weight * mask`` whose gradient reaches ``scores`` as if the mask were the scores."""

    @staticmethod
    def forward(weight: Tensor, scores: Tensor, mask: Tensor) -> Tensor:
        return weight * mask

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        weight, _, mask = inputs
        ctx.save_for_backward(weight, mask)

    @staticmethod
    def backward(ctx, grad: Tensor):
        weight, mask = ctx.saved_tensors
        grad_weight = grad * mask if ctx.needs_input_grad[0] else None
        grad_scores = grad * weight if ctx.needs_input_grad[1] else None
        return grad_weight, grad_scores, None


class ScoreMask(FixedMask):
    """Learnable scores thresholded into a binary mask, trained with a straight-through gradient."""

    threshold: Tensor

    def __init__(self, scores: Tensor, keep: Tensor, threshold: float) -> None:
        super().__init__(keep, scores)
        self.scores = nn.Parameter(scores.detach().clone())
        self.register_buffer("threshold", torch.tensor(threshold, device=scores.device))

    def forward(self, weight: Tensor) -> Tensor:
        return _StraightThrough.apply(weight, self.scores, self.mask)

    def update_mask(self) -> None:
        """Recompute the mask from the current scores and the held threshold."""
        torch.ge(self.scores.detach(), self.threshold, out=self.mask)

    def set_ranked(self, keep: Tensor, threshold: float) -> None:
        """Apply an exact ranking and hold its threshold until the next one."""
        self.set_mask(keep)
        self.threshold.fill_(threshold)


class HardConcreteMask(FixedMask):
    """Hard-concrete (stretched, clamped binary-concrete) gates with learnable ``log_alpha``.

    ``log_alpha`` starts at ``logit(init_keep)`` as in Louizos et al.'s reference code.  In
    training mode each forward draws fresh gates from the global RNG; in eval mode the weight is
    multiplied by the deterministic ``mask`` buffer (set by ranking ``log_alpha``).

    As the gate of a group (:class:`GroupMask`), one draw serves all the group's members in a
    forward pass: the noise is drawn when a member asks for gates a second time (the next
    forward), or for the first time, and every member computes the same gates from it.
    """

    def __init__(
        self,
        keep: Tensor,
        like: Tensor,
        init_keep: float = 0.9,
        temperature: float = 2 / 3,
        gamma: float = -0.1,
        zeta: float = 1.1,
    ) -> None:
        super().__init__(keep, like)
        logit = math.log(init_keep / (1 - init_keep))
        self.log_alpha = nn.Parameter(torch.full_like(self.mask, logit))
        self.temperature, self.gamma, self.zeta = temperature, gamma, zeta
        self._noise: Tensor | None = None  # the current draw shared by a group's members
        self._served: set[int] = set()  # ids of the members that used it

    def forward(self, weight: Tensor) -> Tensor:
        return weight * (self.sample_gates() if self.training else self.mask)

    def sample_gates(self) -> Tensor:
        """Draw stochastic gates in [0, 1] (differentiable in ``log_alpha``)."""
        return self.gates_from(self.draw_noise())

    def draw_noise(self) -> Tensor:
        """Uniform noise in (0, 1), one value per gate, from the global RNG."""
        eps = 1e-6
        return torch.rand_like(self.log_alpha.detach()).clamp_(eps, 1 - eps)

    def gates_from(self, u: Tensor) -> Tensor:
        """The hard-concrete gates for noise ``u`` (differentiable in ``log_alpha``)."""
        s = torch.sigmoid((u.log() - (-u).log1p() + self.log_alpha) / self.temperature)
        return (s * (self.zeta - self.gamma) + self.gamma).clamp(0.0, 1.0)

    def group_gates(self, member: nn.Module) -> Tensor:
        """Eval: the ``mask``.  Training: this forward's gates, one draw shared by the members."""
        if not self.training:
            return self.mask
        if self._noise is None or id(member) in self._served or self._noise.device != self.mask.device:
            self._noise, self._served = self.draw_noise(), set()
        self._served.add(id(member))
        return self.gates_from(self._noise)

    def train(self, mode: bool = True) -> HardConcreteMask:
        self._noise, self._served = None, set()  # a new phase starts with a fresh draw
        return super().train(mode)

    def keep_probability(self) -> Tensor:
        """P(gate != 0) for every entry; its sum is the expected L0 norm."""
        shift = self.temperature * math.log(-self.gamma / self.zeta)
        return torch.sigmoid(self.log_alpha - shift)


class GroupMask(nn.Module):
    """Broadcast one gate per group (a head, an FFN neuron) onto a weight's rows or columns.

    ``gate`` is a :class:`FixedMask`, :class:`ScoreMask` or :class:`HardConcreteMask` over the
    group vector, shared by all members of the group (Q, K, V and the attention output for a
    head); ``width`` consecutive rows (``axis`` 0) or columns (``axis`` 1) belong to each group,
    in each of ``parts`` stacked parts (a fused Q/K/V matrix: 3).  A learnable gate gets its
    gradient summed over its group's entries and members.
    """

    def __init__(self, gate: FixedMask, axis: int, width: int, parts: int = 1) -> None:
        super().__init__()
        self.gate, self.axis, self.width, self.parts = gate, axis, width, parts

    def forward(self, weight: Tensor) -> Tensor:
        return weight * self.expand(self.gate.group_gates(self))

    def expand(self, gates: Tensor) -> Tensor:
        """Gates repeated ``width`` times (in each part) along ``axis``, broadcastable to the weight."""
        values = gates.repeat_interleave(self.width).repeat(self.parts)
        return values.unsqueeze(1) if self.axis == 0 else values.unsqueeze(0)

    def binary_mask(self) -> Tensor:
        """The applied gates as a boolean vector (one entry per group)."""
        return self.gate.binary_mask()


class _FusedStraightThrough(torch.autograd.Function):
    """``weights[i] * masks[i]`` for ``n`` matrices in one foreach op.  Gradients: ``grad * mask``
    to a trained weight, ``grad * weight`` to its scores (straight-through), none to masks."""

    @staticmethod
    def forward(ctx, n: int, *tensors: Tensor) -> tuple[Tensor, ...]:
        weights, masks = list(tensors[:n]), list(tensors[2 * n :])
        ctx.n = n
        ctx.save_for_backward(*weights, *masks)
        return tuple(torch._foreach_mul(weights, masks))

    @staticmethod
    def backward(ctx, *grads: Tensor):
        n, needs = ctx.n, ctx.needs_input_grad
        saved = ctx.saved_tensors
        weights, masks = list(saved[:n]), list(saved[n:])
        to_weights = torch._foreach_mul(list(grads), masks) if any(needs[1 : n + 1]) else [None] * n
        to_scores = torch._foreach_mul(list(grads), weights) if any(needs[n + 1 : 2 * n + 1]) else [None] * n
        return (
            None,
            *(g if needs[1 + i] else None for i, g in enumerate(to_weights)),
            *(g if needs[1 + n + i] else None for i, g in enumerate(to_scores)),
            *([None] * n),
        )


class FusedMaskForward:
    """Forward hooks on ``model``: in training mode, the masked weights of ``modules`` come from one
    fused straight-through op per forward pass, served through ``parametrize``'s cache.

    Only :class:`FixedMask` and :class:`ScoreMask` fuse (hard-concrete gates sample per forward).
    Eval mode, and a model whose parametrizations were removed (a baked copy), use the plain path.
    """

    def __init__(self, model: nn.Module, modules: list[nn.Module], masks: list[FixedMask]) -> None:
        self.modules, self.masks = modules, masks
        self._open: list = []
        self.handles = [
            model.register_forward_pre_hook(self._enter),
            model.register_forward_hook(self._exit, always_call=True),
        ]

    @staticmethod
    def fusable(masks: list[FixedMask]) -> bool:
        return bool(masks) and all(type(m) in (FixedMask, ScoreMask) for m in masks)

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()

    def _enter(self, model: nn.Module, args) -> None:
        if not model.training or not parametrize.is_parametrized(self.modules[0], "weight"):
            return
        context = parametrize.cached()
        context.__enter__()
        self._open.append(context)
        weights = [module.parametrizations.weight.original for module in self.modules]
        scores = [m.scores if isinstance(m, ScoreMask) else m.mask for m in self.masks]
        masked = _FusedStraightThrough.apply(len(weights), *weights, *scores, *(m.mask for m in self.masks))
        for module, value in zip(self.modules, masked, strict=True):
            parametrize._cache[(id(module), "weight")] = value

    def _exit(self, model: nn.Module, args, output) -> None:
        if self._open:
            self._open.pop().__exit__(None, None, None)


def attach(module: nn.Module, mask: nn.Module) -> nn.Module:
    """Register ``mask`` as the parametrization of ``module.weight``."""
    parametrize.register_parametrization(module, "weight", mask)
    return mask


def original_weight(module: nn.Module) -> Tensor:
    """The unmasked weight of ``module`` (the parametrization's ``original`` when masked)."""
    if parametrize.is_parametrized(module, "weight"):
        return module.parametrizations.weight.original
    return module.weight
