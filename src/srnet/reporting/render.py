"""Plain-text tables and matplotlib plots (Agg, written atomically) for run results and masks."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from textwrap import fill
from typing import Any

import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from srnet.errors import SrnetError
from srnet.evaluation.mask_analysis import SparsityTable, sparsity_table
from srnet.io import atomic_write
from srnet.models import ALL_ROLES
from srnet.rundir.record import RunMetrics

PLOT_FORMATS = ("png", "pdf", "svg")


def format_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str],
    floatfmt: str | Mapping[str, str] = ".4f",
    *,
    markdown: bool = False,
) -> str:
    """Render ``rows`` as an aligned plain-text (or Markdown) table with a header and a rule.

    Floats use ``floatfmt`` (one format spec, or one per column with ``.4f`` for the rest);
    missing and ``None`` values print as ``-``.  Numeric columns are right-aligned.
    """
    def cell(column: str, value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, bool | numbers.Integral):
            return str(value)
        if isinstance(value, numbers.Real):
            spec = floatfmt if isinstance(floatfmt, str) else floatfmt.get(column, ".4f")
            return format(float(value), spec)
        return str(value)

    cells = [[cell(c, row.get(c)) for c in columns] for row in rows]
    numeric = [
        all(_is_number(row.get(c)) or row.get(c) is None for row in rows) for c in columns
    ]
    widths = [max([3 if markdown else 1, len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]

    sep = " | " if markdown else "  "

    def line(values: Sequence[str]) -> str:
        cols = zip(values, widths, numeric, strict=True)
        text = sep.join(v.rjust(w) if num else v.ljust(w) for v, w, num in cols)
        return f"| {text} |" if markdown else text.rstrip()

    if markdown:
        marks = [("-" * (w - 1) + ":") if num else "-" * w for w, num in zip(widths, numeric, strict=True)]
        rule = "| " + " | ".join(marks) + " |"
    else:
        rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(columns), rule, *(line(r) for r in cells)]) + "\n"


def summary_table(metrics: RunMetrics) -> str:
    """The ID vs OOD table of one run's record.

    A header line (run, task, model, sparsity); one row per evaluated split with accuracy, the
    primary metric, the easy/hard gap (ID, when bias predictions exist), the shortcut gap and
    F_bias (OOD); then, for each split scored under a collapse rule, the rule and the other
    rule's accuracy and gap, and a heuristic x label table for each HANS-like split.
    """
    head = [f"{key} {value}" for key in ("run", "task", "model")
            if (value := getattr(metrics, key)) is not None]
    if metrics.sparsity is not None and metrics.sparsity.overall is not None:
        head.append(f"sparsity {metrics.sparsity.overall:.1%}")
    f_bias = metrics.f_bias or {}
    rows = [
        {
            "split": split,
            "kind": kind.upper(),
            "n": block.get("n"),
            "accuracy": block.get("accuracy"),
            "primary": block.get("primary"),
            "easy-hard": (block.get("easy_hard") or {}).get("gap"),
            "shortcut_gap": block.get("shortcut_gap"),
            "f_bias": f_bias.get(split) if kind == "ood" else None,
        }
        for kind, blocks in (("id", metrics.id), ("ood", metrics.ood))
        for split, block in blocks.items()
    ]
    columns = ["split", "kind", "n", "accuracy", "primary"]
    columns += [c for c in ("easy-hard", "shortcut_gap", "f_bias") if any(r[c] is not None for r in rows)]
    parts = ["  ".join(head), format_table(rows, columns)]  # collapse lines: printed last, once
    for split, block in metrics.ood.items():
        if block.get("collapse"):
            parts.append(_rules_line(split, block))
        by_heuristic = block.get("by_heuristic")
        if by_heuristic:
            labels = sorted({label for cells in by_heuristic.values() for label in cells})
            grid = [{"heuristic": h, **cells} for h, cells in by_heuristic.items()]
            table = format_table(grid, ["heuristic", *labels])
            parts.append(f"{split}: accuracy by heuristic x label\n{table}")
    return "\n".join(parts)


def collapse_warnings(metrics: RunMetrics) -> list[str]:
    """One ``COLLAPSED:`` line per evaluation split on which the model collapsed: an ID split at
    chance or in one class, a challenge split with one class taking at least
    :data:`~srnet.evaluation.metrics.COLLAPSE_FRACTION` of the predictions (the report's flag)."""
    run = metrics.run or "the run"
    lines = []
    for split, block in metrics.id.items():
        if block.get("collapsed") and "chance" in block:
            lines.append(f"COLLAPSED: {run} is at chance on ID split {split} (accuracy "
                         f"{block['accuracy']:.4f}, majority class {block['chance']:.4f}): the model was "
                         "lost, its numbers are no result")
    for split, block in metrics.ood.items():
        if block.get("collapsed"):
            majority = block.get("majority") or {}
            share = f"{majority['fraction']:.0%} of" if "fraction" in majority else "nearly all"
            lines.append(f"COLLAPSED: {run} puts {share} its {split} predictions in one class "
                         f"({majority.get('label', '?')}): its accuracy and shortcut gap there are no "
                         "robustness")
    return lines


def _rules_line(split: str, block: Mapping[str, Any]) -> str:
    """One line naming the collapse rule of a split's numbers and the other rule's results."""
    rule = block["collapse"]
    line = f"{split}: collapse rule {rule}"
    for other, scores in (block.get("by_rule") or {}).items():
        if other != rule:
            gap = scores.get("shortcut_gap")
            line += f"; under {other}: accuracy {scores['accuracy']:.4f}"
            line += f", shortcut gap {gap:.4f}" if gap is not None else ""
    if block.get("rule_disagreement") is not None:
        line += f"; {block['rule_disagreement']} of {block.get('n')} predictions differ"
    return line + "\n"


def plot_sparsity_heatmap(
    source: Mapping[str, torch.Tensor] | SparsityTable,
    path: str | Path,
    *,
    title: str | None = None,
) -> Path:
    """Plot sparsity as a layers × roles heatmap (masks or a ``sparsity_table``) to PNG/PDF/SVG."""
    table = source if isinstance(source, SparsityTable) else sparsity_table(source)
    if not table.by_layer_role:
        raise SrnetError(f"{path}: no per-layer masked weights to plot")
    layers = sorted({layer for layer, _ in table.by_layer_role})
    present = {role for _, role in table.by_layer_role}
    roles = [r for r in ALL_ROLES if r in present] + sorted(present - set(ALL_ROLES))
    grid = np.full((len(layers), len(roles)), np.nan)
    for (layer, role), value in table.by_layer_role.items():
        grid[layers.index(layer), roles.index(role)] = value

    fig = new_figure(figsize=(1.1 * len(roles) + 2.0, 0.45 * len(layers) + 1.6))
    ax = fig.add_subplot()
    image = ax.imshow(grid, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    for (i, j), value in np.ndenumerate(grid):
        if not np.isnan(value):
            color = "black" if value > 0.6 else "white"
            ax.text(j, i, f"{value:.0%}", ha="center", va="center", fontsize=8, color=color)
    ax.set_xticks(range(len(roles)), roles)
    ax.set_yticks(range(len(layers)), [str(layer) for layer in layers])
    ax.set_xlabel("role")
    ax.set_ylabel("layer")
    ax.set_title(title or f"Sparsity by layer and role (overall {table.overall:.1%})")
    fig.colorbar(image, ax=ax, label="sparsity", format=PercentFormatter(xmax=1.0))
    return save_figure(fig, path)


@dataclass(frozen=True)
class Curve:
    """One line of a panel: points (sparsity, mean, std or None) of one method x loss."""

    name: str
    points: Sequence[tuple[float, float, float | None]]


@dataclass(frozen=True)
class Panel:
    """One axes of :func:`plot_sparsity_curves`: pruned curves and dense reference levels."""

    title: str
    ylabel: str
    curves: Sequence[Curve]
    dense: Sequence[tuple[str, float, float | None]] = ()
    """(name, mean, std) of dense models, drawn as horizontal dashed lines with a band."""


SPARSITY_AXIS = "sparsity (% of encoder weights removed)"


MAX_COLUMNS = 3
"""Panels per row of :func:`plot_sparsity_curves`' grid."""


def plot_sparsity_curves(panels: Sequence[Panel], path: str | Path, *, title: str | None = None,
                         xlabel: str = SPARSITY_AXIS) -> Path:
    """Metrics against sparsity (or another fraction, ``xlabel``), one panel per metric on a grid
    (:func:`sparsity_curves_figure`); panels with nothing to draw are left out."""
    drawn = [panel for panel in panels if panel.curves or panel.dense]
    if not drawn:
        raise SrnetError(f"{path}: no points to plot")
    return save_figure(sparsity_curves_figure(drawn, title=title, xlabel=xlabel), path)


def sparsity_curves_figure(panels: Sequence[Panel], *, title: str | None = None,
                           xlabel: str = SPARSITY_AXIS) -> Figure:
    """The papers' figure on a grid of up to :data:`MAX_COLUMNS` panels a row, titles wrapped.

    Each curve is a line with markers and a ±std band; dense models are horizontal dashed lines
    (with their ±std band), not points at 0%.  Values are fractions, shown as percentages, each
    panel's y axis fitted to its own values; one legend for all panels sits outside the data, on
    the right.
    """
    names = list(dict.fromkeys(
        [c.name for p in panels for c in p.curves] + [f"{d[0]} (dense)" for p in panels for d in p.dense]
    ))
    colors = {name: f"C{i % 10}" for i, name in enumerate(names)}
    columns = min(MAX_COLUMNS, len(panels))
    rows = -(-len(panels) // columns)
    fig = new_figure(figsize=(4.4 * columns + 2.8, 3.4 * rows + 0.8))
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    handles: dict[str, Any] = {}
    for ax, panel in zip(axes, panels, strict=False):
        handles.update(_draw_panel(ax, panel, colors, xlabel))
    for ax in axes[len(panels):]:
        ax.remove()  # the last row's unused cells
    outside_legend(fig, list(handles.values()), list(handles), "method / loss (±std over seeds)")
    if title:
        fig.suptitle(fill(title, 110))
    return fig


def _draw_panel(ax, panel: Panel, colors: Mapping[str, str], xlabel: str) -> dict[str, Any]:
    """One panel's curves (±std bands) and dense levels; returns the legend handles by name."""
    handles: dict[str, Any] = {}
    xs_all = [x for c in panel.curves for x, _, _ in c.points] or [0.0, 1.0]
    for curve in panel.curves:
        xs, means, stds = zip(*sorted(curve.points), strict=True)
        color = colors[curve.name]
        (handles[curve.name],) = ax.plot(xs, means, "o-", color=color, label=curve.name)
        if any(s is not None for s in stds):
            lo = [m - (s or 0.0) for m, s in zip(means, stds, strict=True)]
            hi = [m + (s or 0.0) for m, s in zip(means, stds, strict=True)]
            ax.fill_between(xs, lo, hi, color=color, alpha=0.2, linewidth=0)
    for name, mean, std in panel.dense:
        label = f"{name} (dense)"
        handles[label] = ax.axhline(mean, color=colors[label], linestyle="--", label=label)
        if std:
            ax.axhspan(mean - std, mean + std, color=colors[label], alpha=0.1, linewidth=0)
    ax.set_xlim(min(xs_all) - 0.05, max(xs_all) + 0.05)
    ax.set_title(fill(panel.title, 48), fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(fill(panel.ylabel, 36))
    ax.xaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=0))
    ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0))
    ax.grid(alpha=0.3)
    return handles


