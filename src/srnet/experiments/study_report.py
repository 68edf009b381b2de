"""``srnet report``: one Markdown report with figures for a folder (or list) of finished runs.

For every section of comparable runs (:func:`srnet.experiments.aggregate.sections`):
* a table of mean ± std over seeds (n shown) of each ID and OOD split's primary metric, the
  shortcut gap and F_bias, by method x loss x paradigm x sparsity (and any further tags), under
  the section's collapse rule, plus the OOD columns under the other rule where recorded;
* one table per attack the runs were attacked with (``RUN/attack/<name>.json``): Clean%, Aua%,
  Suc% and #Query, mean ± std over the attacked runs;
* the papers' figure: every metric against sparsity, one line per method x loss with a ±std
  band, dense models as dashed horizontal lines, shortcut-gap panels beside the accuracy ones;
* accuracy bars by heuristic x label for every split whose label scheme has a shortcut;
* the Jaccard similarity of the masks of different methods at one sparsity (when the runs kept
  their ``masks.safetensors``), and per-layer sparsity heatmaps of each pruned configuration.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from srnet.errors import SrnetError
from srnet.evaluation.mask_analysis import SparsityTable, compare_masks
from srnet.experiments.aggregate import (
    ATTACK_COLUMNS,
    COLLAPSED,
    DENSE,
    LABELS,
    MASK_FLIPPED,
    Group,
    Section,
    Stat,
    collapsed_runs,
    find_runs,
    group_runs,
    load_run,
    other_rule,
    sections,
)
from srnet.io import atomic_write_text
from srnet.report import (
    Curve,
    Panel,
    format_table,
    plot_group_bars,
    plot_similarity,
    plot_sparsity_curves,
    plot_sparsity_heatmap,
)

RULE_TEXT = {
    "sum": "the probabilities of the model classes merged into one label are summed before the "
    "decision (HANS: entailment iff p(entailment) >= 0.5)",
    "argmax": "the model's own argmax is mapped to the split's labels (HANS: neutral or "
    "contradiction -> non-entailment), as the official HANS script scores 3-way predictions",
}


@dataclass
class Report:
    """What :func:`write_report` wrote: the Markdown file, its figures and the section tables."""

    path: Path
    figures: list[Path] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)


def write_report(paths: Sequence[str | Path], out: str | Path, *, figures: bool = True) -> Report:
    """Find the complete runs under ``paths`` and write ``out/report.md`` plus PNG figures
    (tables only with ``figures=False``)."""
    out = Path(out)
    runs = [load_run(p) for p in find_runs(paths) if out.resolve() not in p.resolve().parents]
    if not runs:
        raise SrnetError(f"{', '.join(map(str, paths))}: no complete runs (no metrics.json under it)")
    report = Report(out / "report.md")
    found = sections(runs)
    lines = [
        "# srnet report",
        "",
        f"{len(runs)} complete runs in {len(found)} section(s) of comparable runs (same task, "
        "same evaluation splits and sizes). Cells are mean ± sample std over the runs of a "
        "configuration (seeds); n is the number of runs. Metrics are fractions (0.9 = 90%); each "
        "split's column is its primary metric; gap = shortcut gap (accuracy on the label the "
        "shortcut predicts minus on the other, over the shortcut's heuristics); F_bias = the "
        "relative ID-OOD drop over the dense CE model's (against the mean dense CE model of the "
        "section when it has one, else the run's own dense_reference). easy / hard / E-H: accuracy "
        "on the ID examples the bias model gets right / wrong, and their difference (Gururangan et "
        "al. 2018; RMC paper section 4). † k/n: k of the n runs put >= 95% of their predictions "
        "on that split in one class (collapsed): their challenge accuracy and gap are no "
        "robustness, and figures leave out the gap points of configurations that collapsed with a "
        "gap <= 0 (onto the label against the shortcut, which would read as a gap reduction). mask "
        "flipped: the fraction of a learned mask's entries that left its start (below 0.001 the mask "
        "did not move).",
    ]
    for index, section in enumerate(found, 1):
        lines += _section(index, section, out, report, figures)
    atomic_write_text(report.path, "\n".join(lines) + "\n")
    return report


def _section(index: int, section: Section, out: Path, report: Report, figures: bool) -> list[str]:
    rule = section.rule
    groups = group_runs(section)
    prefix = f"s{index}"
    lines = ["", f"## {index}. {section.title}", ""]
    merging = section.merging_splits()
    if merging:
        lines += [f"Scoring of {', '.join(merging)}: collapse rule `{rule}`: {RULE_TEXT[rule]}."]
        legacy = [r for r in section.runs if any("by_rule" not in r.metrics["ood"][s] for s in merging)]
        if legacy:
            lines += [f"{len(legacy)} run(s) predate recording both rules: their metrics.json holds "
                      "`sum` only."]
        lines += [""]
    for split in section.id_splits:
        sizes = {(b["n_easy"], b["n_hard"]) for r in section.runs
                 if (b := (r.metrics["id"].get(split) or {}).get("easy_hard"))}
        if sizes:
            shown = "; ".join(f"{e:,} easy / {h:,} hard" for e, h in sorted(sizes))
            lines += [f"Easy/hard split of {split} (easy = the bias model predicts the gold label): "
                      f"{shown}.", ""]
    attacks = sorted({name for run in section.runs for name in run.attacks})
    attack_columns = {f"{name} {c}" for name in attacks for c in ATTACK_COLUMNS}
    columns = [c for c in dict.fromkeys(c for g in groups for c in g.stats)
               if c not in attack_columns and not c.startswith(f"{COLLAPSED} ")]
    table = _stats_table(groups, columns)
    report.tables.append(table)
    lines += [table]
    for name in attacks:
        lines += _attack_section(name, section, groups, report)
    if merging:
        other = other_rule(rule)
        alt_groups = group_runs(section, other)
        alt_columns = [c for c in dict.fromkeys(c for g in alt_groups for c in g.stats)
                       if any(c in (s, f"gap {s}") for s in merging)]
        if alt_columns:
            lines += [f"The same OOD columns under the other rule, `{other}`: {RULE_TEXT[other]}.", "",
                      _stats_table(alt_groups, alt_columns)]
    if figures:
        lines += ["### Figures", ""]
        drawn = [
            _curves(section, groups, out / f"{prefix}_vs_sparsity.png", rule),
            *_heuristic_bars(section, groups, out, prefix, rule),
            _jaccard(groups, out / f"{prefix}_mask_jaccard.png"),
            *_layer_heatmaps(groups, out, prefix),
        ]
        for caption, path in filter(None, drawn):
            report.figures.append(path)
            lines += [f"![{caption}]({path.name})", "", f"*{caption}*", ""]
    lines += ["### Runs", ""]
    for group in groups:
        where = ", ".join(_relative(run.path, out) for run in group.runs)
        lines.append(f"- {_display(group)}: {where}")
    return lines


def _attack_section(name: str, section: Section, groups: list[Group], report: Report) -> list[str]:
    """The attack's own table: Clean%, Aua%, Suc%, #Query of the configurations it attacked."""
    summaries = [run.attacks[name] for run in section.runs if name in run.attacks]
    splits = ", ".join(sorted({str(s.get("split")) for s in summaries}))
    totals = ", ".join(str(t) for t in sorted({s.get("total") for s in summaries}, key=str))
    columns = {f"{name} {c}": c for c in ATTACK_COLUMNS}
    attacked = [g for g in groups if any(c in g.stats for c in columns)]
    table = _stats_table(attacked, list(columns), headers=columns, digits=1)
    report.tables.append(table)
    return ["", f"### Attack `{name}`", "",
            f"`srnet attack` results (`attack/{name}.json`) on {splits}, {totals} examples per run. "
            "Clean% = (successful + failed)/total, Aua% = failed/total (accuracy under attack), "
            "Suc% = successful/(successful + failed), #Query = model queries per attacked example; "
            "mean ± std over runs, n = runs attacked.", "", table]


