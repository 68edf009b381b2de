"""Sparsity schedules: the target sparsity at an optimizer step, usable by any method."""

from __future__ import annotations

import math
from typing import Protocol

from srnet.errors import SrnetError
from srnet.sparsity.threshold import check_sparsity


class Schedule(Protocol):
    """Maps an optimizer step (0 = before training) to a target sparsity in [0, 1)."""

    def __call__(self, step: int) -> float: ...


class FixedSchedule:
    """The same sparsity at every step."""

    def __init__(self, sparsity: float) -> None:
        self.sparsity = check_sparsity(sparsity)

    def __call__(self, step: int) -> float:
        return self.sparsity


class CubicSchedule:
    """Gradual pruning (Zhu & Gupta 2017): s_t = s_f + (s_i - s_f)(1 - (t - t0)/(T - t0))^3.

    ``initial`` before ``start_step``, ``final`` from ``end_step`` on.
    """

    def __init__(self, initial: float, final: float, start_step: int, end_step: int) -> None:
        self.initial = check_sparsity(initial, "initial sparsity")
        self.final = check_sparsity(final, "final sparsity")
        if start_step < 0:
            raise SrnetError(f"cubic schedule start step must be >= 0, got {start_step}")
        if end_step < start_step:
            raise SrnetError(f"cubic schedule end step {end_step} is before its start step {start_step}")
        self.start_step, self.end_step = start_step, end_step

    def __call__(self, step: int) -> float:
        if step >= self.end_step:
            return self.final
        if step <= self.start_step:
            return self.initial
        left = 1 - (step - self.start_step) / (self.end_step - self.start_step)
        return self.final + (self.initial - self.final) * left**3


class StepSchedule:
    """Iterative pruning: ``increment`` more sparsity every ``interval`` steps, up to ``final``."""

    def __init__(self, increment: float, interval: int, final: float) -> None:
        if not 0.0 < increment <= 1.0:
            raise SrnetError(f"pruning increment must be in (0, 1], got {increment}")
        if interval < 1:
            raise SrnetError(f"pruning interval must be >= 1 step, got {interval}")
        self.increment, self.interval = increment, interval
        self.final = check_sparsity(final)

    @property
    def events(self) -> int:
        """How many pruning events reach ``final``."""
        return math.ceil(self.final / self.increment - 1e-9)

    @property
    def last_event_step(self) -> int:
        return self.events * self.interval

    def __call__(self, step: int) -> float:
        done = min(step // self.interval, self.events)
        return min(round(done * self.increment, 12), self.final)
