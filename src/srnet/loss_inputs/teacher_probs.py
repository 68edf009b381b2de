"""``teacher_probs`` [B, C]: a teacher's probabilities (rows sum to 1), from the teacher's run
directory (its ``predictions/train.jsonl``) or a predictions file, read once: the same rows give
the probabilities and the gold labels they are checked against."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from torch import Tensor

from srnet.by_id import prediction_probs, read_prediction_rows
from srnet.errors import SrnetError
from srnet.io import atomic_write_jsonl, read_yaml
from srnet.loss_inputs.base import LossInput, ReadContext, register_input
from srnet.loss_inputs.bias_log_probs import TOLERANCE

TEACHER = "teacher_probs"


@register_input(TEACHER)
class TeacherProbs(LossInput):
    """A teacher's probabilities [B, C] on the training split."""

    source = "teacher"
    what = "(a run directory or predictions file of the teacher on the training split)"

    def read(self, path: str | Path, context: ReadContext) -> np.ndarray:
        """The teacher's ``probs`` for ``context.ids``; its run must be of ``context.task`` and the
        gold labels its rows record must be ``context.golds``."""
        file = teacher_file(path)
        if context.task is not None and file.parent.name == "predictions":
            check_run_task(file.parent.parent, context.task)
        rows = read_prediction_rows(file)
        probs = prediction_probs(rows, file, context.ids, context.num_classes)
        if context.golds is not None:
            check_teacher_golds(file, rows, context.ids, context.golds)
        return probs

    def check(self, owner: str, value: Tensor) -> None:
        in_range = ((value >= 0) & (value <= 1)).all(dim=1)
        bad = ~(in_range & ((value.sum(dim=1) - 1).abs() <= TOLERANCE))
        if bad.any():
            row = int(bad.nonzero()[0])
            raise SrnetError(f"{owner}: teacher_probs row {row} sums to {value[row].sum().item():.4g}; "
                             "expected probabilities")

    def write_dummy(self, path: Path, context: ReadContext, rng: np.random.Generator) -> Path:
        """A predictions file (``id``, ``probs`` and, when known, the ``gold`` label name)."""
        probs = rng.dirichlet(np.ones(context.num_classes), len(context.ids))
        golds = context.golds or [None] * len(context.ids)
        rows = ({"id": i, "probs": p.tolist(), **({"gold": g} if g else {})}
                for i, p, g in zip(context.ids, probs, golds, strict=True))
        return atomic_write_jsonl(path, rows)


def teacher_file(path: str | Path) -> Path:
    """A teacher's predictions file: ``<run>/predictions/train.jsonl`` for a run directory."""
    path = Path(path)
    return path / "predictions" / "train.jsonl" if path.is_dir() else path


def check_run_task(run_dir: Path, task: str) -> None:
    """One line when the teacher run's ``config.yaml`` names another top-level ``task`` (a name,
    or a section with a ``name``)."""
    config = run_dir / "config.yaml"
    if not config.is_file():
        return
    data = read_yaml(config) or {}
    found = data.get("task") if isinstance(data, dict) else None
    if isinstance(found, dict):  # a task section rather than a bare name
        found = found.get("name")
    if found is not None and found != task:
        raise SrnetError(f"teacher run {run_dir} was trained for task '{found}', not '{task}'")


def check_teacher_golds(path: Path, rows: list[dict[str, Any]], ids: Sequence[str],
                        golds: Sequence[str]) -> None:
    """A teacher's predictions that record each example's gold label must agree with the data's:
    otherwise the teacher was predicted on other data, or under another label order."""
    recorded = {str(row["id"]): row["gold"] for row in rows if isinstance(row.get("gold"), str)}
    for example_id, gold in zip(ids, golds, strict=True):
        theirs = recorded.get(example_id)
        if theirs is not None and theirs != gold:
            raise SrnetError(f"{path}: example id '{example_id}' has gold label '{theirs}' there but "
                             f"'{gold}' in the training data: the teacher's predictions are of other "
                             "data or another label order")
