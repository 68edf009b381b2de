"""Section ``tables``: the seed-averaged table of a set and its figures against sparsity.

A table of mean ± std over seeds (n shown) of each ID and OOD split's primary metric, the
shortcut gap and F_bias, by method x loss x paradigm x sparsity (and any further tags), under the
set's collapse rule, plus the OOD columns under the other rule where recorded; the papers' figure
(every metric against sparsity, one line per method x loss with a ±std band, dense models as
dashed lines, shortcut-gap panels beside the accuracy ones) and accuracy bars by heuristic x label
for every split whose label scheme has a shortcut.
"""

from __future__ import annotations

from pathlib import Path

from srnet.reporting.render import Curve, Panel, plot_group_bars, plot_sparsity_curves
from srnet.reporting.runs import DENSE
from srnet.reporting.stats import (
    COLLAPSED,
    MASK_FLIPPED,
    MASK_JACCARD,
    Cohort,
    Group,
    Stat,
    collapsed_runs,
    group_runs,
    other_rule,
)
from srnet.reporting.study.base import (
    Part,
    RunSet,
    SetSection,
    Study,
    display,
    register_section,
    slug,
    stats_table,
)
from srnet.rundir.layout import ATTACK_COLUMNS

RULE_TEXT = {
    "sum": "the probabilities of the model classes merged into one label are summed before the "
    "decision (HANS: entailment iff p(entailment) >= 0.5)",
    "argmax": "the model's own argmax is mapped to the split's labels (HANS: neutral or "
    "contradiction -> non-entailment), as the official HANS script scores 3-way predictions",
}


@register_section("tables")
class SeedAveragedTables(SetSection):
    """Mean ± std over seeds of every split's metric, gap and F_bias; the metrics against sparsity."""

    order = 10

    def applies(self, study: Study, runs: RunSet) -> bool:
        return bool(runs.cohort.id_splits or runs.cohort.ood_splits)

    def render(self, study: Study, runs: RunSet) -> Part:
        cohort, groups = runs.cohort, runs.groups
        rule = cohort.rule
        part = Part()
        lines = part.lines
        merging = cohort.merging_splits()
        if merging:
            lines += [f"Scoring of {', '.join(merging)}: collapse rule `{rule}`: {RULE_TEXT[rule]}."]
            legacy = [r for r in cohort.runs if any("by_rule" not in r.metrics.ood[s] for s in merging)]
            if legacy:
                lines += [f"{len(legacy)} run(s) predate recording both rules: their metrics.json holds "
                          "`sum` only."]
            lines += [""]
        for split in cohort.id_splits:
            sizes = {(b["n_easy"], b["n_hard"]) for r in cohort.runs
                     if (b := (r.metrics.id.get(split) or {}).get("easy_hard"))}
            if sizes:
                shown = "; ".join(f"{e:,} easy / {h:,} hard" for e, h in sorted(sizes))
                lines += [f"Easy/hard split of {split} (easy = the bias model predicts the gold label): "
                          f"{shown}.", ""]
        attacked = {f"{name} {c}" for run in cohort.runs for name in run.attacks for c in ATTACK_COLUMNS}
        columns = [c for c in dict.fromkeys(c for g in groups for c in g.stats)
                   if c not in attacked and not c.startswith(f"{COLLAPSED} ")]
        table = stats_table(groups, columns)
        part.tables.append(table)
        lines += [table]
        if merging:
            other = other_rule(rule)
            alt_groups = group_runs(cohort, other)
            alt_columns = [c for c in dict.fromkeys(c for g in alt_groups for c in g.stats)
                           if any(c in (s, f"gap {s}") for s in merging)]
            if alt_columns:
                lines += [f"The same OOD columns under the other rule, `{other}`: {RULE_TEXT[other]}.", "",
                          stats_table(alt_groups, alt_columns)]
        if study.figures:
            curves = _curves(cohort, groups, study.out / f"{runs.prefix}_vs_sparsity.png", rule)
            part.figures += [f for f in (curves,) if f] + list(_heuristic_bars(cohort, groups, study.out,
                                                                               runs.prefix, rule))
        return part


