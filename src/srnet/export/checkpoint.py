"""The srnet export folder: write one (:func:`export_model`) and read one back (:func:`load_model`).

An export is a plain Hugging Face checkpoint that ``from_pretrained`` loads as is (masks baked
into the weights by :mod:`srnet.export.bake`), its tokenizer, ``srnet_export.json`` and a model
card (``README.md``, :mod:`srnet.export.card`); with
``shrink`` the pruned heads and neurons are removed (:mod:`srnet.export.shrink`), with ``onnx``
it also carries ``model.onnx`` (:mod:`srnet.export.onnx`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from srnet.errors import SrnetError
from srnet.export.bake import (
    DIGESTS_KEY,
    EXPORT_FORMAT_VERSION,
    EXPORT_INFO_FILENAME,
    WEIGHTS_FILENAME,
    bake_masks,
    masked_weight_sparsity,
    parametrized_modules,
)
from srnet.export.card import CARD_FILENAME, model_card
from srnet.export.config import ExportConfig
from srnet.export.onnx import (
    ONNX_FILENAME,
    export_onnx,
    require_onnx,
    verify_export,
)
from srnet.io import atomic_folder, atomic_write_json, file_sha256
from srnet.models.loading import quiet_transformers
from srnet.sparsity.mask_io import MaskMetadata
from srnet.sparsity.shapes import expand_masks, masked_module

# srnet.export.shrink and srnet.models.shrunk import transformers' model classes (seconds): they
# are imported where a shrunk model is made or loaded, not with this module.


RUN_MARKERS = ("metrics.json", "config.yaml", "stage.json", "sweep.yaml")
"""Files that mark a folder an export must never replace: a run's record, a sweep's."""


def check_export_folder(out_dir: str | Path, overwrite: bool) -> Path:
    """``out_dir`` as a Path, refused when it is a file, or a non-empty folder without ``overwrite``."""
    if not str(out_dir).strip():
        raise SrnetError("export folder '': give a folder name")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise SrnetError(f"export folder {out} exists and is not a folder")
    if out.resolve() == Path.cwd().resolve():
        raise SrnetError(f"export folder {out} is the working directory; give a new folder")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise SrnetError(f"export folder {out} is not empty (pass overwrite to replace it)")
    if any((out / marker).is_file() for marker in RUN_MARKERS):
        raise SrnetError(f"export folder {out} is an srnet run folder; an export never replaces a run "
                         "(give another folder)")
    return out


def export_model(
    model: nn.Module,
    masks: Mapping[str, torch.Tensor],
    tokenizer,
    out_dir: str | Path,
    *,
    metadata: MaskMetadata | None,
    overwrite: bool = False,
    config: ExportConfig | None = None,
    baked: nn.Module | None = None,
    metrics: Mapping[str, Any] | None = None,
    attacks: Mapping[str, Mapping[str, Any]] | None = None,
    recipe: Mapping[str, Any] | None = None,
) -> Path:
    """Bake ``masks`` into ``model`` and save it, the tokenizer and ``srnet_export.json``.

    ``metadata`` describes the masks (``None`` for a dense export with no masks).  ``baked`` is
    ``bake_masks(model, masks)`` when the caller has it already (a run bakes once to evaluate
    the final model): it is saved as it is, not baked again, once it is checked to carry no
    parametrization and to hold a zero wherever ``masks`` prunes.  ``config`` (default: a plain
    checkpoint) says what else is written: ``shrink`` removes pruned heads and neurons and adds
    ``modeling_srnet.py`` (``trust_remote_code=True``); ``onnx`` writes ``model.onnx`` (checked
    against PyTorch), ``quantize`` ``model.int8.onnx`` beside it.  ``srnet_export.json`` records
    the SHA-256 of every file but itself and the card, which every loader checks
    (:func:`srnet.export.onnx.verify_export`).  The card states the pruning and, when given, the
    run's ``metrics``, ``attacks`` and ``recipe``.  The folder is written beside ``out_dir`` and
    renamed into place; a non-empty ``out_dir`` is replaced only with ``overwrite``."""
    config = config if config is not None else ExportConfig()
    if not isinstance(config, ExportConfig):
        raise TypeError(f"config: expected an ExportConfig, got {type(config).__name__}")
    shrink, onnx, quantize = config.shrink, config.onnx, config.quantize
    out = check_export_folder(out_dir, overwrite)
    if onnx:
        require_onnx()
    weights = expand_masks(model, masks)
    if baked is None:
        baked = bake_masks(model, weights)
    else:
        check_baked(baked, weights)
    info = _export_info(baked, weights, metadata, recipe)
    if shrink:
        baked = _shrunk(model, masks, baked, info)

    def write(staging: Path) -> None:
        if shrink:
            from srnet.export.shrink import prepare_remote_code

            prepare_remote_code(baked, staging)
        if onnx:
            info["onnx"] = export_onnx(baked, staging / ONNX_FILENAME, quantize)
        with quiet_transformers():
            baked.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
        info[DIGESTS_KEY] = shipped_digests(staging)
        atomic_write_json(staging / EXPORT_INFO_FILENAME, info)
        card = model_card(info, metrics=metrics, attacks=attacks, recipe=recipe)
        (staging / CARD_FILENAME).write_text(card, encoding="utf-8")

    return atomic_folder(out, write)


def _export_info(baked: nn.Module, weights: Mapping[str, torch.Tensor], metadata: MaskMetadata | None,
                 recipe: Mapping[str, Any] | None) -> dict[str, Any]:
    """``srnet_export.json``'s masks, measured sparsity and (with a recipe) what trained it."""
    sparsity, per_matrix = masked_weight_sparsity(baked, weights)
    info: dict[str, Any] = {
        "srnet_export": EXPORT_FORMAT_VERSION,
        "masks": metadata.model_dump() if metadata is not None else None,
        "sparsity": sparsity,
        "per_matrix": per_matrix,
    }
    if recipe is not None:  # what an evaluation of this export is labelled with (never its zeros)
        info["trained"] = {"loss": (recipe.get("loss") or {}).get("name"),
                           "method": (recipe.get("pruning") or {}).get("method")}
    return info


