"""Plain-text tables and matplotlib plots (Agg, written atomically) for run results and masks."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from pathlib import Path
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
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]

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


def summary_table(metrics: Mapping[str, Any]) -> str:
    """The ID vs OOD table of one run's ``metrics.json``.

    A header line (run, task, model, sparsity); one row per evaluated split with accuracy, the
    primary metric, the easy/hard gap (ID, when bias predictions exist), the shortcut gap and
    F_bias (OOD); then a heuristic x label table for each HANS-like split.
    """
    head = [f"{key} {metrics[key]}" for key in ("run", "task", "model") if key in metrics]
    sparsity = metrics.get("sparsity") or {}
    if sparsity.get("overall") is not None:
        head.append(f"sparsity {sparsity['overall']:.1%}")
    f_bias = metrics.get("f_bias") or {}
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
        for kind in ("id", "ood")
        for split, block in (metrics.get(kind) or {}).items()
    ]
    columns = ["split", "kind", "n", "accuracy", "primary"]
    columns += [c for c in ("easy-hard", "shortcut_gap", "f_bias") if any(r[c] is not None for r in rows)]
    parts = ["  ".join(head), format_table(rows, columns)]
    for split, block in (metrics.get("ood") or {}).items():
        by_heuristic = block.get("by_heuristic")
        if by_heuristic:
            labels = sorted({label for cells in by_heuristic.values() for label in cells})
            grid = [{"heuristic": h, **cells} for h, cells in by_heuristic.items()]
            table = format_table(grid, ["heuristic", *labels])
            parts.append(f"{split}: accuracy by heuristic x label\n{table}")
    return "\n".join(parts)


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

    fig = _figure(figsize=(1.1 * len(roles) + 2.0, 0.45 * len(layers) + 1.6))
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
    return _save(fig, path)


def plot_id_ood(
    points: Sequence[Mapping[str, Any]],
    path: str | Path,
    *,
    id_name: str = "ID",
    ood_name: str = "OOD",
    title: str | None = None,
) -> Path:
    """Plot ID and OOD accuracy against sparsity, one line per method, side by side.

    ``points`` are ``{method, sparsity, id, ood}`` dicts with values in [0, 1].
    """
    series: dict[str, list[tuple[float, float, float]]] = {}
    for index, point in enumerate(points):
        method, sparsity, id_acc, ood_acc = _check_point(index, point)
        series.setdefault(method, []).append((sparsity, id_acc, ood_acc))
    if not series:
        raise SrnetError(f"{path}: no ID/OOD points to plot")

    fig = _figure(figsize=(10.0, 4.0))
    axes = fig.subplots(1, 2)
    for method, values in series.items():
        xs, ids, oods = zip(*sorted(values), strict=True)
        (line,) = axes[0].plot(xs, ids, "o-", label=method)
        axes[1].plot(xs, oods, "o-", color=line.get_color(), label=method)
    for ax, name in zip(axes, (id_name, ood_name), strict=True):
        ax.set_title(f"{name} accuracy")
        ax.set_xlabel("sparsity")
        ax.set_ylabel("accuracy")
        ax.xaxis.set_major_formatter(PercentFormatter(xmax=1.0))
        ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0))
        ax.grid(alpha=0.3)
    axes[1].legend(title="method", loc="best")
    if title:
        fig.suptitle(title)
    return _save(fig, path)


def _check_point(index: int, point: Mapping[str, Any]) -> tuple[str, float, float, float]:
    if not isinstance(point, Mapping):
        raise SrnetError(f"ID/OOD point {index} is not a mapping: {point!r}")
    for key in ("method", "sparsity", "id", "ood"):
        if key not in point:
            raise SrnetError(f"ID/OOD point {index} has no '{key}'")
    values = []
    for key in ("sparsity", "id", "ood"):
        value = point[key]
        if not _is_number(value) or not 0.0 <= float(value) <= 1.0:
            raise SrnetError(
                f"ID/OOD point {index}: '{key}' must be a number in [0, 1], got {value!r}"
            )
        values.append(float(value))
    return str(point["method"]), *values


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _figure(figsize: tuple[float, float]) -> Figure:
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, path: str | Path) -> Path:
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in PLOT_FORMATS:
        raise SrnetError(f"plot file {path} must end in one of {['.' + f for f in PLOT_FORMATS]}")
    return atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=150))
