"""Masks against a model's structure: the weight or head/neuron group each mask key names, the
shape its mask must have, a mask set's granularity, and group gates expanded onto weights."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import torch
from torch import nn
from torch.nn.utils import parametrize

from srnet.errors import SrnetError
from srnet.models.structure import MaskGroup, find_groups
from srnet.sparsity.counting import as_bool


def describe_model(model: nn.Module) -> str:
    """A short human name for a model: its type and where it was loaded from."""
    config = getattr(model, "config", None)
    kind = getattr(config, "model_type", None) or type(model).__name__
    origin = getattr(config, "_name_or_path", "") if config is not None else ""
    return f"{kind} model '{origin}'" if origin else f"{kind} model"


def masked_module(model: nn.Module, name: str) -> nn.Module:
    """The module called ``name`` in ``model``; ``SrnetError`` unless it has a weight tensor."""
    try:
        module = model.get_submodule(name)
    except AttributeError:
        module = None
    has_weight = module is not None and (
        parametrize.is_parametrized(module, "weight")
        or isinstance(getattr(module, "weight", None), torch.Tensor)
    )
    if not has_weight:
        raise SrnetError(f"mask key '{name}' names no weight in this {describe_model(model)}")
    return module


def weight_shape(module: nn.Module) -> tuple[int, ...]:
    """Shape of ``module.weight`` without running a parametrization (which may sample noise)."""
    if parametrize.is_parametrized(module, "weight"):
        return tuple(module.parametrizations["weight"].original.shape)
    return tuple(module.weight.shape)


def model_groups(model: nn.Module) -> dict[str, MaskGroup]:
    """The model's head and neuron groups by name ({} for an architecture without groups)."""
    try:
        return {g.name: g for g in find_groups(model, ("head", "neuron"))}
    except SrnetError:
        return {}


def mask_shapes(model: nn.Module, names: Iterable[str]) -> dict[str, tuple[int, ...]]:
    """The shape each named mask must have: its weight's, or ``(count,)`` for a group's gates."""
    groups: dict[str, MaskGroup] | None = None
    shapes = {}
    for name in names:
        try:
            shapes[name] = weight_shape(masked_module(model, name))
        except SrnetError:
            groups = model_groups(model) if groups is None else groups
            if name not in groups:
                raise
            shapes[name] = (groups[name].count,)
    return shapes


def mask_granularity(model: nn.Module, names: Iterable[str]) -> str:
    """``head``, ``neuron`` or ``head+neuron`` when every name is one of the model's head/neuron
    groups (group gates), else ``unstructured``."""
    groups = model_groups(model)
    names = list(names)
    if not names or any(name not in groups for name in names):
        return "unstructured"
    kinds = {groups[name].kind for name in names}
    return "+".join(kind for kind in ("head", "neuron") if kind in kinds)


def expand_masks(model: nn.Module, masks: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Per-weight masks: group gates broadcast onto their members' rows/columns (others as they are)."""
    shapes = mask_shapes(model, masks)
    groups = model_groups(model) if any(len(s) == 1 for s in shapes.values()) else {}
    out: dict[str, torch.Tensor] = {}
    for name, mask in masks.items():
        if name not in groups:
            out[name] = mask
            continue
        for m in groups[name].members:
            gates = m.spread(as_bool(name, mask))
            shape = weight_shape(m.module)
            out[m.name] = (gates.unsqueeze(1) if m.axis == 0 else gates.unsqueeze(0)).expand(shape).clone()
    return out
