"""What this CPU is, from Linux's ``/proc/cpuinfo``: its model name (run records, cards) and its
feature flags (bf16 autocast, the INT8 kernels ONNX Runtime can use).  Imports nothing heavy."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

CPUINFO = "/proc/cpuinfo"


def cpuinfo_values(keys: tuple[str, ...], cpuinfo: str = CPUINFO) -> list[str]:
    """The values of ``cpuinfo``'s lines whose key is one of ``keys``, in file order (one per
    logical CPU); empty where the file is absent."""
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [value.strip() for line in text.splitlines() for key, _, value in [line.partition(":")]
            if key.strip() in keys]


def cpu_model(cpuinfo: str = CPUINFO) -> str:
    """The CPU's model name: bf16 and int8 kernels, and so the last digits of a run's figures,
    differ between CPUs."""
    names = cpuinfo_values(("model name",), cpuinfo)
    return names[0] if names else platform.processor() or "unknown"


def cpu_flags(cpuinfo: str = CPUINFO) -> frozenset[str]:
    """The CPU feature flags (``flags``, or ARM's ``Features``); empty where the file is absent."""
    values = cpuinfo_values(("flags", "Features"), cpuinfo)
    return frozenset(flag for value in values for flag in value.split())


INT8_FLAGS = {
    "avx2": "AVX2 (int8 dot products through 16-bit intermediates)",
    "avx_vnni": "AVX-VNNI (VNNI on 256-bit registers)",
    "avx512_vnni": "AVX512-VNNI (one-instruction int8 dot products)",
    "amx_int8": "AMX-INT8 (int8 matrix tiles)",
    "asimddp": "Arm dot product (SDOT/UDOT)",
}
"""The CPU flags (``/proc/cpuinfo``) that decide how fast ONNX Runtime's INT8 matrix products run,
slowest x86 path first, in words: without VNNI they multiply through 16-bit intermediates and gain
little over FP32."""
INT8_DOT_PRODUCTS = frozenset(INT8_FLAGS) - {"avx2"}
"""The flags of one-instruction int8 dot products (VNNI, AMX, Arm's dot product)."""


def cpu_int8_features(cpuinfo: str = CPUINFO) -> dict[str, Any]:
    """Which of :data:`INT8_FLAGS` this CPU has (``cpuinfo``: the file listing its flags), and the
    fastest path, in words."""
    flags = cpu_flags(cpuinfo)
    have = [flag for flag in INT8_FLAGS if flag in flags]
    return {"flags": have, "best": INT8_FLAGS[have[-1]] if have else "unknown (no /proc/cpuinfo flags)"}


def has_int8_dot_products(cpuinfo: str = CPUINFO) -> bool:
    """Whether this CPU multiplies int8 in one instruction (:data:`INT8_DOT_PRODUCTS`)."""
    return bool(cpu_flags(cpuinfo) & INT8_DOT_PRODUCTS)
