"""Export a masked model as a plain Hugging Face checkpoint that ``from_pretrained`` loads as is.

``torch.nn.utils.parametrize`` renames state-dict keys (``...parametrizations.weight.original``),
so a parametrized model saved directly reloads with re-initialised weights.  ``bake_masks``
removes the parametrizations on a copy and multiplies each weight by its mask instead.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path

import torch
from torch import nn
from torch.nn.utils import parametrize

from srnet.errors import SrnetError
from srnet.io import atomic_folder, atomic_write_json
from srnet.models import quiet_transformers
from srnet.sparsity.mask_io import (
    MaskMetadata,
    expand_masks,
    masked_module,
    pooled_sparsity,
    zero_counts,
)

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
    leftover = [n for n, m in baked.named_modules() if parametrize.is_parametrized(m)]
    if leftover:
        raise SrnetError(
            f"module '{leftover[0]}' is parametrized but has no mask; it cannot be exported"
        )
    return baked


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


def export_model(
    model: nn.Module,
    masks: Mapping[str, torch.Tensor],
    tokenizer,
    out_dir: str | Path,
    *,
    metadata: MaskMetadata | None,
    overwrite: bool = False,
    shrink: bool = False,
    onnx: bool = False,
) -> Path:
    """Bake ``masks`` into ``model`` and save it, the tokenizer and ``srnet_export.json``.

    ``metadata`` describes the masks (``None`` for a dense export with no masks).  With
    ``shrink``, pruned heads and neurons are removed (:func:`srnet.shrink.shrink_model`) and the
    folder also carries ``modeling_srnet.py`` for ``trust_remote_code=True`` loading.  With
    ``onnx``, it also carries ``model.onnx`` (:func:`srnet.onnx_export.export_onnx`: dynamic batch
    and sequence axes, checked against PyTorch's logits; needs ``srnet[onnx]``).

    The folder is written next to ``out_dir`` and renamed into place, so a crash never leaves a
    half-written export.  An existing non-empty ``out_dir`` is replaced only with ``overwrite``.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise SrnetError(f"export folder {out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise SrnetError(f"export folder {out} is not empty (pass overwrite to replace it)")
    if onnx:
        from srnet.onnx_export import require_onnx

        require_onnx()
    weights = expand_masks(model, masks)
    baked = bake_masks(model, weights)
    sparsity, per_matrix = masked_weight_sparsity(baked, weights)
    info = {
        "srnet_export": EXPORT_FORMAT_VERSION,
        "masks": metadata.model_dump() if metadata is not None else None,
        "sparsity": sparsity,
        "per_matrix": per_matrix,
    }
    if shrink:
        from srnet.shrink import SHAPES_KEY, shrink_model

        dense = sum(p.numel() for p in baked.parameters())
        baked = shrink_model(model, masks)
        info["shrunk"] = {
            "parameters": sum(p.numel() for p in baked.parameters()),
            "dense_parameters": dense,
            "linear_shapes": getattr(baked.config, SHAPES_KEY),
        }

    def write(staging: Path) -> None:
        if shrink:
            from srnet.shrink import prepare_remote_code

            prepare_remote_code(baked, staging)
        if onnx:
            from srnet.onnx_export import ONNX_FILENAME, export_onnx

            info["onnx"] = export_onnx(baked, staging / ONNX_FILENAME)
        with quiet_transformers():
            baked.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
        atomic_write_json(staging / EXPORT_INFO_FILENAME, info)

    return atomic_folder(out, write)
