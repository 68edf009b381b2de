"""Masks as parametrizations, exact sparsity control and sparsity schedules."""

from srnet.sparsity.masks import (
    FixedMask,
    GroupMask,
    HardConcreteMask,
    ScoreMask,
    attach,
    original_weight,
)
from srnet.sparsity.schedules import CubicSchedule, FixedSchedule, Schedule, StepSchedule
from srnet.sparsity.threshold import (
    Scope,
    check_sparsity,
    num_pruned,
    rank,
    sparsity_of,
    topk_keep,
)

__all__ = [
    "CubicSchedule",
    "FixedMask",
    "FixedSchedule",
    "GroupMask",
    "HardConcreteMask",
    "Schedule",
    "Scope",
    "ScoreMask",
    "StepSchedule",
    "attach",
    "check_sparsity",
    "num_pruned",
    "original_weight",
    "rank",
    "sparsity_of",
    "topk_keep",
]
