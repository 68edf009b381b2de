"""Paired accuracy differences between two models scored on the same examples, and gates that
decide by non-inferiority.

Two runs' ``predictions/<split>.jsonl`` give one correctness flag per example id
(:func:`split_correctness`: ``gold == pred`` in the split's labels, i.e. after the run's collapse
rule, so a challenge set such as HANS is scored 2-way, as its recorded accuracy is).  Paired by id,
they give the 2x2 table of the candidate's and the reference's right/wrong answers;
:func:`paired_difference` turns it into the difference of accuracies with a confidence interval.
A gate passes when that interval's lower bound is above ``-margin`` (:func:`non_inferior`).

Accuracies and differences are fractions in [0, 1], as in ``metrics.json``; margins are in
accuracy points (1.0 = 0.01), as the gates' options are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any, Literal

from srnet.by_id import read_prediction_rows
from srnet.errors import SrnetError
from srnet.evaluation.predict import hard_examples
from srnet.rundir.layout import RunDir
from srnet.rundir.record import read_metrics
from srnet.tasks import get_task

METHOD = "newcombe-square-and-add"
"""The interval: Newcombe's (1998) method 10 for paired proportions (see :func:`paired_difference`)."""

ID_MARGIN = 1.0
"""Default non-inferiority margin of an ID-accuracy gate, in accuracy points."""

ROBUST_MARGIN = 2.0
"""Default margin of a hard-subset or challenge-set gate, in points: those splits are smaller or
noisier (MNLI's hard subset has a paired standard error near 0.5 points, so a model no worse than
its reference fails a 1-point margin about half the time and a 2-point one about 1 time in 40)."""

Subset = Literal["hard", "easy"]


@dataclass(frozen=True)
class PairedDifference:
    """Candidate minus reference accuracy on the same ``n`` examples, with its interval.

    ``b``: examples the candidate gets right and the reference wrong; ``c``: the reverse, so
    ``difference == (b - c) / n``.
    """

    n: int
    reference: float
    candidate: float
    difference: float
    low: float
    high: float
    b: int
    c: int
    confidence: float
    method: str = METHOD


def paired_difference(
    reference: Sequence[bool], candidate: Sequence[bool], *, confidence: float = 0.95
) -> PairedDifference:
    """The paired difference of accuracies (candidate - reference) and its ``confidence`` interval.

    The interval is Newcombe's square-and-add (hybrid Wilson score) interval for paired proportions,
    his method 10 (Statist. Med. 17, 2635-2650, 1998; Fagerland, Lydersen & Laake 2017, ch. 8):
    closed form, deterministic, and well behaved for small n and accuracies near 0 or 1.
    """
    if len(reference) != len(candidate):
        raise SrnetError(
            f"paired_difference: {len(reference)} reference flags but {len(candidate)} candidate ones"
        )
    if len(reference) == 0:
        raise SrnetError("paired_difference: no examples")
    if not 0 < confidence < 1:
        raise SrnetError(f"paired_difference: confidence {confidence} is not between 0 and 1")
    table = [[0, 0], [0, 0]]  # rows: candidate right / wrong; columns: reference right / wrong
    for ref, cand in zip(reference, candidate, strict=True):
        table[0 if cand else 1][0 if ref else 1] += 1
    low, high = newcombe_interval(table, confidence)
    n = len(reference)
    right_c, right_r = table[0][0] + table[0][1], table[0][0] + table[1][0]
    return PairedDifference(n=n, reference=right_r / n, candidate=right_c / n,
                            difference=(table[0][1] - table[1][0]) / n, low=low, high=high,
                            b=table[0][1], c=table[1][0], confidence=confidence)


def newcombe_interval(table: Sequence[Sequence[int]], confidence: float) -> tuple[float, float]:
    """Newcombe's square-and-add interval for ``p1 - p2`` of a paired 2x2 ``table`` (rows: the first
    response right / wrong; columns: the second's), with his continuity-corrected correlation."""
    (a, b), (c, d) = table
    n = a + b + c + d
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson(a + b, n, z)
    l2, u2 = wilson(a + c, n, z)
    psi = correlation(a, b, c, d)
    down = math.sqrt(max((p1 - l1) ** 2 + (u2 - p2) ** 2 - 2 * psi * (p1 - l1) * (u2 - p2), 0.0))
    up = math.sqrt(max((p2 - l2) ** 2 + (u1 - p1) ** 2 - 2 * psi * (p2 - l2) * (u1 - p1), 0.0))
    return p1 - p2 - down, p1 - p2 + up


def wilson(right: int, n: int, z: float) -> tuple[float, float]:
    """Wilson score interval of ``right / n``."""
    centre = (right + z * z / 2) / (n + z * z)
    half = z * math.sqrt(right * (n - right) / n + z * z / 4) / (n + z * z)
    return centre - half, centre + half


def correlation(a: int, b: int, c: int, d: int) -> float:
    """Newcombe's estimate of the correlation of the paired responses: ``ad - bc`` shrunk by ``n/2``
    towards 0 when positive, over the root of the margins' product (0 when a margin is empty)."""
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    if margins == 0:
        return 0.0
    cross = a * d - b * c
    n = a + b + c + d
    shrunk = cross - n / 2 if cross > n / 2 else min(cross, 0)
    return shrunk / math.sqrt(margins)


