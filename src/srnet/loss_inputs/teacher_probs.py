"""``teacher_probs`` [B, C]: a teacher's probabilities (rows sum to 1), from the teacher's run
directory (its ``predictions/train.jsonl``) or a predictions file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from torch import Tensor

from srnet.bias.predictions import load_teacher_probs
from srnet.errors import SrnetError
from srnet.loss_inputs.base import LossInput, ReadContext, register_input
from srnet.loss_inputs.bias_log_probs import TOLERANCE

TEACHER = "teacher_probs"


@register_input(TEACHER)
class TeacherProbs(LossInput):
    """A teacher's probabilities [B, C] on the training split."""

    source = "teacher"
    what = "(a run directory or predictions file of the teacher on the training split)"

    def read(self, path: str | Path, context: ReadContext) -> np.ndarray:
        return load_teacher_probs(path, context.ids, context.num_classes, task=context.task)

    def check(self, owner: str, value: Tensor) -> None:
        in_range = ((value >= 0) & (value <= 1)).all(dim=1)
        bad = ~(in_range & ((value.sum(dim=1) - 1).abs() <= TOLERANCE))
        if bad.any():
            row = int(bad.nonzero()[0])
            raise SrnetError(f"{owner}: teacher_probs row {row} sums to {value[row].sum().item():.4g}; "
                             "expected probabilities")
