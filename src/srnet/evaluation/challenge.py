"""Challenge-set breakdowns: accuracy by meta group x gold label, the shortcut gap, F_bias, and
official scorers' prediction files (HANS's).

All accuracies and gaps are fractions in [0, 1] (a shortcut gap of 0.9 is "90 points").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from srnet.errors import SrnetError
from srnet.tasks.base import Example, LabelSpace
from srnet.tasks.spec import Shortcut

Nested = dict[str, "Nested | float"]


def group_accuracy(
    pred: Sequence[int],
    gold: Sequence[int],
    examples: Sequence[Example],
    keys: Sequence[str] = ("heuristic",),
    *,
    names: Sequence[str] | None = None,
) -> Nested:
    """Accuracy nested by the values of ``meta[key]`` for each key, then by gold label.

    E.g. ``{"lexical_overlap": {"entailment": 0.98, "non-entailment": 0.1}, ...}``.  Gold labels
    are keyed by ``names`` (their index when not given); groups are sorted by name (the same order
    whatever the examples' order) and labels keep their index order.  Examples without one of the
    keys are left out.
    """
    if not len(pred) == len(gold) == len(examples):
        raise SrnetError(
            f"group_accuracy: {len(pred)} predictions, {len(gold)} labels, {len(examples)} examples"
        )
    tallies: dict[tuple[str, ...], dict[int, list[int]]] = {}
    for p, g, example in zip(pred, gold, examples, strict=True):
        if all(key in example.meta for key in keys):
            tally = tallies.setdefault(tuple(example.meta[k] for k in keys), {}).setdefault(int(g), [0, 0])
            tally[0] += int(p == g)
            tally[1] += 1
    out: Nested = {}
    for group, by_label in sorted(tallies.items()):
        node = out
        for part in group:
            node = node.setdefault(part, {})  # type: ignore[assignment]
        for g in sorted(by_label):
            right, total = by_label[g]
            node[names[g] if names is not None else str(g)] = right / total
    return out


def shortcut_gap(by_heuristic: Mapping[str, Mapping[str, float]], shortcut: Shortcut) -> float | None:
    """Mean accuracy on ``shortcut.follows`` minus mean on ``shortcut.against``, over the
    shortcut's heuristics that have both accuracies in ``by_heuristic``.

    For HANS this is the entailment minus non-entailment accuracy averaged over the three
    heuristics: near 0.9 for a model that follows the lexical-overlap shortcut, near 0 for one
    that does not.  Other heuristics (e.g. the synthetic ``synonym``, whose shortcut points the
    other way) are ignored.  None when no heuristic has both accuracies.
    """
    pos, neg = shortcut.follows, shortcut.against
    used = [h for h in shortcut.heuristics if {pos, neg} <= set(by_heuristic.get(h, {}))]
    if not used:
        return None
    return sum(by_heuristic[h][pos] - by_heuristic[h][neg] for h in used) / len(used)


def f_bias(dev_score: float, ood_score: float, dense_dev: float, dense_ood: float) -> float:
    """F_bias (Du et al. 2023): the model's relative dev-OOD drop over the dense model's.

    ``((dev - ood) / dev)_model / ((dense_dev - dense_ood) / dense_dev)``; above 1 means the
    compressed model leans on the bias more than the dense one.
    """
    if dev_score == 0 or dense_dev == 0:
        raise SrnetError(f"F_bias is undefined for a dev score of 0 (model {dev_score}, dense {dense_dev})")
    dense_drop = (dense_dev - dense_ood) / dense_dev
    if dense_drop == 0:
        raise SrnetError(
            f"F_bias is undefined: the dense model has no dev-OOD gap (dev {dense_dev} = OOD {dense_ood})"
        )
    return ((dev_score - ood_score) / dev_score) / dense_drop


def hans_prediction_file(examples: Sequence[Example], preds: Sequence[int], space: LabelSpace) -> str:
    """Predictions in the HANS evaluation script's format: ``pairID,gold_label`` then one row per
    example (the *predicted* label name, as that script expects)."""
    if len(examples) != len(preds):
        raise SrnetError(f"hans_prediction_file: {len(examples)} examples but {len(preds)} predictions")
    rows = [f"{example.id},{space.names[int(p)]}" for example, p in zip(examples, preds, strict=True)]
    return "\n".join(["pairID,gold_label", *rows]) + "\n"


PredictionFile = Callable[[Sequence[Example], Sequence[int], LabelSpace], str]

PREDICTION_FILES: dict[str, PredictionFile] = {"hans": hans_prediction_file}
"""Official scorers' prediction-file formats, by the name a :class:`LabelScheme` gives in
``prediction_file``; the run writes ``predictions/<split>_<name>_predictions.txt``."""
