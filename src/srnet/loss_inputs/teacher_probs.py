"""``teacher_probs`` [B, C]: a teacher's probabilities (rows sum to 1), from the teacher's run
directory (its ``predictions/train.jsonl``) or a predictions file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from torch import Tensor

from srnet.bias.predictions import load_teacher_probs, teacher_golds
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
        probs = load_teacher_probs(path, context.ids, context.num_classes, task=context.task)
        if context.golds is not None:
            check_teacher_golds(path, context.ids, context.golds)
        return probs

    def check(self, owner: str, value: Tensor) -> None:
        in_range = ((value >= 0) & (value <= 1)).all(dim=1)
        bad = ~(in_range & ((value.sum(dim=1) - 1).abs() <= TOLERANCE))
        if bad.any():
            row = int(bad.nonzero()[0])
            raise SrnetError(f"{owner}: teacher_probs row {row} sums to {value[row].sum().item():.4g}; "
                             "expected probabilities")


def check_teacher_golds(path: str | Path, ids: Sequence[str], golds: Sequence[str]) -> None:
    """A teacher's predictions that record each example's gold label must agree with the data's:
    otherwise the teacher was predicted on other data, or under another label order."""
    recorded = teacher_golds(path)
    for example_id, gold in zip(ids, golds, strict=True):
        theirs = recorded.get(example_id)
        if theirs is not None and theirs != gold:
            raise SrnetError(f"{path}: example id '{example_id}' has gold label '{theirs}' there but "
                             f"'{gold}' in the training data: the teacher's predictions are of other "
                             "data or another label order")
