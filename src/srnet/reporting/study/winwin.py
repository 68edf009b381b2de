"""Section ``winwin``: Win-win's layout (Liu et al. 2022, Tables 1-2 and Figures 2-4, 7, 8) for a set
with an easy/hard split whose pruned runs carry several ``tags.paradigm`` values.

One row per configuration, ordered by paradigm, then method x loss, then sparsity, mean ± std over
its runs in points: the first easy/hard ID split (all, hard, easy, easy − hard), every other ID
split (all, and hard where it has an easy/hard split), every challenge split (with its collapse
mark), and how far learned masks moved (% of entries flipped, Jaccard with the start).  Figures:
ID and hard accuracy against sparsity, one line per configuration, dense models as dashed
reference lines; and, for runs tagged ``start`` (the point of fine-tuning a mask search started
from, e.g. ``20%``), ID and hard accuracy against that point, the same method, loss and sparsity
started from the fine-tuned model being the point at 100%.
"""

from __future__ import annotations

from srnet.reporting.render import Curve, Panel
from srnet.reporting.runs import DENSE
from srnet.reporting.stats import MASK_FLIPPED, MASK_JACCARD, Group, collapsed_runs
from srnet.reporting.study.base import Part, RunSet, SetSection, Study, register_section
from srnet.reporting.study.easy_hard import easy_hard_split, points

START = "start"
"""The tag naming the point of fine-tuning a mask search started from (``tags.start: 20%``)."""


def paradigms(runs: RunSet) -> set[str]:
    """The paradigm labels of the set's pruned configurations."""
    return {g.labels.get("paradigm", "-") for g in runs.groups if g.labels["method"] != DENSE}


@register_section("winwin")
class WinWin(SetSection):
    """Rows by paradigm and sparsity (ID / hard / easy / gap / other splits / mask movement)."""

    order = 32

    def applies(self, study: Study, runs: RunSet) -> bool:
        return easy_hard_split(runs) is not None and len(paradigms(runs) - {"-"}) > 1

    def render(self, study: Study, runs: RunSet) -> Part:
        split = easy_hard_split(runs)
        assert split is not None
        table = winwin_table(ordered(runs.groups), runs, split)
        part = Part.with_table("By paradigm (Win-win layout)",
                               f"Points, mean ± std over the runs (seeds) of a configuration. {split}: all "
                               "its examples, the hard and the easy ones and their gap; the other ID splits "
                               "(all, hard); the challenge splits; learned masks: % of entries flipped from "
                               "their start and the Jaccard similarity of the kept entries with the start's "
                               "(† on an ID column: runs at chance there).", table)
        if study.figures:
            part.add_curves(_sparsity_panels(runs.groups, split),
                            study.out / f"{runs.prefix}_winwin_vs_sparsity.png",
                            f"{split}: ID and hard accuracy against sparsity by paradigm (Win-win Figures "
                            "2-4, 8; dense models dashed)",
                            title=f"{split}: ID and hard accuracy against sparsity")
            timing = _timing_panels(runs.groups, split)
            if timing:
                part.add_curves(timing, study.out / f"{runs.prefix}_winwin_timing.png",
                                f"{split}: ID and hard accuracy of mask searches started part-way through "
                                "fine-tuning (Win-win Figure 7; 100% = started from the fine-tuned model)",
                                title=f"{split}: when the mask search starts",
                                xlabel="search start (% of fine-tuning)")
        return part


def ordered(groups: list[Group]) -> list[Group]:
    """Dense first, then by paradigm (in order of appearance), method x loss, start and sparsity."""
    order = {p: i for i, p in enumerate(dict.fromkeys(g.labels.get("paradigm", "-") for g in groups))}
    return sorted(groups, key=lambda g: (g.labels["method"] != DENSE, order[g.labels.get("paradigm", "-")],
                                         g.labels["method"], g.labels["loss"], start_of(g) or 0.0,
                                         g.labels["sparsity"]))


