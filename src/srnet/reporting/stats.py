"""Statistics over finished runs: cohorts of comparable runs, each run's numbers, and each
configuration's mean and standard deviation over its seeds.

Runs belong to the same cohort when they share the task and the evaluation splits (name and
size).  Every number is read under one collapse rule per cohort (see
:mod:`srnet.evaluation.metrics`): for a split whose label scheme merges model classes, the scores
under that rule come from the block's ``by_rule``; metrics.json files written before both rules
were recorded hold ``sum``.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from srnet.errors import SrnetError
from srnet.evaluation.challenge import f_bias
from srnet.evaluation.metrics import COLLAPSE_RULES, collapse_from_counts, id_collapse, rules_differ
from srnet.reporting.runs import DENSE, LABELS, RUNTIME, Run, configuration
from srnet.rundir.layout import ATTACK_COLUMNS
from srnet.tasks.spec import LabelScheme


@dataclass
class Cohort:
    """Runs that can be compared: same task, same evaluation splits of the same sizes (the report
    shows each as one numbered set of runs)."""

    task: str
    id_splits: list[str]
    ood_splits: list[str]
    sizes: dict[str, int]
    runs: list[Run]

    @property
    def title(self) -> str:
        parts = [f"{s} (n={self.sizes[s]})" for s in self.id_splits + self.ood_splits]
        return f"{self.task}: " + ", ".join(parts)

    @property
    def rule(self) -> str:
        """The collapse rule the cohort's tables use: the runs' primary rule when they agree,
        else ``sum`` (which every run records)."""
        rules = {run.primary_rule() or "sum" for run in self.runs}
        return rules.pop() if len(rules) == 1 else "sum"

    def merging_splits(self) -> list[str]:
        """OOD splits whose label scheme merges model classes (where the rule matters)."""
        return [s for s in self.ood_splits
                if any(s in r.schemes and rules_differ(r.schemes[s].space) for r in self.runs)]

    def scheme(self, split: str) -> LabelScheme | None:
        return next((r.schemes[split] for r in self.runs if split in r.schemes), None)


def cohorts(runs: Iterable[Run]) -> list[Cohort]:
    """Group runs into cohorts of comparable runs (first-seen order)."""
    out: dict[tuple, Cohort] = {}
    for run in runs:
        blocks = {"id": run.metrics.id, "ood": run.metrics.ood}
        sizes = {name: b.get("n") for kind in blocks for name, b in blocks[kind].items()}
        key = (run.metrics.task, tuple(blocks["id"]), tuple(blocks["ood"]), tuple(sizes.values()))
        if key not in out:
            out[key] = Cohort(str(key[0]), list(key[1]), list(key[2]), sizes, [])
        out[key].runs.append(run)
    return list(out.values())


def run_values(run: Run, cohort: Cohort, rule: str | None = None) -> dict[str, float | None]:
    """One run's numbers under ``rule`` (default: the cohort's): ``ID <split>``, ``<split>``
    (each OOD split's primary metric), ``gap <split>`` (shortcut gap) and ``F_bias <split>``."""
    rule = rule or cohort.rule
    values: dict[str, float | None] = {}
    for split in cohort.id_splits:
        block = run.block("id", split, rule) or {}
        values[f"ID {split}"] = block.get("primary")
        if block.get("confusion") and block.get("accuracy") is not None:  # also older results
            values[f"{COLLAPSED} ID {split}"] = float(id_collapse(block)["collapsed"])
        easy_hard = (run.metrics.id.get(split) or {}).get("easy_hard")
        if easy_hard:
            values |= {f"easy {split}": easy_hard.get("easy"), f"hard {split}": easy_hard.get("hard"),
                       f"E-H {split}": easy_hard.get("gap")}
    for split in cohort.ood_splits:
        block = run.block("ood", split, rule) or {}
        values[split] = block.get("primary")
        scheme = cohort.scheme(split)
        if block.get("shortcut_gap") is not None or (scheme is not None and scheme.shortcut):
            gap = block.get("shortcut_gap")
            values[f"gap {split}"] = gap
            values[f"abs gap {split}"] = None if gap is None else abs(gap)
        collapsed = block.get("collapsed")
        if collapsed is None and block.get("confusion") and scheme is not None:
            confusion = np.asarray(block["confusion"])  # a result recorded before the flag existed
            flag = collapse_from_counts(confusion.sum(0), confusion.sum(1), scheme.space.names)
            collapsed = flag["collapsed"]
        if collapsed is not None:
            values[f"{COLLAPSED} {split}"] = float(collapsed)
    movement = run.metrics.mask_movement
    if movement:
        values[MASK_FLIPPED] = movement.flipped
        values[MASK_JACCARD] = movement.jaccard
    values.update(f_bias_values(run, cohort, rule))
    values.update(attack_values(run))
    return values


MASK_FLIPPED = "mask flipped"
"""Column: the fraction of a learned mask's entries that moved from its start (``mask_movement``)."""

MASK_JACCARD = "mask jaccard"
"""Column: the Jaccard similarity of a learned mask's kept entries with its start's."""

COLLAPSED = "collapsed"
"""Column prefix: the fraction of a configuration's runs whose predictions on a split collapsed
into one class (``metrics.json``'s ``collapsed``); tables show it as a mark, never as a number."""


def collapsed_runs(group: Group, split: str) -> str:
    """A mark for a configuration whose runs collapsed on ``split``: '' or ' †k/n'."""
    stat = group.stats.get(f"{COLLAPSED} {split}")
    if stat is None or stat.mean == 0:
        return ""
    return f" †{round(stat.mean * stat.n)}/{stat.n}"


def attack_values(run: Run) -> dict[str, float]:
    """``<attack> <column>`` for each attack summary of the run: Clean%, Aua%, Suc% (percent) and
    #Query (model queries per attacked example)."""
    out: dict[str, float] = {}
    for name, summary in run.attacks.items():
        for column, key in ATTACK_COLUMNS.items():
            value = float(summary[key])
            out[f"{name} {column}"] = value if column == "#Query" else 100.0 * value
    return out


def f_bias_values(run: Run, cohort: Cohort, rule: str) -> dict[str, float | None]:
    """F_bias of each OOD split against the first ID split: relative to the mean of the cohort's
    dense CE runs scored by PyTorch under ``rule`` when there are any, else as the run recorded it."""
    if not cohort.id_splits:
        return {}
    id_split = cohort.id_splits[0]
    dense = [r for r in cohort.runs if r.dense and r.labels["loss"] == "ce" and RUNTIME not in r.labels]
    out: dict[str, float | None] = {}
    for split in cohort.ood_splits:
        recorded = (run.metrics.f_bias or {}).get(split)
        pairs = [((r.block("id", id_split, rule) or {}).get("primary"),
                  (r.block("ood", split, rule) or {}).get("primary")) for r in dense]
        pairs = [p for p in pairs if None not in p]
        mine = ((run.block("id", id_split, rule) or {}).get("primary"),
                (run.block("ood", split, rule) or {}).get("primary"))
        if pairs and None not in mine:
            dense_id = statistics.fmean(p[0] for p in pairs)
            dense_ood = statistics.fmean(p[1] for p in pairs)
            try:
                out[f"F_bias {split}"] = f_bias(*mine, dense_id, dense_ood)  # type: ignore[arg-type]
            except SrnetError:
                out[f"F_bias {split}"] = None
        else:
            out[f"F_bias {split}"] = recorded
    return out


@dataclass(frozen=True)
class Stat:
    """Mean and sample standard deviation (ddof 1; None for one value) of ``n`` values."""

    mean: float
    std: float | None
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Stat:
        return cls(statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else None,
                   len(values))


@dataclass
class Group:
    """One configuration (labels) of a cohort, its runs and the per-column statistics."""

    labels: dict[str, Any]
    runs: list[Run]
    stats: dict[str, Stat]

    @property
    def name(self) -> str:
        """``method/loss`` plus the paradigm and extra tags when set (not the sparsity; paradigm
        ``dense`` of a dense run is not repeated)."""
        parts = [self.labels["method"], self.labels["loss"]]
        parts += [f"{k}={v}" for k, v in self.labels.items() if k not in LABELS]
        paradigm = self.labels.get("paradigm", "-")  # not repeated when it says dense again
        return "/".join(parts) + (f" ({paradigm})" if paradigm not in ("-", self.labels["method"]) else "")


def group_runs(cohort: Cohort, rule: str | None = None) -> list[Group]:
    """The cohort's runs grouped by labels, each column averaged over the group's runs (seeds),
    sorted dense first, then by name and sparsity."""
    grouped: dict[tuple, list[Run]] = {}
    for run in cohort.runs:
        grouped.setdefault(configuration(run), []).append(run)
    groups = []
    for runs in grouped.values():
        columns: dict[str, list[float]] = {}
        for run in runs:
            for name, value in run_values(run, cohort, rule).items():
                if value is not None:
                    columns.setdefault(name, []).append(float(value))
        groups.append(Group(runs[0].labels, runs, {k: Stat.of(v) for k, v in columns.items()}))
    return sorted(groups, key=lambda g: (g.labels["method"] != DENSE, g.name, g.labels["sparsity"]))


def other_rule(rule: str) -> str:
    """The collapse rule that is not ``rule``."""
    return next(r for r in COLLAPSE_RULES if r != rule)