def non_inferior(diff: PairedDifference, margin: float) -> bool:
    """Whether the interval's lower bound is above ``-margin`` (``margin`` in accuracy points)."""
    return diff.low > -margin / 100


def gate_text(name: str, diff: PairedDifference, margin: float) -> str:
    """One line: ``PASS hard: +0.31 points (95% CI −0.52 … +1.14, n 4302) vs margin −1.00``."""
    verdict = "PASS" if non_inferior(diff, margin) else "FAIL"
    return (f"{verdict} {name}: {_points(diff.difference)} points ({diff.confidence * 100:g}% CI "
            f"{_points(diff.low)} … {_points(diff.high)}, n {diff.n}) vs margin {_points(-margin / 100)}")


def _points(fraction: float) -> str:
    """A signed fraction in points to 2 decimals, with a true minus sign."""
    return f"{fraction * 100:+.2f}".replace("-", "−")


def split_correctness(run_folder: str | Path, split: str, *, subset: Subset | None = None) -> dict[str, bool]:
    """Example id -> whether the run's prediction on ``split`` is right (``gold == pred``), from
    ``<run>/predictions/<split>.jsonl``; ``subset`` keeps the hard (or easy) examples of an ID split.

    Hard membership is each row's ``hard`` field; files written before that field existed fall
    back on the bias file the run's ``metrics.json`` records for the split (``easy_hard.bias_file``).
    """
    path = RunDir(Path(run_folder)).predictions / f"{split}.jsonl"
    rows = read_prediction_rows(path)
    correct: dict[str, bool] = {}
    for number, row in enumerate(rows, start=1):
        if not all(isinstance(row.get(key), str) for key in ("gold", "pred")) or "id" not in row:
            raise SrnetError(f"{path}: row {number} needs 'id', and 'gold' and 'pred' label names")
        if str(row["id"]) in correct:
            raise SrnetError(f"{path}: id '{row['id']}' appears twice")
        correct[str(row["id"])] = row["gold"] == row["pred"]
    if subset is None:
        return correct
    if subset not in ("hard", "easy"):
        raise SrnetError(f"split_correctness: unknown subset '{subset}'; known: ['hard', 'easy']")
    hard = hard_membership(Path(run_folder), split, rows, path)
    return {ex_id: right for ex_id, right in correct.items() if hard[ex_id] == (subset == "hard")}


def hard_membership(run: Path, split: str, rows: list[dict[str, Any]], path: Path) -> dict[str, bool]:
    """Example id -> hard, from the rows' ``hard`` fields or else the run's recorded bias file."""
    if all("hard" in row for row in rows):
        bad = next((row["id"] for row in rows if not isinstance(row["hard"], bool)), None)
        if bad is not None:
            raise SrnetError(f"{path}: 'hard' of id '{bad}' is not true or false")
        return {str(row["id"]): row["hard"] for row in rows}
    record = read_metrics(run)
    bias_file = ((record.id.get(split) or {}).get("easy_hard") or {}).get("bias_file")
    if not bias_file or record.task is None:
        raise SrnetError(f"{path}: no per-example 'hard' field, and {run / 'metrics.json'} records no "
                         f"easy/hard bias file for ID split '{split}' (evaluate it with a bias_dir)")
    labels = get_task(record.task).labels
    unknown = next((row["gold"] for row in rows if row["gold"] not in labels), None)
    if unknown is not None:
        raise SrnetError(f"{path}: gold label '{unknown}' is not one of task {record.task}'s {list(labels)}")
    ids = [str(row["id"]) for row in rows]
    hard = hard_examples(Path(bias_file), ids, [labels.index(row["gold"]) for row in rows], labels)
    return dict(zip(ids, (bool(h) for h in hard), strict=True))


def paired_by_id(
    reference: Mapping[str, bool], candidate: Mapping[str, bool], where: str
) -> tuple[list[bool], list[bool]]:
    """The two correctness maps as aligned lists (the reference's order); a one-line SrnetError
    naming ``where`` when their ids differ."""
    only_ref = [i for i in reference if i not in candidate]
    only_cand = [i for i in candidate if i not in reference]
    if only_ref or only_cand:
        first = (only_ref or only_cand)[0]
        raise SrnetError(f"{where}: the runs' example ids differ ({len(only_ref)} only in the reference, "
                         f"{len(only_cand)} only in the candidate, e.g. '{first}'); cannot pair them")
    return list(reference.values()), [candidate[i] for i in reference]


def compare_runs(
    reference_run: str | Path,
    candidate_run: str | Path,
    split: str,
    *,
    subset: Subset | None = None,
    confidence: float = 0.95,
) -> PairedDifference:
    """The paired difference of two runs' accuracies on ``split`` (and ``subset``), by example id."""
    reference = split_correctness(reference_run, split, subset=subset)
    candidate = split_correctness(candidate_run, split, subset=subset)
    files = [RunDir(Path(run)).predictions / f"{split}.jsonl" for run in (reference_run, candidate_run)]
    where = f"{files[0]} vs {files[1]}" + (f" ({subset})" if subset else "")
    ref, cand = paired_by_id(reference, candidate, where)
    return paired_difference(ref, cand, confidence=confidence)