def _shrunk(model: nn.Module, masks: Mapping[str, torch.Tensor], baked: nn.Module,
            info: dict[str, Any]) -> nn.Module:
    """``model`` with its pruned heads and neurons removed; ``info["shrunk"]`` says how much."""
    from srnet.export.shrink import KEPT_KEY, SHAPES_KEY, shrink_model

    dense = sum(p.numel() for p in baked.parameters())
    small = shrink_model(model, masks)
    info["shrunk"] = {
        "parameters": sum(p.numel() for p in small.parameters()),
        "dense_parameters": dense,
        "linear_shapes": getattr(small.config, SHAPES_KEY),
        "kept_units": getattr(small.config, KEPT_KEY),
    }
    return small


def shipped_digests(folder: Path) -> dict[str, str]:
    """``{file name: SHA-256}`` of every file in ``folder``: the weights, ``config.json`` (its
    ``auto_map`` already set), the tokenizer's files, ``modeling_srnet.py`` and the graphs, each in its
    final form (the record and the model card, written after, are not among them)."""
    return {path.name: file_sha256(path) for path in sorted(folder.iterdir()) if path.is_file()}


def check_baked(baked: nn.Module, weights: Mapping[str, torch.Tensor]) -> None:
    """Refuse a model handed to :func:`export_model` as baked that is not: a parametrization
    left on it, or a non-zero weight where a (per-weight) mask of ``weights`` prunes."""
    leftover = parametrized_modules(baked)
    if leftover:
        raise SrnetError(
            f"the model given as baked still has a mask on '{leftover[0]}'; pass the masked model "
            f"without baked= (or bake it with srnet.export.bake_masks)"
        )
    for name, mask in weights.items():
        weight = masked_module(baked, name).weight.detach()
        if weight.shape != mask.shape:
            raise SrnetError(
                f"the model given as baked does not match the masks: weight '{name}' has shape "
                f"{tuple(weight.shape)} but its mask has shape {tuple(mask.shape)}"
            )
        if bool(weight[~mask.to(device=weight.device, dtype=torch.bool)].any()):
            raise SrnetError(
                f"the model given as baked does not match the masks: weight '{name}' is not zero "
                f"where its mask prunes (bake it with srnet.export.bake_masks(model, masks))"
            )


def load_model(path: str | Path) -> nn.Module:
    """Load an srnet export (shrunk or not) in eval mode, rebuilding per-layer shapes, strictly.

    Its files are first checked against the SHA-256s its ``srnet_export.json`` records
    (:func:`srnet.export.onnx.verify_export`).  A weight that is missing, unexpected or of another
    shape than the export's metadata says is an error naming the first such tensor.
    """
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForSequenceClassification

    from srnet.models.shrunk import SHAPES_KEY, resize_linears

    folder = Path(path)
    verify_export(folder)  # every file it records, before any is read
    if not (folder / EXPORT_INFO_FILENAME).is_file():
        raise SrnetError(f"{folder}: not an srnet export (no {EXPORT_INFO_FILENAME})")
    weights_file = folder / WEIGHTS_FILENAME
    if not weights_file.is_file():
        raise SrnetError(f"{folder}: no model.safetensors (sharded exports are not supported)")
    with quiet_transformers():
        config = AutoConfig.from_pretrained(folder)
        model = AutoModelForSequenceClassification.from_config(config, trust_remote_code=False)
    resize_linears(model, getattr(config, SHAPES_KEY, None) or {})
    state = load_file(str(weights_file))
    expected = model.state_dict()
    for key, tensor in expected.items():
        if key not in state:
            raise SrnetError(f"{weights_file}: weight '{key}' is missing")
        if tuple(state[key].shape) != tuple(tensor.shape):
            raise SrnetError(
                f"{weights_file}: weight '{key}' has shape {tuple(state[key].shape)} but the "
                f"export's metadata gives {tuple(tensor.shape)}"
            )
    extra = [key for key in state if key not in expected]
    if extra:
        raise SrnetError(f"{weights_file}: weight '{extra[0]}' is not part of this model")
    model.load_state_dict(state, strict=True)
    return model.eval()
