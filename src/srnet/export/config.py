"""How a model with its masks baked in is written (``srnet export``, a run's final export,
``SrnetTrainer.export``, the sweep's export stage): one settings model, :class:`ExportConfig`."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, model_validator

from srnet.errors import SrnetError
from srnet.settings import VerbConfig


def quantize_checked(config: Any) -> Any:
    """``config`` (an export's or a bench's settings) once its ``quantize`` is a known mode with ``onnx``
    on (the ONNX export's check; a model validator of both)."""
    from srnet.export.onnx import check_quantize

    try:
        check_quantize(config.quantize, config.onnx)
    except SrnetError as exc:
        raise ValueError(str(exc)) from None
    return config


class ExportConfig(VerbConfig):
    """``srnet export``: how a model with its masks baked in is written."""

    shrink: bool = Field(False, description="remove pruned heads and neurons (head/neuron masks); reload "
                         "with srnet.load_model or trust_remote_code=True")
    onnx: bool = Field(False, description="also write model.onnx (dynamic batch and length), checked "
                       "against PyTorch's logits with ONNX Runtime; needs pip install 'srnet[onnx]'")
    quantize: str | None = Field(None, json_schema_extra={"metavar": "MODE"},
                                 description="with --onnx: also write model.int8.onnx, ONNX Runtime's "
                                 "dynamic INT8 with one weight scale per tensor (int8) or per output "
                                 "channel (int8-per-channel), compared with the FP32 graph in "
                                 "srnet_export.json and the model card")

    added_later: ClassVar[dict[str, Any]] = {"quantize": None}
    _quantize = model_validator(mode="after")(quantize_checked)
