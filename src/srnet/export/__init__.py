"""Export a masked model as a plain Hugging Face checkpoint, optionally shrunk and as ONNX.

Modules, each importing only those above it in this list::

    runtimes.py         the runtimes (torch, onnx, onnx-int8, onnx-int8-per-channel) and the INT8
                        mode each scores with; bench row names (no torch)
    bake.py             bake_masks: masks multiplied into a copy's weights; the export format's
                        constants (srnet_export.json)
    shrink.py           shrink_model: pruned heads and neurons removed from the weights (the
                        shrunk classes: srnet.models.shrunk, copied into shrunk exports as
                        modeling_srnet.py for trust_remote_code=True)
    onnx.py             model.onnx and its check against PyTorch; ONNX Runtime sessions;
                        verify_export: an export's files against its recorded SHA-256s
    config.py           ExportConfig: how an export is written (shrink, ONNX, INT8)
    checkpoint.py       export_model (bake, shrink, ONNX, save) and load_model


Every name loads on first use, not with this package: the package imports no torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from srnet.export.bake import (
        EXPORT_FORMAT_VERSION,
        EXPORT_INFO_FILENAME,
        bake_masks,
        masked_weight_sparsity,
    )
    from srnet.export.checkpoint import check_baked, export_model, load_model
    from srnet.export.config import ExportConfig
    from srnet.export.onnx import ONNX_FILENAME, export_onnx, require_onnx, verify_export
    from srnet.export.shrink import MODELING_FILENAME, prepare_remote_code, shrink_model
    from srnet.models.shrunk import SHAPES_KEY

_LAZY = {
    "EXPORT_FORMAT_VERSION": "srnet.export.bake",
    "EXPORT_INFO_FILENAME": "srnet.export.bake",
    "bake_masks": "srnet.export.bake",
    "masked_weight_sparsity": "srnet.export.bake",
    "check_baked": "srnet.export.checkpoint",
    "export_model": "srnet.export.checkpoint",
    "load_model": "srnet.export.checkpoint",
    "ExportConfig": "srnet.export.config",
    "ONNX_FILENAME": "srnet.export.onnx",
    "export_onnx": "srnet.export.onnx",
    "require_onnx": "srnet.export.onnx",
    "verify_export": "srnet.export.onnx",
    "MODELING_FILENAME": "srnet.export.shrink",
    "prepare_remote_code": "srnet.export.shrink",
    "shrink_model": "srnet.export.shrink",
    "SHAPES_KEY": "srnet.models.shrunk",
}
"""Every public name -> its module, imported on first use (the package itself imports no torch, so
the CLI's parser can read :class:`ExportConfig`)."""

__all__ = [
    "EXPORT_FORMAT_VERSION",
    "EXPORT_INFO_FILENAME",
    "MODELING_FILENAME",
    "ONNX_FILENAME",
    "SHAPES_KEY",
    "ExportConfig",
    "bake_masks",
    "check_baked",
    "export_model",
    "export_onnx",
    "load_model",
    "masked_weight_sparsity",
    "prepare_remote_code",
    "require_onnx",
    "shrink_model",
    "verify_export",
]


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'srnet.export' has no attribute {name!r}")
