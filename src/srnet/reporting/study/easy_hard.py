"""Section ``easy_hard``: the RMC paper's Table 6 layout and Figure 1 for a set with an easy/hard split.

One row per configuration (method x loss x paradigm x sparsity), mean ± std over its runs (seeds)
in points: ID accuracy, Hard, Easy and Easy − Hard on the first ID split that has an easy/hard
split (easy = the examples the bias model gets right), then every other split's primary metric
(challenge splits with their collapse marks).  The figure: easy, hard and easy − hard accuracy
against sparsity, one line per method x loss (±std band), dense models as dashed lines.
"""

from __future__ import annotations

from srnet.reporting.render import Curve, Panel
from srnet.reporting.runs import DENSE
from srnet.reporting.stats import Group, Stat, collapsed_runs
from srnet.reporting.study.base import Part, RunSet, SetSection, Study, register_section

PANELS = {"easy": "easy examples", "hard": "hard examples", "E-H": "easy − hard gap"}


def easy_hard_split(runs: RunSet) -> str | None:
    """The first ID split of the set whose runs recorded an easy/hard split."""
    return next((s for s in runs.cohort.id_splits if any(f"E-H {s}" in g.stats for g in runs.groups)), None)


@register_section("easy_hard")
class EasyHard(SetSection):
    """Hard / easy / easy − hard accuracy in points (RMC Table 6) and against sparsity (Figure 1)."""

    order = 30

    def applies(self, study: Study, runs: RunSet) -> bool:
        return easy_hard_split(runs) is not None

    def render(self, study: Study, runs: RunSet) -> Part:
        split = easy_hard_split(runs)
        assert split is not None
        table = easy_hard_table(runs.groups, runs.cohort.id_splits, runs.cohort.ood_splits, split)
        part = Part.with_table("Easy / hard split (RMC Table 6 layout)",
                               f"Points (accuracy x 100), mean ± std over the runs of a configuration; "
                               f"{split}: all its examples, then the hard and the easy ones and their "
                               "difference; the other splits' primary metric (challenge splits with "
                               "their collapse marks).", table)
        if study.figures:
            part.add_curves(_panels(runs.groups, split),
                            study.out / f"{runs.prefix}_easy_hard_vs_sparsity.png",
                            f"{split}: easy, hard and easy − hard accuracy against sparsity (RMC Figure 1; "
                            "dense models dashed)", title=f"{split}: easy / hard split against sparsity")
        return part


def easy_hard_table(groups: list[Group], id_splits: list[str], ood_splits: list[str], split: str) -> str:
    """The Table 6 layout (a plain Markdown table, cells in points)."""
    others = [f"ID {s}" for s in id_splits if s != split] + ood_splits
    header = ["model", "sparsity", "n", f"{split}", "Hard", "Easy", "Gap (E − H)", *others]
    lines = [f"| {' | '.join(header)} |", "|" + "---|" * len(header)]
    for group in groups:
        row = [group.name, f"{group.labels['sparsity']:.0%}", str(len(group.runs))]
        row += [points(group.stats.get(f"ID {split}"), collapsed_runs(group, f"ID {split}"))]
        row += [points(group.stats.get(f"{kind} {split}")) for kind in ("hard", "easy", "E-H")]
        row += [points(group.stats.get(c), collapsed_runs(group, c)) for c in others]
        lines.append(f"| {' | '.join(row)} |")
    return "\n".join(lines)


def points(stat: Stat | None, mark: str = "") -> str:
    """A fraction's mean ± std in points (one decimal), '-' when missing."""
    if stat is None:
        return "-"
    std = f" ± {100 * stat.std:.1f}" if stat.std is not None else ""
    return f"{100 * stat.mean:.1f}{std}{mark}"


def _panels(groups: list[Group], split: str) -> list[Panel]:
    panels = []
    for kind, title in PANELS.items():
        curves: dict[str, list[tuple[float, float, float | None]]] = {}
        dense = []
        for group in groups:
            stat = group.stats.get(f"{kind} {split}")
            if stat is None:
                continue
            if group.labels["method"] == DENSE:
                dense.append((group.name, stat.mean, stat.std))
            else:
                curves.setdefault(group.name, []).append((group.labels["sparsity"], stat.mean, stat.std))
        panels.append(Panel(f"{split}: {title}", "accuracy" if kind != "E-H" else "easy − hard accuracy",
                            [Curve(n, p) for n, p in curves.items()], dense))
    return panels
