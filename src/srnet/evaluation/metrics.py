"""Split metrics from model logits: label-space mapping, accuracy, F1, per-class scores, and the
metrics.json block of one split.

Model classes are mapped into a split's :class:`~srnet.tasks.base.LabelSpace` by name, so a
model's class order never has to match the split's.  When ``space.from_model`` maps several
model classes to one split label (HANS: neutral and contradiction -> non-entailment) their
*probabilities* are summed; model classes it omits are excluded (FEVER-Symmetric: the argmax
runs over SUPPORTS and REFUTES only).  All scores are fractions in [0, 1].
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.special import softmax
from sklearn.metrics import confusion_matrix, f1_score, precision_recall_fscore_support

from srnet.errors import SrnetError
from srnet.evaluation.challenge import (
    f_bias,
    group_accuracy,
    hans_prediction_file,
    shortcut_gap,
)
from srnet.tasks.base import Example, LabelSpace

__all__ = [
    "DEFAULT_GROUPS",
    "METRICS",
    "accuracy",
    "confusion",
    "evaluate_split",
    "f_bias",
    "hans_prediction_file",
    "macro_f1",
    "per_class",
    "predict",
    "weighted_f1",
]

DEFAULT_GROUPS: Mapping[str, tuple[str, ...]] = {
    "by_heuristic": ("heuristic",),
    "by_subcase": ("subcase",),
}
"""Breakdowns :func:`evaluate_split` adds when every example carries the meta keys (HANS)."""


def predict(logits: Any, model_labels: Sequence[str], space: LabelSpace) -> np.ndarray:
    """Predicted label indices in ``space`` from logits [N, C_model] (numpy or torch)."""
    array = _as_array(logits)
    if array.ndim != 2 or array.shape[1] != len(model_labels):
        raise SrnetError(
            f"logits of shape {tuple(array.shape)} do not match {len(model_labels)} model classes"
        )
    return space.collapse(softmax(array, axis=1), model_labels).argmax(axis=1)


def accuracy(pred: Sequence[int], gold: Sequence[int]) -> float:
    """Fraction of predictions equal to the gold label."""
    return float(np.mean(np.asarray(pred) == np.asarray(gold)))


def macro_f1(pred: Sequence[int], gold: Sequence[int]) -> float:
    """Unweighted mean F1 over the labels that occur in gold or predictions."""
    return float(f1_score(gold, pred, average="macro", zero_division=0))


def weighted_f1(pred: Sequence[int], gold: Sequence[int]) -> float:
    """Mean F1 over labels weighted by gold support."""
    return float(f1_score(gold, pred, average="weighted", zero_division=0))


METRICS = {"accuracy": accuracy, "macro_f1": macro_f1, "weighted_f1": weighted_f1}
"""Names a task or challenge set may give as its primary metric."""


def per_class(pred: Sequence[int], gold: Sequence[int], names: Sequence[str]) -> dict[str, dict[str, float]]:
    """``{name: {precision, recall, f1, support}}`` for every label of the split."""
    precision, recall, f1, support = precision_recall_fscore_support(
        gold, pred, labels=list(range(len(names))), zero_division=0
    )
    return {
        name: {"precision": float(p), "recall": float(r), "f1": float(f), "support": int(s)}
        for name, p, r, f, s in zip(names, precision, recall, f1, support, strict=True)
    }


def confusion(pred: Sequence[int], gold: Sequence[int], n_labels: int) -> list[list[int]]:
    """Confusion counts: row = gold label, column = predicted label."""
    return confusion_matrix(gold, pred, labels=list(range(n_labels))).tolist()


def evaluate_split(
    logits: Any,
    examples: Sequence[Example],
    space: LabelSpace,
    model_labels: Sequence[str],
    metric: str,
    *,
    groups: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """The metrics.json block of one split.

    Keys: ``n``, ``accuracy``, ``macro_f1``, ``weighted_f1``, ``per_class``, ``confusion``,
    ``primary`` (the value of ``metric``), plus one accuracy breakdown per entry of ``groups``
    (default :data:`DEFAULT_GROUPS`, each added only when every example has its meta keys) and,
    with ``by_heuristic`` on an entailment / non-entailment split, ``shortcut_gap``.
    """
    if metric not in METRICS:
        raise SrnetError(f"unknown metric '{metric}'; known: {sorted(METRICS)}")
    if not examples:
        raise SrnetError("evaluate_split: no examples")
    array = _as_array(logits)
    if array.shape[0] != len(examples):
        raise SrnetError(f"evaluate_split: {array.shape[0]} rows of logits for {len(examples)} examples")
    pred = predict(array, model_labels, space)
    gold = np.array([example.label for example in examples])
    scores = {name: fn(pred, gold) for name, fn in METRICS.items()}
    block: dict[str, Any] = {"n": len(examples), **scores}
    block["per_class"] = per_class(pred, gold, space.names)
    block["confusion"] = confusion(pred, gold, len(space.names))
    for name, keys in (DEFAULT_GROUPS if groups is None else groups).items():
        if all(key in example.meta for example in examples for key in keys):
            block[name] = group_accuracy(pred, gold, examples, keys, names=space.names)
    gap = shortcut_gap(block["by_heuristic"]) if "by_heuristic" in block else None
    if gap is not None:
        block["shortcut_gap"] = gap
    block["primary"] = scores[metric]
    return block


def _as_array(values: Any) -> np.ndarray:
    if hasattr(values, "detach"):  # a torch tensor, on any device
        values = values.detach().float().cpu().numpy()
    return np.asarray(values, dtype=np.float64)