def _stats_table(groups: list[Group], columns: list[str], *, headers: dict[str, str] | None = None,
                 digits: int = 4) -> str:
    extra = list(dict.fromkeys(k for g in groups for k in g.labels if k not in LABELS))
    headers = headers or {}
    rows = []
    for group in groups:
        row: dict[str, object] = {k: group.labels.get(k, "-") for k in ("method", "loss", "paradigm")}
        row["sparsity"] = f"{group.labels['sparsity']:.0%}"
        row |= {k: group.labels.get(k, "-") for k in extra}
        counts = [group.stats[c].n for c in columns if c in group.stats]
        row["n"] = max(counts) if headers and counts else len(group.runs)  # attack tables: runs attacked
        row |= {headers.get(c, c): _marked(group, c, _cell(group.stats.get(c), digits)) for c in columns}
        rows.append(row)
    shown = [headers.get(c, c) for c in columns]
    return format_table(rows, ["method", "loss", "paradigm", "sparsity", *extra, "n", *shown], markdown=True)


def _marked(group: Group, column: str, cell: str | None) -> str | None:
    """``cell`` with the collapse mark of the OOD split the column belongs to."""
    split = column.removeprefix("abs gap ").removeprefix("gap ")
    return None if cell is None else cell + collapsed_runs(group, split)


