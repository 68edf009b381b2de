"""Section ``structured``: speed against accuracy of the models a ``bench.json`` timed.

A ``bench.json`` (a sweep's ``bench`` stage, or ``srnet bench --out``) under the folders given is
joined with the run each timed model comes from: the run itself, the run an ``export`` stage
exported (its ``export.json``), or ``shrunk/<stage>_<key>`` -> ``<stage>/<key>`` of the older
shell loop.  One row per timed model: its configuration, the fraction of heads and neurons removed
(the recipe's sparsity), the parameter count, the first ID split's accuracy, the first OOD split's
accuracy and shortcut gap, and the PyTorch speedup over the first model at every batch size (at
the longest length timed).  The table is also written on its own to ``structured_table.md``;
the figure (``speed_vs_accuracy.png``) plots accuracy and gap against the speedup at the largest
batch.  Paths that no longer exist (a sweep moved, or written from another folder) are looked up
as ``<stage>/<key>`` under the sweep folder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from srnet.errors import SrnetError
from srnet.export.runtimes import TORCH
from srnet.io import atomic_write_text
from srnet.reporting.render import format_table, new_figure, save_figure
from srnet.reporting.runs import load_run
from srnet.reporting.study.base import (
    Part,
    Study,
    StudySection,
    locate,
    register_section,
    relative,
    short,
)
from srnet.rundir.layout import RunDir

BENCH = "bench.json"
EXPORT_RECORD = "export.json"
"""What an ``export`` stage writes beside its export: the run and the mask file it came from."""
TABLE = "structured_table.md"
FIGURE = "speed_vs_accuracy.png"


@dataclass
class Timed:
    """One bench.json and the rows of its timed models whose runs were found."""

    bench: Path
    root: Path
    rows: list[dict[str, Any]]
    missing: list[str]
    batches: list[int]
    length: int | None


def bench_files(study: Study) -> list[Path]:
    """Every bench.json under the folders given (not in hidden folders or the report's own)."""
    out = study.out.resolve()
    found: dict[Path, None] = {}
    for path in study.paths:
        files = [path / BENCH] if (path / BENCH).is_file() else sorted(path.rglob(BENCH))
        for file in files:
            parts = file.relative_to(path).parts
            if not any(p.startswith(".") for p in parts) and out not in file.resolve().parents:
                found.setdefault(file, None)
    return list(found)


def sweep_root(bench: Path) -> Path:
    """The sweep folder a bench.json belongs to: the nearest folder with the sweep's record
    (``sweep.yaml``), else the bench stage's sweep (``<sweep>/<stage>/<key>/bench.json``), else
    the bench.json's own folder."""
    for folder in list(bench.parents)[:3]:
        if (folder / "sweep.yaml").is_file():
            return folder
    if (bench.parent / "stage.json").is_file():
        return bench.parent.parent.parent
    return bench.parent


def run_of(model: str, root: Path) -> Path | None:
    """The run a timed model comes from (None when it cannot be found)."""
    path = Path(model)
    export = locate(path, root, depth=3)
    if export is not None and (export.parent / EXPORT_RECORD).is_file():
        record = json.loads((export.parent / EXPORT_RECORD).read_text(encoding="utf-8"))
        return locate(record["run"], root)
    if path.parent.name == "shrunk":  # the shell loop's shrunk/<stage>_<key>
        stage, _, key = path.name.rpartition("_")
        found = root / stage / key
        return found if found.is_dir() else None
    return locate(path, root)


def timed(bench: Path) -> Timed:
    """Read one bench.json and join its PyTorch rows with their runs' metrics."""
    try:
        data = json.loads(bench.read_text(encoding="utf-8"))
        rows = [r for r in data["rows"] if r.get("runtime", TORCH.bench_label) == TORCH.bench_label]
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise SrnetError(f"{bench}: not an srnet bench result ({type(exc).__name__})") from None
    root = sweep_root(bench)
    length = max((r["length"] for r in rows), default=None)
    batches = sorted({r["batch"] for r in rows})
    speed: dict[str, dict[int, float]] = {}
    params: dict[str, float] = {}
    for row in rows:
        if row["length"] == length:
            speed.setdefault(row["model"], {})[row["batch"]] = row["speedup"]
            params[row["model"]] = row["params_m"]
    out, missing = [], []
    for model, by_batch in speed.items():
        folder = run_of(model, root)
        if folder is None or not RunDir(folder).metrics.is_file():
            missing.append(model)
            continue
        run = load_run(folder)
        labels = run.labels
        name = "dense" if labels["method"] == "dense" else f"{labels['method']} {labels['paradigm']}"
        name += f" ({labels['objective']})" if "objective" in labels else ""
        row = {"model": name, "loss": labels["loss"], "removed": labels["sparsity"],
               "params_m": params[model]}
        for split, block in list(run.metrics.id.items())[:1]:
            row[short(split)] = block.get("accuracy")
        for split, block in list(run.metrics.ood.items())[:1]:
            row[short(split)] = block.get("accuracy")
            row["gap"] = block.get("shortcut_gap")
        row |= {f"speedup_b{batch}": by_batch.get(batch) for batch in batches}
        out.append(row)
    out.sort(key=lambda r: (r["model"] != "dense", r["model"], r["loss"], r["removed"]))
    return Timed(bench, root, out, missing, batches, length)


def speed_table(rows: list[dict[str, Any]]) -> str:
    columns = list(dict.fromkeys(c for row in rows for c in row))
    formats = {c: ".3f" for c in columns if c not in ("model", "loss", "removed", "params_m")}
    formats |= {"removed": ".0%", "params_m": ".1f"} | {c: ".2f" for c in columns if c.startswith("speedup_")}
    return format_table(rows, columns, formats, markdown=True)


@register_section("structured")
class SpeedVsAccuracy(StudySection):
    """Speedup of shrunk subnetworks over dense (a ``bench.json``) against their accuracy and gap."""

    order = 110

    def applies(self, study: Study) -> bool:
        return bool(bench_files(study))

    def render(self, study: Study) -> Part:
        part = Part(lines=["## Speed vs accuracy (structured subnetworks)"])
        benches = [timed(bench) for bench in bench_files(study)]
        for index, result in enumerate(benches, 1):
            suffix = "" if len(benches) == 1 else f"_{index}"
            inside = result.root in result.bench.parents
            where = result.bench.relative_to(result.root) if inside else result.bench
            sweep = relative(result.root, study.out)
            part.lines += ["", f"`{where}` of `{sweep}`: PyTorch speedup over the first model timed "
                           f"(length {result.length}, batch sizes {', '.join(map(str, result.batches))}); "
                           "removed = the fraction of heads and FFN neurons (of weights, for an "
                           "unstructured model); accuracy and shortcut gap as each run recorded them."]
            if result.missing:
                part.lines += ["", f"Timed models whose run was not found: {', '.join(result.missing)}."]
            if not result.rows:
                continue
            table = speed_table(result.rows)
            file = atomic_write_text(study.out / f"{Path(TABLE).stem}{suffix}.md", table + "\n")
            part.lines += ["", table]
            part.tables.append(table)
            part.files.append(file)
            if study.figures:
                path = _plot(result, study.out / f"{Path(FIGURE).stem}{suffix}.png")
                part.figures.append((f"{where}: accuracy and shortcut gap against the speedup", path))
        return part


def _plot(result: Timed, path: Path) -> Path:
    rows, batch = result.rows, result.batches[-1]
    speed = f"speedup_b{batch}"
    ids = [c for c in rows[0] if c not in ("model", "loss", "removed", "params_m", "gap")
           and not c.startswith("speedup_")]
    panels = [(c, f"{c} accuracy") for c in ids[:1]]
    panels += [("gap", "shortcut gap (0 = none)")] if "gap" in rows[0] else []
    fig = new_figure((5 * len(panels), 4.2))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (key, label) in zip(axes, panels, strict=True):
        groups: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            groups.setdefault(f"{row['model']} / {row['loss']}", []).append(row)
        for name, members in sorted(groups.items()):
            members = sorted((r for r in members if r[speed] is not None and r.get(key) is not None),
                             key=lambda r: r[speed])
            style = "*" if name.startswith("dense") else "o-"
            ax.plot([r[speed] for r in members], [r[key] for r in members], style,
                    label=name, markersize=9 if style == "*" else 5)
            for r in members:
                if r["removed"]:
                    ax.annotate(f"{r['removed']:.0%}", (r[speed], r[key]), fontsize=7,
                                xytext=(3, 3), textcoords="offset points")
        ax.set_xlabel(f"speedup over the first model, batch {batch} × {result.length} tokens (×)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="lower left")
    fig.suptitle("Speed vs accuracy and bias (labels: fraction of heads+neurons removed)", fontsize=10)
    return save_figure(fig, path)