def plot_group_bars(
    table: Mapping[str, Mapping[str, Mapping[str, tuple[float, float | None]]]],
    path: str | Path,
    *,
    title: str,
    group_name: str = "heuristic",
) -> Path:
    """Accuracy bars by group (e.g. HANS heuristic) x gold label, one bar per model.

    ``table`` is ``{model: {group: {label: (mean, std)}}}``; one panel (row) per label, groups
    along the x axis, error bars of ±std; the legend sits outside the data, on the right.
    """
    labels = list(dict.fromkeys(
        lab for by_group in table.values() for cells in by_group.values() for lab in cells
    ))
    groups = list(dict.fromkeys(g for by_group in table.values() for g in by_group))
    if not labels or not groups:
        raise SrnetError(f"{path}: no group accuracies to plot")
    models = list(table)
    width = 0.8 / len(models)
    panel_width = max(5.0, 0.15 * len(models) * len(groups) + 2.0)
    fig = new_figure(figsize=(panel_width + 3.0, 3.0 * len(labels) + 0.6))
    axes = np.atleast_1d(fig.subplots(len(labels), 1, sharex=True))
    for ax, label in zip(axes, labels, strict=True):
        for i, model in enumerate(models):
            cells = [table[model].get(g, {}).get(label) for g in groups]
            xs = [j + (i - (len(models) - 1) / 2) * width for j in range(len(groups))]
            means = [c[0] if c else np.nan for c in cells]
            errs = [c[1] if c and c[1] is not None else np.nan for c in cells]
            ax.bar(xs, means, width, yerr=errs, capsize=2, color=f"C{i % 10}", label=model)
        ax.set_xticks(range(len(groups)), [g.replace("_", " ") for g in groups])
        ax.set_title(f"gold label: {label}")
        ax.set_ylabel("accuracy")
        ax.set_ylim(0.0, 1.05)
        ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0))
        ax.grid(axis="y", alpha=0.3)
    axes[-1].set_xlabel(group_name)
    handles, names = axes[0].get_legend_handles_labels()
    outside_legend(fig, handles, names, "model (±std over seeds)")
    fig.suptitle(title)
    return save_figure(fig, path)


