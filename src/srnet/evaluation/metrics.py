"""Split metrics from model logits: label-space mapping, accuracy, F1, per-class scores, and the
metrics.json block of one split.

Model classes are mapped into a split's :class:`~srnet.tasks.base.LabelSpace` by name, so a
model's class order never has to match the split's.  Model classes the space's ``from_model``
omits are excluded (FEVER-Symmetric: the argmax runs over SUPPORTS and REFUTES only).  When it
maps several model classes to one split label (HANS: neutral and contradiction ->
non-entailment) two collapse rules exist, and they disagree often on weak or pruned models:

* ``sum``: the merged classes' *probabilities* are summed, then the split's argmax is taken
  (HANS: entailment iff p(entailment) >= 0.5, as the debiasing papers' code does);
* ``argmax``: the model's own argmax is taken, then mapped (what feeding 3-way predictions to the
  official HANS script gives).

All scores are fractions in [0, 1].
"""

from __future__ import annotations

from collections.abc import Sequence
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
from srnet.tasks.spec import LabelScheme

__all__ = [
    "COLLAPSE_RULES",
    "METRICS",
    "accuracy",
    "confusion",
    "evaluate_split",
    "f_bias",
    "hans_prediction_file",
    "macro_f1",
    "per_class",
    "predict",
    "rules_differ",
    "weighted_f1",
]

COLLAPSE_RULES = ("sum", "argmax")
"""How model classes merged into one split label are decided (see the module docstring)."""


def predict(logits: Any, model_labels: Sequence[str], space: LabelSpace, rule: str = "sum") -> np.ndarray:
    """Predicted label indices in ``space`` from logits [N, C_model] (numpy or torch), under the
    collapse ``rule`` (one of :data:`COLLAPSE_RULES`)."""
    if rule not in COLLAPSE_RULES:
        raise SrnetError(f"unknown collapse rule '{rule}'; known: {list(COLLAPSE_RULES)}")
    array = _as_array(logits)
    if array.ndim != 2 or array.shape[1] != len(model_labels):
        raise SrnetError(
            f"logits of shape {tuple(array.shape)} do not match {len(model_labels)} model classes"
        )
    probs = softmax(array, axis=1)
    if rule == "argmax":
        kept = [space.from_model is None or name in space.from_model for name in model_labels]
        choice = np.where(np.array(kept)[None, :], probs, -1.0).argmax(axis=1)
        probs = np.eye(len(model_labels))[choice]
    return space.collapse(probs, model_labels).argmax(axis=1)


def rules_differ(space: LabelSpace) -> bool:
    """Whether the collapse rules can disagree on ``space``: it merges several model classes."""
    targets = list((space.from_model or {}).values())
    return len(set(targets)) < len(targets)


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
    scheme: LabelScheme,
    model_labels: Sequence[str],
    *,
    collapse: str = "sum",
) -> dict[str, Any]:
    """The metrics.json block of one split, scored by its label ``scheme``.

    Keys: ``n``, ``accuracy``, ``macro_f1``, ``weighted_f1``, ``per_class``, ``confusion``, one
    accuracy breakdown per entry of ``scheme.groups`` (each only when every example has its meta
    keys), ``shortcut_gap`` (when the scheme has a shortcut and the examples its meta key) and
    ``primary`` (the scheme's metric).  When the scheme merges model classes
    (:func:`rules_differ`) these use the ``collapse`` rule, which the key ``collapse`` records;
    ``by_rule`` holds the same scores under every rule, and ``rule_disagreement`` counts the
    examples whose prediction differs between the rules.
    """
    if scheme.metric not in METRICS:
        raise SrnetError(f"unknown metric '{scheme.metric}'; known: {sorted(METRICS)}")
    if collapse not in COLLAPSE_RULES:
        raise SrnetError(f"unknown collapse rule '{collapse}'; known: {list(COLLAPSE_RULES)}")
    if not examples:
        raise SrnetError("evaluate_split: no examples")
    array = _as_array(logits)
    if array.shape[0] != len(examples):
        raise SrnetError(f"evaluate_split: {array.shape[0]} rows of logits for {len(examples)} examples")
    gold = np.array([example.label for example in examples])
    if not rules_differ(scheme.space):
        pred = predict(array, model_labels, scheme.space)
        return {"n": len(examples), **_scores(pred, gold, examples, scheme)}
    preds = {rule: predict(array, model_labels, scheme.space, rule) for rule in COLLAPSE_RULES}
    by_rule = {rule: _scores(pred, gold, examples, scheme) for rule, pred in preds.items()}
    return {
        "n": len(examples),
        **by_rule[collapse],
        "collapse": collapse,
        "by_rule": by_rule,
        "rule_disagreement": int((preds["sum"] != preds["argmax"]).sum()),
    }


