"""Shrunk encoders: classifiers whose Linear layers have the shapes left after head/neuron removal.

This module is self-contained (torch and transformers only): ``srnet export --shrink`` copies
it into the export as ``modeling_srnet.py`` and names its classes in ``config.json``'s
``auto_map``, so plain ``transformers`` loads the export with ``trust_remote_code=True``.
``config.srnet_linear_shapes`` maps each resized Linear's qualified name to ``[out, in]``.
A layer with no head (or neuron) left keeps one all-zero unit, which adds nothing.  The config
keeps the backbone's head count.  BERT-style and ModernBERT attention reshape with
``view(..., -1, head_size)``, so their head count follows the weights; DeBERTa-v2/v3 attention
reshapes by its ``num_attention_heads`` attribute, which :func:`resize_linears` sets per layer.
The classes of families srnet has an entry for are named in ``srnet.models.families``.
"""

from __future__ import annotations

from torch import nn
from transformers import (
    BertForSequenceClassification,
    CamembertForSequenceClassification,
    DebertaV2ForSequenceClassification,
    DistilBertForSequenceClassification,
    ElectraForSequenceClassification,
    ModernBertForSequenceClassification,
    RobertaForSequenceClassification,
    XLMRobertaForSequenceClassification,
)

SHAPES_KEY = "srnet_linear_shapes"


def resize_linears(model: nn.Module, shapes: dict[str, list[int]]) -> None:
    """Replace each named ``nn.Linear`` by a fresh one of shape ``[out, in]`` (to be loaded)."""
    for name, (out_features, in_features) in shapes.items():
        parent, _, attr = name.rpartition(".")
        old = model.get_submodule(name)
        new = nn.Linear(in_features, out_features, bias=old.bias is not None,
                        device=old.weight.device, dtype=old.weight.dtype)
        setattr(model.get_submodule(parent), attr, new)
    for module in model.modules():  # DeBERTa-v2/v3: the head count its forward reshapes by
        query = getattr(module, "query_proj", None)
        if isinstance(query, nn.Linear) and getattr(module, "attention_head_size", None):
            module.num_attention_heads = query.out_features // module.attention_head_size
            module.all_head_size = query.out_features


def _shrunk(base: type) -> type:
    def __init__(self, config, *args, **kwargs) -> None:
        base.__init__(self, config, *args, **kwargs)
        resize_linears(self, getattr(config, SHAPES_KEY, None) or {})

    return type(f"Srnet{base.__name__}", (base,), {"__init__": __init__, "__module__": __name__})


SrnetBertForSequenceClassification = _shrunk(BertForSequenceClassification)
SrnetRobertaForSequenceClassification = _shrunk(RobertaForSequenceClassification)
SrnetXLMRobertaForSequenceClassification = _shrunk(XLMRobertaForSequenceClassification)
SrnetCamembertForSequenceClassification = _shrunk(CamembertForSequenceClassification)
SrnetDistilBertForSequenceClassification = _shrunk(DistilBertForSequenceClassification)
SrnetElectraForSequenceClassification = _shrunk(ElectraForSequenceClassification)
SrnetDebertaV2ForSequenceClassification = _shrunk(DebertaV2ForSequenceClassification)
SrnetModernBertForSequenceClassification = _shrunk(ModernBertForSequenceClassification)