def plot_similarity(names: Sequence[str], matrix: np.ndarray, path: str | Path, *, title: str) -> Path:
    """A symmetric similarity matrix (e.g. mask Jaccard) as an annotated heatmap in [0, 1]."""
    if len(names) < 2:
        raise SrnetError(f"{path}: need at least two masks to compare")
    size = 1.0 * len(names) + 3.0
    fig = new_figure(figsize=(size + 1.5, size))
    ax = fig.add_subplot()
    image = ax.imshow(matrix, cmap="magma", vmin=0.0, vmax=1.0)
    for (i, j), value in np.ndenumerate(matrix):
        if not np.isnan(value):
            color = "black" if value > 0.6 else "white"
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=9, color=color)
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
    ax.set_yticks(range(len(names)), names)
    ax.set_title(title)
    fig.colorbar(image, ax=ax, label="Jaccard similarity of kept weights")
    return save_figure(fig, path)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


LEGEND_WIDTH = 30
"""Characters per line of a legend label (longer labels wrap, so the legend stays narrow)."""


def outside_legend(fig: Figure, handles: Sequence[Any], labels: Sequence[str], title: str | None = None,
                   fontsize: float | str | None = None) -> None:
    """One legend for the whole figure, outside the data on the right, its labels wrapped at
    :data:`LEGEND_WIDTH` characters (smaller type past 6 entries): long labels (a recipe label
    naming its differing keys) do not squeeze the plots."""
    wrapped = [fill(str(label), LEGEND_WIDTH) for label in labels]
    size = fontsize if fontsize is not None else ("small" if len(wrapped) > 6 else None)
    fig.legend(list(handles), wrapped, loc="outside right center", title=title, fontsize=size,
               title_fontsize=size)


def new_figure(figsize: tuple[float, float]) -> Figure:
    """A constrained-layout figure on the Agg canvas (no GUI, safe in worker processes)."""
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` atomically at 150 dpi in the format of ``path``'s suffix."""
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in PLOT_FORMATS:
        raise SrnetError(f"plot file {path} must end in one of {['.' + f for f in PLOT_FORMATS]}")
    return atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=150))
