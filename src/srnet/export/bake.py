"""Bake masks into weights: the bottom of :mod:`srnet.export` (no import from its siblings).

``torch.nn.utils.parametrize`` renames state-dict keys (``...parametrizations.weight.original``),
so a parametrized model saved directly reloads with re-initialised weights.  ``bake_masks``
removes the parametrizations on a copy and multiplies each weight by its mask instead.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping

import torch
from torch import nn
from torch.nn.utils import parametrize

from srnet.errors import SrnetError
from srnet.sparsity.mask_io import expand_masks, masked_module, pooled_sparsity, zero_counts

EXPORT_INFO_FILENAME = "srnet_export.json"
EXPORT_FORMAT_VERSION = "1"


def bake_masks(model: nn.Module, masks: Mapping[str, torch.Tensor]) -> nn.Module:
    """A deep copy of ``model`` with each masked weight replaced by ``original_weight * mask``.

    Group gates (heads, neurons) are first broadcast onto their weights.  Parametrizations on
    masked weights are removed (restoring the original weight) before the multiplication;
    ``model`` itself is left untouched.  Raises ``SrnetError`` when a key names no weight, a
    shape differs, or a parametrization remains on a weight without a mask.
    """
    masks = expand_masks(model, masks)
    baked = copy.deepcopy(model)
    for name, mask in masks.items():
        module = masked_module(baked, name)
        if parametrize.is_parametrized(module, "weight"):
            _detach_class(module)
            parametrize.remove_parametrizations(module, "weight", leave_parametrized=False)
        weight = module.weight
        if weight.shape != mask.shape:
            raise SrnetError(
                f"mask '{name}' has shape {tuple(mask.shape)} but the weight has shape "
                f"{tuple(weight.shape)}"
            )
        with torch.no_grad():
            weight.mul_(mask.to(device=weight.device, dtype=weight.dtype))
    leftover = parametrized_modules(baked)
    if leftover:
        raise SrnetError(
            f"module '{leftover[0]}' is parametrized but has no mask; it cannot be exported"
        )
    return baked


def parametrized_modules(model: nn.Module) -> list[str]:
    """Names of the modules of ``model`` that still carry a parametrization (none once baked)."""
    return [n for n, m in model.named_modules() if parametrize.is_parametrized(m)]


def _detach_class(module: nn.Module) -> None:
    """Give a deep-copied parametrized module a class of its own.

    ``copy.deepcopy`` shares the injected ``Parametrized<X>`` class between original and copy,
    and ``remove_parametrizations`` deletes the parametrized property from that class, which
    would leave the original module without its weight.
    """
    cls = type(module)
    namespace = {k: v for k, v in vars(cls).items() if k not in ("__dict__", "__weakref__")}
    module.__class__ = type(cls.__name__, cls.__bases__, namespace)


def masked_weight_sparsity(model: nn.Module, names: Iterable[str]) -> tuple[float, dict[str, float]]:
    """Overall and per-matrix fraction of exact zeros in the named weights of ``model``."""
    counts = zero_counts({name: masked_module(model, name).weight.detach() for name in names})
    return pooled_sparsity(counts.values()), {n: z / t for n, (z, t) in counts.items()}
