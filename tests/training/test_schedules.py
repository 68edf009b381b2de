"""Sparsity schedules and their configuration."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from srnet.errors import SrnetError
from srnet.pruning import ScheduleConfig
from srnet.sparsity import CubicSchedule, FixedSchedule, StepSchedule


def test_fixed_schedule():
    schedule = FixedSchedule(0.6)
    assert schedule(0) == schedule(10_000) == 0.6


def test_cubic_schedule_end_points_and_formula():
    schedule = CubicSchedule(initial=0.0, final=0.8, start_step=10, end_step=20)
    assert schedule(0) == schedule(10) == 0.0
    assert schedule(20) == schedule(25) == 0.8
    # s_f + (s_i - s_f)(1 - 5/10)^3 = 0.8 - 0.8/8
    assert schedule(15) == pytest.approx(0.7)
    assert schedule(12) == pytest.approx(0.8 - 0.8 * 0.8**3)
    values = [schedule(t) for t in range(0, 30)]
    assert values == sorted(values)


def test_cubic_schedule_from_nonzero_initial():
    schedule = CubicSchedule(initial=0.7, final=0.9, start_step=0, end_step=100)
    assert schedule(0) == 0.7
    assert schedule(50) == pytest.approx(0.9 - 0.2 / 8)
    assert schedule(100) == 0.9


def test_cubic_schedule_start_equals_end_is_a_step():
    schedule = CubicSchedule(0.2, 0.5, 5, 5)
    assert schedule(4) == 0.2 and schedule(5) == 0.5


@pytest.mark.parametrize("bad", [1.0, -0.1])
def test_schedules_reject_bad_sparsity(bad):
    with pytest.raises(SrnetError, match=f"got {bad}"):
        FixedSchedule(bad)
    with pytest.raises(SrnetError, match=f"got {bad}"):
        CubicSchedule(0.0, bad, 0, 10)
    with pytest.raises(SrnetError, match=f"got {bad}"):
        CubicSchedule(bad, 0.5, 0, 10)


def test_cubic_schedule_rejects_end_before_start():
    with pytest.raises(SrnetError, match="end step 5 is before its start step 10"):
        CubicSchedule(0.0, 0.5, 10, 5)
    with pytest.raises(SrnetError, match="-1"):
        CubicSchedule(0.0, 0.5, -1, 5)


def test_step_schedule():
    schedule = StepSchedule(increment=0.1, interval=10, final=0.35)
    assert [schedule(t) for t in (0, 9, 10, 19, 20, 30, 40, 100)] == [
        0.0,
        0.0,
        0.1,
        0.1,
        0.2,
        0.3,
        0.35,
        0.35,
    ]
    assert schedule.events == 4 and schedule.last_event_step == 40
    assert StepSchedule(0.1, 5, 0.3).events == 3
    with pytest.raises(SrnetError, match="got 0"):
        StepSchedule(0.1, 0, 0.5)
    with pytest.raises(SrnetError, match=r"got 0\.0"):
        StepSchedule(0.0, 1, 0.5)


def test_schedule_config_builds_steps_from_fractions():
    cubic = ScheduleConfig(kind="cubic", initial=0.1, start=0.2, end=0.7).build(0.9, 100)
    assert isinstance(cubic, CubicSchedule)
    assert (cubic.start_step, cubic.end_step, cubic.initial, cubic.final) == (20, 70, 0.1, 0.9)
    fixed = ScheduleConfig().build(0.4, 100)
    assert isinstance(fixed, FixedSchedule) and fixed(0) == 0.4


def test_schedule_config_rejects_end_before_start():
    with pytest.raises(ValidationError, match=r"schedule\.end 0\.2 is before schedule\.start 0\.5"):
        ScheduleConfig(kind="cubic", start=0.5, end=0.2)
    with pytest.raises(ValidationError, match=r"got 1\.0"):
        ScheduleConfig(kind="cubic", initial=1.0)
