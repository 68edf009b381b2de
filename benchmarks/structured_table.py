"""The structured-SRNet study's table and speed-vs-accuracy figure (issue 10 §5).

Joins ``<sweep>/bench.json`` (written by ``benchmarks/structured_study.sh``: every model timed
by ``srnet bench``, the dense CE model first) with each timed run's metrics: MNLI-m, HANS, the
shortcut gap, the parameter count and the speedup at batch 1 and 32 (PyTorch, length 128).

    python benchmarks/structured_table.py runs/structured_cpu --out docs/results/structured_cpu
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from srnet.experiments.aggregate import load_run
from srnet.report import format_table, new_figure, save_figure

ID_SPLIT, OOD_SPLIT = "mnli_dev_matched", "hans"


def run_of(model: str, sweep: Path) -> Path:
    """The run a timed model comes from: ``shrunk/<stage>_<key>`` -> ``<stage>/<key>``."""
    path = Path(model)
    if path.parent.name == "shrunk":
        stage, _, key = path.name.rpartition("_")
        return sweep / stage / key
    return path


def rows(sweep: Path) -> list[dict[str, Any]]:
    bench = json.loads((sweep / "bench.json").read_text())
    speed: dict[str, dict[int, float]] = {}
    params: dict[str, float] = {}
    for row in bench["rows"]:
        if row.get("runtime", "torch") != "torch":
            continue
        speed.setdefault(row["model"], {})[row["batch"]] = row["speedup"]
        params[row["model"]] = row["params_m"]
    out = []
    for model, by_batch in speed.items():
        run = load_run(run_of(model, sweep))
        hans = run.metrics["ood"][OOD_SPLIT]
        labels = run.labels
        out.append({
            "model": "dense" if labels["method"] == "dense" else
                     f"{labels['method']} {labels['paradigm']}",
            "loss": labels["loss"],
            "removed": labels["sparsity"],
            "params_m": params[model],
            "mnli_m": run.metrics["id"][ID_SPLIT]["accuracy"],
            "hans": hans["accuracy"],
            "gap": hans["shortcut_gap"],
            "speedup_b1": by_batch.get(1),
            "speedup_b32": by_batch.get(32),
        })
    return out


def plot(table: list[dict[str, Any]], path: Path) -> Path:
    fig = new_figure((10, 4.2))
    axes = fig.subplots(1, 2)
    for ax, key, label in ((axes[0], "mnli_m", "MNLI-m accuracy"),
                           (axes[1], "gap", "HANS shortcut gap (0 = no shortcut, -1 = all non-entailment)")):
        groups: dict[str, list[dict[str, Any]]] = {}
        for row in table:
            groups.setdefault(f"{row['model']} / {row['loss']}", []).append(row)
        for name, members in sorted(groups.items()):
            members.sort(key=lambda r: r["speedup_b32"])
            style = "*" if name.startswith("dense") else "o-"
            ax.plot([r["speedup_b32"] for r in members], [r[key] for r in members], style,
                    label=name, markersize=9 if style == "*" else 5)
            for r in members:
                if r["removed"]:
                    ax.annotate(f"{r['removed']:.0%}", (r["speedup_b32"], r[key]), fontsize=7,
                                xytext=(3, 3), textcoords="offset points")
        ax.set_xlabel("speedup over dense, batch 32 × 128 tokens, CPU (×)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="lower left")
    fig.suptitle("Structured SRNets on the MNLI sample: speed vs accuracy and bias "
                 "(labels: fraction of heads+neurons removed)", fontsize=10)
    return save_figure(fig, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="folder for table.md and the figure")
    args = parser.parse_args()
    table = sorted(rows(args.sweep),
                   key=lambda r: (r["model"] != "dense", r["model"], r["loss"], r["removed"]))
    args.out.mkdir(parents=True, exist_ok=True)
    text = format_table(table, list(table[0]), {
        "removed": ".0%", "params_m": ".1f", "mnli_m": ".3f", "hans": ".3f", "gap": ".3f",
        "speedup_b1": ".2f", "speedup_b32": ".2f"}, markdown=True)
    (args.out / "table.md").write_text(text + "\n")
    print(text)
    print(f"figure: {plot(table, args.out / 'speed_vs_accuracy.png')}")


if __name__ == "__main__":
    main()
