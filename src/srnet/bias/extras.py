"""The per-example arrays a loss (or an objective) reads from the batch, read from their files
once and aligned to the training examples by id: bias log-probs, teacher probs, difficulty."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from srnet.bias.difficulty import load_difficulty
from srnet.bias.predictions import load_bias_log_probs, load_teacher_probs
from srnet.errors import SrnetError
from srnet.losses import BIAS, DIFFICULTY, TEACHER


@dataclass(frozen=True)
class ExtraSources:
    """Where each extra comes from (None: not given) and, for messages, how a user gives it."""

    bias_predictions: str | Path | None = None
    teacher: str | Path | None = None
    difficulty: str | Path | None = None
    spelled: Mapping[str, str] | None = None
    """How each source is spelled where it is given (``{"teacher": "loss.teacher"}`` in a recipe);
    default: the field names."""

    def name(self, field: str) -> str:
        return (self.spelled or {}).get(field, field)


def read_loss_extras(needs: Collection[str], who: Mapping[str, str], ids: Sequence[str],
                     labels: Sequence[str] | None, num_classes: int, sources: ExtraSources,
                     task: str | None = None) -> dict[str, np.ndarray]:
    """The arrays in ``needs`` for the examples ``ids`` ([N, C] or [N]); ``who`` names, per extra,
    what needs it (``"loss 'poe'"``) for the one-line error when its source is missing.
    ``labels``, when given, must match a bias file's header; ``task`` a teacher run's task."""
    extras: dict[str, np.ndarray] = {}
    if BIAS in needs:
        path = _given(sources, "bias_predictions", who[BIAS], "(a `srnet bias fit` file)")
        extras[BIAS] = load_bias_log_probs(path, ids, num_classes, labels=labels)
    if TEACHER in needs:
        path = _given(sources, "teacher",  who[TEACHER],
                      "(a run directory or predictions file of the teacher on the training split)")
        extras[TEACHER] = load_teacher_probs(path, ids, num_classes, task=task)
    if DIFFICULTY in needs:
        extras[DIFFICULTY] = load_difficulty(_given(sources, "difficulty", who[DIFFICULTY],
                                                    "(a difficulty file)"), ids)
    return extras


def _given(sources: ExtraSources, field: str, who: str, what: str) -> str | Path:
    value = getattr(sources, field)
    if not value:
        raise SrnetError(f"{who} needs {sources.name(field)} {what}")
    return value