def start_of(group: Group) -> float | None:
    """The ``start`` tag as a fraction (``20%`` -> 0.2), None when absent or unreadable."""
    text = str(group.labels.get(START, "")).strip().rstrip("%")
    try:
        return float(text) / 100 if text else None
    except ValueError:
        return None


def winwin_table(groups: list[Group], runs: RunSet, split: str) -> str:
    """The Markdown table (cells in points)."""
    others = [s for s in runs.cohort.id_splits if s != split]
    ood = runs.cohort.ood_splits
    header = ["paradigm", "model", "sparsity", "n", split, "Hard", "Easy", "Gap (E − H)"]
    header += [h for s in others for h in (s, f"{s} hard")] + ood + ["flipped %", "Jaccard"]
    lines = [f"| {' | '.join(header)} |", "|" + "---|" * len(header)]
    for group in groups:
        name = f"{group.labels['method']}/{group.labels['loss']}"
        if START in group.labels:
            name += f" from {group.labels[START]}"
        row = [str(group.labels.get("paradigm", "-")), name, f"{group.labels['sparsity']:.0%}",
               str(len(group.runs)),
               points(group.stats.get(f"ID {split}"), collapsed_runs(group, f"ID {split}"))]
        row += [points(group.stats.get(f"{kind} {split}")) for kind in ("hard", "easy", "E-H")]
        for other in others:
            row += [points(group.stats.get(f"ID {other}"), collapsed_runs(group, f"ID {other}")),
                    points(group.stats.get(f"hard {other}"))]
        row += [points(group.stats.get(s), collapsed_runs(group, s)) for s in ood]
        flipped, jaccard = group.stats.get(MASK_FLIPPED), group.stats.get(MASK_JACCARD)
        row += [points(flipped) if flipped else "-",
                f"{jaccard.mean:.3f}" + (f" ± {jaccard.std:.3f}" if jaccard.std is not None else "")
                if jaccard else "-"]
        lines.append(f"| {' | '.join(row)} |")
    return "\n".join(lines)


def _label(group: Group) -> str:
    return f"{group.labels.get('paradigm', '-')}: {group.labels['method']}/{group.labels['loss']}"


def _sparsity_panels(groups: list[Group], split: str) -> list[Panel]:
    panels = []
    for column, title in ((f"ID {split}", "all examples"), (f"hard {split}", "hard examples")):
        curves: dict[str, list[tuple[float, float, float | None]]] = {}
        dense = []
        for group in groups:
            stat = group.stats.get(column)
            if stat is None or START in group.labels:
                continue
            if group.labels["method"] == DENSE:
                dense.append((group.name, stat.mean, stat.std))
            else:
                curves.setdefault(_label(group), []).append((group.labels["sparsity"], stat.mean, stat.std))
        panels.append(Panel(f"{split}: {title}", "accuracy", [Curve(n, p) for n, p in curves.items()], dense))
    return panels


def _timing_panels(groups: list[Group], split: str) -> list[Panel] | None:
    """ID and hard accuracy against the search's start; the same method, loss and sparsity started
    from the end of fine-tuning (no ``start`` tag, a paradigm other than dense) is the point at 100%."""
    timed = [g for g in groups if start_of(g) is not None]
    if not timed:
        return None
    kinds = {(g.labels["method"], g.labels["loss"], g.labels["sparsity"]) for g in timed}
    ends = [g for g in groups if START not in g.labels and g.labels["method"] != DENSE
            and (g.labels["method"], g.labels["loss"], g.labels["sparsity"]) in kinds]
    panels = []
    for column, title in ((f"ID {split}", "all examples"), (f"hard {split}", "hard examples")):
        curves: dict[str, list[tuple[float, float, float | None]]] = {}
        for group, start in [(g, start_of(g)) for g in timed] + [(g, 1.0) for g in ends]:
            stat = group.stats.get(column)
            if stat is not None and start is not None:
                name = f"{group.labels['method']}/{group.labels['loss']} {group.labels['sparsity']:.0%}"
                curves.setdefault(name, []).append((start, stat.mean, stat.std))
        panels.append(Panel(f"{split}: {title}", "accuracy", [Curve(n, p) for n, p in curves.items()]))
    return panels
