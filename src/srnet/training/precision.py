"""Which mixed precision a run trains in: ``training.mixed_precision`` resolved for this hardware.

``auto`` picks bf16 where the hardware computes it natively (a CUDA GPU that supports bf16, or a
CPU whose flags include ``avx512_bf16``, ``amx_bf16`` or, on ARM, ``bf16``) and fp32 elsewhere.
An explicit ``bf16`` or ``fp16`` on hardware without it is refused before any model loads: an
emulated bf16 CPU step is slower than fp32, and Accelerate's fp16 needs a GPU.
"""

from __future__ import annotations

from functools import cache

import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState

from srnet.errors import SrnetError
from srnet.machine import cpu_flags

CPU_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})


@cache
def cpu_has_native_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether this CPU advertises native bf16 arithmetic (Linux ``/proc/cpuinfo`` flags)."""
    return bool(CPU_BF16_FLAGS & cpu_flags(cpuinfo))


def native_bf16() -> bool:
    """Whether the device a run trains on (CUDA when available, else the CPU) has native bf16."""
    if torch.cuda.is_available():
        return torch.cuda.is_bf16_supported()
    return cpu_has_native_bf16()


def resolve_mixed_precision(requested: str) -> str:
    """Accelerate's ``mixed_precision`` for ``requested`` (``auto``, ``no``, ``bf16``, ``fp16``)."""
    if requested == "auto":
        return "bf16" if native_bf16() else "no"
    if requested == "bf16" and not native_bf16():
        where = "this GPU" if torch.cuda.is_available() else "this CPU (no avx512_bf16/amx_bf16 flag)"
        raise SrnetError(f"training.mixed_precision: bf16 is not native on {where}; use 'auto' or 'no'")
    if requested == "fp16" and not torch.cuda.is_available():
        raise SrnetError("training.mixed_precision: fp16 needs a CUDA GPU; use 'auto', 'bf16' or 'no'")
    return requested


def make_accelerator(precision: str, grad_accum: int) -> Accelerator:
    """An Accelerator in ``precision`` (a resolved value).  Accelerate keeps one process-wide
    state and refuses a second precision; runs in one process (the Python API, tests) may each
    ask for their own, so a state set up in another precision is reset first."""
    shared = AcceleratorState._shared_state
    if shared and shared.get("_mixed_precision") != precision:
        AcceleratorState._reset_state()  # the process group (PartialState) is kept
    return Accelerator(mixed_precision=precision, gradient_accumulation_steps=grad_accum,
                       cpu=not torch.cuda.is_available())