def _curves(cohort: Cohort, groups: list[Group], path: Path, rule: str) -> tuple[str, Path] | None:
    if all(group.labels["method"] == DENSE for group in groups):
        return None  # nothing varies with sparsity
    panels = []
    attacked = {f"{a} {c}" for g in groups for r in g.runs for a in r.attacks for c in ATTACK_COLUMNS}
    for column in dict.fromkeys(c for g in groups for c in g.stats
                                if not c.startswith(("F_bias", "abs gap ", f"{COLLAPSED} "))
                                and c not in attacked and c not in (MASK_FLIPPED, MASK_JACCARD)):
        part, _, rest = column.partition(" ")
        split = rest if part in ("ID", "gap", "easy", "hard", "E-H") else column
        scheme = cohort.scheme(split)
        metric = scheme.metric.replace("_", " ") if scheme else "primary metric"
        if part in ("easy", "hard"):
            ylabel, title = "accuracy", f"ID {split}: {part} examples"
        elif part == "E-H":
            ylabel, title = "easy − hard accuracy", f"ID {split}: easy − hard gap"
        elif column.startswith("gap "):
            shortcut = scheme.shortcut if scheme else None
            ylabel = f"{shortcut.follows} − {shortcut.against} accuracy" if shortcut else "gap"
            title = f"{split}: shortcut gap ({rule} rule; collapses with gap <= 0 not drawn)"
        else:
            ylabel, title = metric, f"{'ID ' if column.startswith('ID ') else 'OOD '}{split}"
        curves: dict[str, list[tuple[float, float, float | None]]] = {}
        dense = []
        for group in groups:
            stat = group.stats.get(column)
            against = column.startswith("gap ") and collapsed_runs(group, split) and stat is not None \
                and stat.mean <= 0
            if stat is None or against:
                continue  # a model collapsed against the shortcut label: its gap is no reduction
            if group.labels["method"] == DENSE:
                dense.append((display(group, method=False), stat.mean, stat.std))
            else:
                curves.setdefault(display(group), []).append((group.labels["sparsity"], stat.mean, stat.std))
        panels.append(Panel(title, ylabel, [Curve(n, p) for n, p in curves.items()], dense))
    if not panels:
        return None
    plot_sparsity_curves(panels, path, title=cohort.title)
    return f"{cohort.title}: each metric against sparsity (dense models dashed)", path


def _heuristic_bars(cohort: Cohort, groups: list[Group], out: Path, prefix: str, rule: str):
    for split in cohort.ood_splits:
        scheme = cohort.scheme(split)
        shortcut = scheme.shortcut if scheme else None
        if shortcut is None:
            continue
        key = next((name for name, keys in scheme.groups.items() if tuple(keys) == (shortcut.key,)), None)
        table: dict[str, dict[str, dict[str, tuple[float, float | None]]]] = {}
        for group in groups:
            cells: dict[tuple[str, str], list[float]] = {}
            for run in group.runs:
                by_group = (run.block("ood", split, rule) or {}).get(key) or {}
                for heuristic, by_label in by_group.items():
                    for label, value in by_label.items():
                        cells.setdefault((heuristic, label), []).append(value)
            for (heuristic, label), values in cells.items():
                stat = Stat.of(values)
                table.setdefault(display(group, sparsity=True), {}).setdefault(heuristic, {})[label] = (
                    stat.mean, stat.std)
        if table:
            path = out / f"{prefix}_{slug(split)}_{key}.png"
            caption = f"{split}: accuracy by {shortcut.key} x gold label ({rule} rule)"
            plot_group_bars(table, path, title=caption, group_name=shortcut.key)
            yield caption, path
