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
from srnet.sparsity.counting import pooled_sparsity, zero_counts
from srnet.sparsity.shapes import expand_masks, masked_module

EXPORT_INFO_FILENAME = "srnet_export.json"
EXPORT_FORMAT_VERSION = "1"
DIGESTS_KEY = "sha256"
"""``srnet_export.json``'s ``{file name: SHA-256}`` of every file an export ships but the record and
its card (older exports list only the weights and graphs, or have none)."""
WEIGHTS_FILENAME = "model.safetensors"


def bake_masks(model: nn.Module, masks: Mapping[str, torch.Tensor]) -> nn.Module:
    """A deep copy of ``model`` with each masked weight replaced by ``original_weight * mask``.

    Group gates (heads, neurons) are first broadcast onto their weights.  Parametrizations on
    masked weights are removed (restoring the original weight) before the multiplication;
    ``model`` itself is left untouched.  A masked input embedding tied to an output layer (an
    MLM decoder) is untied first: the masked model's decoder kept the unmasked weights (a
    parametrization masks only the embedding's own use), so the baked one keeps them too.
    Raises ``SrnetError`` when a key names no weight, a shape differs, or a parametrization
    remains on a weight without a mask.
    """
    masks = expand_masks(model, masks)
    baked = copy.deepcopy(model)
    for name, mask in masks.items():
        module = masked_module(baked, name)
        if parametrize.is_parametrized(module, "weight"):
            _detach_class(module)
            parametrize.remove_parametrizations(module, "weight", leave_parametrized=False)
        _untie_output(baked, module)
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


def _untie_output(model: nn.Module, module: nn.Module) -> None:
    """Give ``model``'s output layer its own copy of ``module``'s weight when the two are tied,
    and record ``tie_word_embeddings: false`` so a reload keeps them apart."""
    output = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if output is None or output.weight is not module.weight:
        return
    output.weight = nn.Parameter(module.weight.detach().clone(), requires_grad=module.weight.requires_grad)
    if getattr(output, "bias", None) is not None:  # e.g. BERT's decoder bias, tied to the head's own
        output.bias = nn.Parameter(output.bias.detach().clone(), requires_grad=output.bias.requires_grad)
    config = getattr(model, "config", None)
    if config is not None:
        config.tie_word_embeddings = False


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