def _scores(
    pred: np.ndarray, gold: np.ndarray, examples: Sequence[Example], scheme: LabelScheme
) -> dict[str, Any]:
    """Scores, breakdowns, shortcut gap and primary metric of one set of predictions."""
    names = scheme.space.names
    scores: dict[str, Any] = {name: fn(pred, gold) for name, fn in METRICS.items()}
    scores["per_class"] = per_class(pred, gold, names)
    scores["confusion"] = confusion(pred, gold, len(names))
    for name, keys in scheme.groups.items():
        if all(key in example.meta for example in examples for key in keys):
            scores[name] = group_accuracy(pred, gold, examples, keys, names=names)
    shortcut = scheme.shortcut
    if shortcut is not None and all(shortcut.key in example.meta for example in examples):
        table = group_accuracy(pred, gold, examples, (shortcut.key,), names=names)
        gap = shortcut_gap(table, shortcut)  # type: ignore[arg-type]
        if gap is not None:
            scores["shortcut_gap"] = gap
    scores["primary"] = scores[scheme.metric]
    scores.update(collapse_flag(pred, gold, names))
    return scores


COLLAPSE_FRACTION = 0.95
"""A model that puts at least this fraction of a split's predictions in one class has collapsed."""


def collapse_flag(pred: np.ndarray, gold: np.ndarray, names: Sequence[str]) -> dict[str, Any]:
    """``majority``: the most predicted class and its share; ``collapsed``: that share is >=
    :data:`COLLAPSE_FRACTION` while the gold labels are not that skewed (a split whose gold labels
    are >= 95% one class cannot show a collapse).  A collapsed model's shortcut gap near -1 (every
    HANS pair called non-entailment) is no gap reduction."""
    return collapse_from_counts(np.bincount(pred, minlength=len(names)),
                                np.bincount(gold, minlength=len(names)), names)


def collapse_from_counts(predicted: np.ndarray, gold: np.ndarray, names: Sequence[str]) -> dict[str, Any]:
    """:func:`collapse_flag` from per-class counts of predictions and gold labels (e.g. a confusion
    matrix's column and row sums, for results recorded before the flag existed)."""
    predicted, gold = np.asarray(predicted), np.asarray(gold)
    top = int(predicted.argmax())
    share = float(predicted[top] / predicted.sum())
    gold_share = float(gold.max() / gold.sum())
    return {"majority": {"label": names[top], "fraction": share},
            "collapsed": share >= COLLAPSE_FRACTION and gold_share < COLLAPSE_FRACTION}


NEAR_CHANCE_MARGIN = 0.05
"""An ID split whose accuracy is within this of its gold majority class's share is at chance."""


def id_collapse(block: dict[str, Any]) -> dict[str, Any]:
    """The ID-split flags of a ``metrics.json`` block: ``chance`` (the gold majority class's share,
    from the confusion matrix), ``near_chance`` (accuracy below chance + :data:`NEAR_CHANCE_MARGIN`)
    and ``collapsed`` (one-class predictions, or near chance: a model lost by training, as an
    over-driven mask of docs/studies/winwin_calibration_cpu.md that scored its majority class's share)."""
    chance, near = near_chance(block["accuracy"], np.asarray(block["confusion"]).sum(1))
    return {"chance": chance, "near_chance": near, "collapsed": bool(block.get("collapsed") or near)}


def near_chance(accuracy: float, gold_counts: np.ndarray) -> tuple[float, bool]:
    """The chance level of a split with these per-class gold counts (its majority class's share)
    and whether ``accuracy`` is below it + :data:`NEAR_CHANCE_MARGIN`."""
    chance = float(gold_counts.max() / gold_counts.sum())
    return chance, bool(accuracy < chance + NEAR_CHANCE_MARGIN)


def predictions_collapse(pred: np.ndarray, gold: np.ndarray, n_classes: int) -> dict[str, Any]:
    """The collapse flags of one model's predicted class indices against the gold ones: accuracy,
    chance, the majority class's share, and ``collapsed`` (one class, or near chance), the rules the
    run records apply to its ID splits."""
    predicted, counts = np.bincount(pred, minlength=n_classes), np.bincount(gold, minlength=n_classes)
    one_class = collapse_from_counts(predicted, counts, [str(c) for c in range(n_classes)])
    accuracy = float((pred == gold).mean())
    chance, near = near_chance(accuracy, counts)
    return {"accuracy": accuracy, "chance": chance, "majority": one_class["majority"]["fraction"],
            "collapsed": one_class["collapsed"] or near}


def _as_array(values: Any) -> np.ndarray:
    if hasattr(values, "detach"):  # a torch tensor, on any device
        values = values.detach().float().cpu().numpy()
    return np.asarray(values, dtype=np.float64)
