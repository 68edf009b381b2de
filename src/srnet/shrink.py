"""Physical shrinking: remove pruned attention heads and FFN neurons from the weights, and reload.

A head's rows of Q, K and V and its columns of the attention output are sliced away (BERT-style
attention reshapes with ``view(..., -1, head_size)``, so the head count follows the weights); a
neuron's row of FFN-in and column of FFN-out likewise.  The shrunk model computes what the masked
model computes: a pruned unit's output only ever reached the residual stream through its masked
columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import torch
from torch import nn

from srnet.errors import SrnetError
from srnet.export import EXPORT_INFO_FILENAME, bake_masks
from srnet.models import quiet_transformers
from srnet.shrunk_modeling import SHAPES_KEY, SHRUNK_CLASSES, resize_linears

__all__ = ["SHAPES_KEY", "load_model", "prepare_remote_code", "shrink_model"]
from srnet.sparsity.mask_io import expand_masks, model_groups

MODELING_FILENAME = "modeling_srnet.py"


def shrink_model(model: nn.Module, masks: Mapping[str, torch.Tensor]) -> nn.Module:
    """A plain copy of ``model`` without the heads and neurons that ``masks`` (group gates) prune.

    ``config.srnet_linear_shapes`` records the new shapes.  Unstructured masks are refused.
    """
    groups = model_groups(model)
    loose = [name for name in masks if name not in groups]
    if loose or not masks:
        raise SrnetError(
            f"cannot shrink: mask '{loose[0] if loose else ''}' is unstructured; only masks over whole "
            f"heads and neurons (granularity head, neuron or head+neuron) free rows and columns to "
            f"remove, scattered zeros leave every matrix its full size"
        )
    baked = bake_masks(model, expand_masks(model, masks))
    shapes: dict[str, list[int]] = {}
    weights: dict[str, tuple[torch.Tensor, torch.Tensor | None]] = {}
    for name, gate in masks.items():
        kept = torch.nonzero(gate.bool().cpu()).squeeze(1)
        empty = kept.numel() == 0
        kept = torch.zeros(1, dtype=torch.long) if empty else kept  # keep one unit, zeroed below
        for member in groups[name].members:
            module = baked.get_submodule(member.name)
            rows = (kept[:, None] * member.width + torch.arange(member.width)).reshape(-1)
            weight = module.weight.detach().index_select(member.axis, rows.to(module.weight.device))
            bias = module.bias.detach() if module.bias is not None else None
            if bias is not None and member.axis == 0:
                bias = bias.index_select(0, rows.to(bias.device))
            if empty:
                weight = torch.zeros_like(weight)
                bias = torch.zeros_like(bias) if bias is not None and member.axis == 0 else bias
            shapes[member.name] = list(weight.shape)
            weights[member.name] = (weight, bias)
    resize_linears(baked, shapes)
    with torch.no_grad():
        for name, (weight, bias) in weights.items():
            module = baked.get_submodule(name)
            module.weight.copy_(weight)
            if bias is not None:
                module.bias.copy_(bias)
    setattr(baked.config, SHAPES_KEY, shapes)
    return baked


def prepare_remote_code(model: nn.Module, folder: Path) -> None:
    """Name the shrunk class in the config's ``auto_map`` and write its modeling file to ``folder``."""
    family = model.config.model_type
    model.config.auto_map = {
        "AutoModelForSequenceClassification": f"modeling_srnet.{SHRUNK_CLASSES[family].__name__}"
    }
    source = Path(__file__).with_name("shrunk_modeling.py").read_text()
    (folder / MODELING_FILENAME).write_text(source)


def load_model(path: str | Path) -> nn.Module:
    """Load an srnet export (shrunk or not) in eval mode, rebuilding per-layer shapes, strictly.

    A weight that is missing, unexpected or of another shape than the export's metadata says is
    an error naming the first such tensor.
    """
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForSequenceClassification

    folder = Path(path)
    info_file = folder / EXPORT_INFO_FILENAME
    if not info_file.is_file():
        raise SrnetError(f"{folder}: not an srnet export (no {EXPORT_INFO_FILENAME})")
    weights_file = folder / "model.safetensors"
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

