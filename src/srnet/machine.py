"""What this CPU is, from Linux's ``/proc/cpuinfo``: its model name (run records, cards) and its
feature flags (bf16 autocast, the INT8 kernels ONNX Runtime can use).  Imports nothing heavy."""

from __future__ import annotations

import platform
from pathlib import Path

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
