"""The runtimes a model is scored and timed under: one typed table (:data:`RUNTIMES`) that
evaluation (``evaluation.runtime``), export (``--quantize``), bench (row labels) and ``srnet
compress`` (``--runtime``) all read.  Code asks a :class:`Runtime` row what it needs (an ONNX graph,
a quantization mode, a bench label) and never branches on a runtime's name.  Imports no torch."""

from __future__ import annotations

from dataclasses import dataclass

QUANTIZE_MODES: dict[str, str] = {
    "int8": "dynamic (QInt8 weights, one scale per tensor)",
    "int8-per-channel": "dynamic (QInt8 weights, one scale per output channel)",
}
"""ONNX Runtime's dynamic quantization (int8 weights of the MatMul/Gemm layers, activations
quantized per batch at run time), by mode name: what ``srnet_export.json`` records as ``mode``."""


@dataclass(frozen=True)
class Runtime:
    """One runtime: the engine that runs the model and the INT8 mode of its graph (None: FP32)."""

    name: str
    engine: str
    """``torch`` (the model as loaded) or ``onnxruntime`` (an ONNX graph under ONNX Runtime)."""
    quantize: str | None = None

    @property
    def needs_onnx(self) -> bool:
        """Whether scoring or timing it needs an ONNX graph (and the srnet[onnx] extra)."""
        return self.engine == "onnxruntime"

    @property
    def int8(self) -> bool:
        return self.quantize is not None

    @property
    def bench_label(self) -> str:
        """The ``runtime`` column of the bench rows that time it: ``torch``, ``onnxruntime`` or
        ``onnxruntime-<mode>``."""
        return self.engine if self.quantize is None else f"{self.engine}-{self.quantize}"

    @property
    def export_flags(self) -> dict[str, object]:
        """What an export needs to ship its graph: ``{"onnx": bool, "quantize": mode or None}``."""
        return {"onnx": self.needs_onnx, "quantize": self.quantize}


RUNTIMES: dict[str, Runtime] = {
    row.name: row
    for row in (
        Runtime("torch", "torch"),
        Runtime("onnx", "onnxruntime"),
        Runtime("onnx-int8", "onnxruntime", "int8"),
        Runtime("onnx-int8-per-channel", "onnxruntime", "int8-per-channel"),
    )
}
"""Every runtime by name."""

TORCH = RUNTIMES["torch"]
"""The reference every speed-up is taken against: the model in PyTorch FP32."""
AUTO_INT8 = "onnx-int8-per-channel"
"""What ``srnet compress --runtime auto`` picks where it can: the route its MNLI study measured at
>= 2x dense with the reference's accuracy (docs/studies/compress_mnli_cpu.md)."""


def get_runtime(name: str) -> Runtime:
    """The row of ``name`` (a KeyError-free lookup: unknown names are refused by :func:`known_runtime`)."""
    return RUNTIMES[known_runtime(name, "runtime")]


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
    return get_runtime(runtime).quantize


def bench_runtime(runtime: str) -> str:
    """The bench row label of ``runtime`` (:attr:`Runtime.bench_label`)."""
    return get_runtime(runtime).bench_label
