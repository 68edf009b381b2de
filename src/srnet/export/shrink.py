"""Physical shrinking: remove pruned attention heads and FFN neurons from the weights, and reload.

A head's rows of Q, K and V (in a fused Q/K/V matrix, its rows in each part) and its columns of
the attention output are sliced away; a neuron's row of FFN-in (both halves of a GLU's) and column
of FFN-out likewise (:mod:`srnet.models.shrunk` says how each family follows the new shapes).
The shrunk model computes what the masked model computes: a pruned unit's output only ever
reached the residual stream through its masked columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import torch
from torch import nn

from srnet.errors import SrnetError
from srnet.export.bake import bake_masks
from srnet.models import shrunk as shrunk_modeling
from srnet.models.families import shrunk_class_name
from srnet.models.shrunk import SHAPES_KEY, resize_linears
from srnet.sparsity.shapes import expand_masks, model_groups

__all__ = ["KEPT_KEY", "MODELING_FILENAME", "SHAPES_KEY", "prepare_remote_code", "shrink_model"]

MODELING_FILENAME = "modeling_srnet.py"
KEPT_KEY = "srnet_kept_units"


def shrink_model(model: nn.Module, masks: Mapping[str, torch.Tensor]) -> nn.Module:
    """A plain copy of ``model`` without the heads and neurons that ``masks`` (group gates) prune.

    ``config.srnet_linear_shapes`` records the new shapes and ``config.srnet_kept_units`` the heads
    (neurons) each layer keeps; ``num_attention_heads`` and ``intermediate_size`` stay the
    backbone's (the forward reshapes by head size).  Unstructured masks are refused.
    """
    shrunk_class = getattr(shrunk_modeling, shrunk_class_name(getattr(model.config, "model_type",
                                                                      type(model).__name__)))
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
            rows = member.indices(kept, groups[name].count)
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
    baked.__class__ = shrunk_class  # what it now is (saved as architectures)
    setattr(baked.config, SHAPES_KEY, shapes)
    setattr(baked.config, KEPT_KEY, {name: int(gate.bool().sum()) for name, gate in sorted(masks.items())})
    return baked


def prepare_remote_code(model: nn.Module, folder: Path) -> None:
    """Name the shrunk class in the config (``architectures`` and ``auto_map``) and write its
    modeling file to ``folder``."""
    name = shrunk_class_name(model.config.model_type)
    model.config.architectures = [name]
    model.config.auto_map = {"AutoModelForSequenceClassification": f"modeling_srnet.{name}"}
    source = Path(shrunk_modeling.__file__).read_text()  # self-contained: torch and transformers only
    (folder / MODELING_FILENAME).write_text(source)