def _cell(stat: Stat | None, digits: int = 4) -> str | None:
    if stat is None:
        return None
    return f"{stat.mean:.{digits}f}" + (f" ± {stat.std:.{digits}f}" if stat.std is not None else "")


def _curves(section: Section, groups: list[Group], path: Path, rule: str) -> tuple[str, Path] | None:
    if all(group.labels["method"] == DENSE for group in groups):
        return None  # nothing varies with sparsity
    panels = []
    attacked = {f"{a} {c}" for g in groups for r in g.runs for a in r.attacks for c in ATTACK_COLUMNS}
    for column in dict.fromkeys(c for g in groups for c in g.stats
                                if not c.startswith(("F_bias", "abs gap ", f"{COLLAPSED} "))
                                and c not in attacked and c != MASK_FLIPPED):
        part, _, rest = column.partition(" ")
        split = rest if part in ("ID", "gap", "easy", "hard", "E-H") else column
        scheme = section.scheme(split)
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
                dense.append((_display(group, method=False), stat.mean, stat.std))
            else:
                curves.setdefault(_display(group), []).append((group.labels["sparsity"], stat.mean, stat.std))
        panels.append(Panel(title, ylabel, [Curve(n, p) for n, p in curves.items()], dense))
    if not panels:
        return None
    plot_sparsity_curves(panels, path, title=section.title)
    return f"{section.title}: each metric against sparsity (dense models dashed)", path


def _heuristic_bars(section: Section, groups: list[Group], out: Path, prefix: str, rule: str):
    for split in section.ood_splits:
        scheme = section.scheme(split)
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
                table.setdefault(_display(group, sparsity=True), {}).setdefault(heuristic, {})[label] = (
                    stat.mean, stat.std)
        if table:
            path = out / f"{prefix}_{_slug(split)}_{key}.png"
            caption = f"{split}: accuracy by {shortcut.key} x gold label ({rule} rule)"
            plot_group_bars(table, path, title=caption, group_name=shortcut.key)
            yield caption, path


def _jaccard(groups: list[Group], path: Path) -> tuple[str, Path] | None:
    """Mask similarity between configurations at the sparsity where most of them kept masks."""
    from srnet.sparsity.mask_io import load_masks

    by_sparsity: dict[float, dict[str, Path]] = {}
    for group in groups:
        files = sorted((run.seed is None, str(run.seed), run.path / "masks.safetensors")
                       for run in group.runs if (run.path / "masks.safetensors").is_file())
        if group.labels["method"] != DENSE and files:
            by_sparsity.setdefault(group.labels["sparsity"], {})[_display(group)] = files[0][2]
    if not by_sparsity:
        return None
    sparsity, files = max(by_sparsity.items(), key=lambda kv: (len(kv[1]), kv[0]))
    if len(files) < 2:
        return None
    masks = {name: load_masks(file)[0] for name, file in files.items()}
    names = list(masks)
    matrix = np.full((len(names), len(names)), np.nan)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            with contextlib.suppress(SrnetError):  # masks of different models: not comparable
                matrix[i, j] = compare_masks(masks[a], masks[b], labels=(a, b)).overall.jaccard
    title = f"Mask similarity at {sparsity:.0%} sparsity (Jaccard of kept weights)"
    plot_similarity(names, matrix, path, title=title)
    return title, path


def _layer_heatmaps(groups: list[Group], out: Path, prefix: str):
    for group in groups:
        if group.labels["method"] == DENSE:
            continue
        cells: dict[tuple[int, str], list[float]] = {}
        overall = []
        for run in group.runs:
            block = run.metrics.get("sparsity") or {}
            if block.get("overall") is not None:
                overall.append(block["overall"])
            for key, value in (block.get("by_layer_role") or {}).items():
                layer, _, role = key.partition(".")
                if layer.isdigit():
                    cells.setdefault((int(layer), role), []).append(value)
        if not cells:
            continue
        table = SparsityTable([], {k: float(np.mean(v)) for k, v in sorted(cells.items())},
                              float(np.mean(overall)) if overall else float("nan"))
        name = _display(group, sparsity=True)
        path = out / f"{prefix}_sparsity_{_slug(name)}.png"
        caption = f"{name}: sparsity by layer and role (overall {table.overall:.1%}, mean over runs)"
        plot_sparsity_heatmap(table, path, title=caption)
        yield caption, path


def _display(group: Group, *, method: bool = True, sparsity: bool = False) -> str:
    name = group.name if method else group.name.split("/", 1)[1]
    if sparsity and group.labels["method"] != DENSE:
        name += f" {group.labels['sparsity']:.0%}"
    return name


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")


def _relative(path: Path, out: Path) -> str:
    return os.path.relpath(path.resolve(), out.resolve())
