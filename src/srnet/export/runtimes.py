"""The runtimes a model is scored and timed under and the INT8 quantization each one uses: one
table that evaluation (``evaluation.runtime``), export (``--quantize``), bench (row names) and
``srnet compress`` (``--runtime``) all read.  Imports no torch."""

from __future__ import annotations

QUANTIZE_MODES: dict[str, str] = {
    "int8": "dynamic (QInt8 weights, one scale per tensor)",
    "int8-per-channel": "dynamic (QInt8 weights, one scale per output channel)",
}
"""ONNX Runtime's dynamic quantization (int8 weights of the MatMul/Gemm layers, activations
quantized per batch at run time), by mode name: what ``srnet_export.json`` records as ``mode``."""

RUNTIME_QUANTIZE: dict[str, str | None] = {
    "torch": None,
    "onnx": None,
    "onnx-int8": "int8",
    "onnx-int8-per-channel": "int8-per-channel",
}
"""Every runtime by name, and the :data:`QUANTIZE_MODES` entry it scores with (None: FP32)."""

RUNTIMES = tuple(RUNTIME_QUANTIZE)
AUTO_INT8 = "onnx-int8-per-channel"
"""What ``srnet compress --runtime auto`` picks where it can: the route its MNLI study measured at
>= 2x dense with the reference's accuracy (docs/studies/compress_mnli_cpu.md)."""


def known_runtime(value: str, flag: str, also: tuple[str, ...] = ()) -> str:
    """``value`` when it names a runtime (or one of ``also``); else a ValueError naming ``flag`` and
    the choices (the one line a config validator gives)."""
    if value not in (*also, *RUNTIMES):
        raise ValueError(f"{flag} {value}: not one of {', '.join((*also, *RUNTIMES))}")
    return value


def auto_runtime() -> tuple[str, str]:
    """(runtime, why) for ``--runtime auto``: :data:`AUTO_INT8` where ONNX Runtime and onnx are
    installed and this CPU has one-instruction int8 dot products, else ``torch`` (INT8 without
    them gains little over FP32)."""
    from importlib.util import find_spec

    from srnet import machine

    if find_spec("onnxruntime") is None or find_spec("onnx") is None:
        return "torch", "ONNX Runtime is not installed (pip install 'srnet[onnx]')"
    if not machine.has_int8_dot_products():
        return "torch", "this CPU has no int8 dot-product instructions (VNNI, AMX, Arm dotprod)"
    return AUTO_INT8, "ONNX Runtime is installed and this CPU has int8 dot-product instructions"


def runtime_quantize(runtime: str) -> str | None:
    """The quantization ``runtime`` scores with (``int8`` for ``onnx-int8``), or None for FP32."""
    return RUNTIME_QUANTIZE[runtime]


def bench_runtime(runtime: str) -> str:
    """The ``runtime`` column of the bench rows that time ``runtime``: ``torch``, ``onnxruntime`` or
    ``onnxruntime-<mode>``."""
    if runtime == "torch":
        return "torch"
    quantize = runtime_quantize(runtime)
    return "onnxruntime" if quantize is None else f"onnxruntime-{quantize}"
