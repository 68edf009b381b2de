"""The structured study's speed-vs-accuracy figure: MNLI-m lost against the measured speedup.

Points: the committed runs of ``recipes/studies/structured_kd_cpu.yaml`` (mean ± std over seeds of
MNLI-m minus the dense CE model's mean, by loss x sparsity x distillation), placed at the speedup
``srnet bench`` measured for their shape (batch 32 x 128, the thread count of the bench file); the
earlier schedule without distillation (``docs/studies/structured_cpu.md``, 1 seed, its own dense
base); and the published points of CoFi (Xia et al. 2022: 2.1x at 60% for < 1 point) and
nn_pruning (Lagunas et al. 2021: 2.0x at -0.9 points) as references (BERT-base on full MNLI).
Run::

    python benchmarks/structured_kd_figure.py results/structured_kd_cpu \\
        --bench results/structured_kd_cpu/bench_t2.json \\
        --out docs/results/structured_kd_cpu/speed_vs_accuracy.png
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

import yaml

from srnet.reporting.render import new_figure, save_figure

OLD_SCHEDULE = {  # docs/studies/structured_cpu.md: (removed, speedup at batch 32, MNLI-m); dense 0.612
    "mask_train + recovery, CE": [(0.3, 1.28, 0.477), (0.5, 1.99, 0.440), (0.7, 2.51, 0.372)],
    "mask_train + recovery, PoE": [(0.3, 1.40, 0.457), (0.5, 1.93, 0.448), (0.7, 2.68, 0.352)],
    "OMP magnitude + 120 steps, CE": [(0.3, 1.12, 0.506), (0.5, 1.96, 0.470), (0.7, 2.53, 0.428)],
}
OLD_DENSE = 0.612
REFERENCES = {"CoFi (BERT-base, published)": (2.1, -1.0), "nn_pruning (BERT-base, published)": (2.0, -0.9)}


def runs(folder: Path) -> dict[tuple[str, float, bool], list[float]]:
    """MNLI-m accuracy of every committed run, by (loss, removed fraction, distilled)."""
    out: dict[tuple[str, float, bool], list[float]] = defaultdict(list)
    for metrics in folder.rglob("metrics.json"):
        recipe = yaml.safe_load((metrics.parent / "config.yaml").read_text())
        method = recipe["pruning"]["method"]
        if method not in ("dense", "omp"):
            continue
        removed = 0.0 if method == "dense" else float(recipe["pruning"]["sparsity"])
        params = (recipe.get("objective") or {}).get("params") or {}
        accuracy = json.loads(metrics.read_text())["id"]["mnli_dev_matched"]["accuracy"]
        out[(recipe["loss"]["name"], removed, float(params.get("pred_weight", 0.0)) > 0)].append(accuracy)
    return out


def speedups(bench: Path) -> tuple[dict[float, float], int, int]:
    """PyTorch speedup at the largest batch by removed fraction (read from the exports' names), that
    batch and the thread count."""
    data = json.loads(bench.read_text())
    rows = [r for r in data["rows"] if r.get("runtime", "torch") == "torch"]
    batch = max(r["batch"] for r in rows)
    out = {}
    for row in rows:
        if row["batch"] == batch:
            name = Path(row["model"]).name
            out[float(name.rsplit("_", 1)[-1]) / 100 if name.startswith("shrunk_") else 0.0] = row["speedup"]
    return out, batch, data["threads"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--bench", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    points, (speed, batch, threads) = runs(args.results), speedups(args.bench)
    dense = statistics.mean(points[("ce", 0.0, False)])
    fig = new_figure((7.5, 4.8))
    ax = fig.subplots()
    for (loss, distilled), marker in {("ce", False): "o--", ("ce", True): "o-", ("poe", False): "s--",
                                      ("poe", True): "s-"}.items():
        cells = sorted((removed, values) for (lo, removed, kd), values in points.items()
                       if lo == loss and kd == distilled and removed > 0 and removed in speed)
        if not cells:
            continue
        xs = [speed[removed] for removed, _ in cells]
        ys = [100 * (statistics.mean(v) - dense) for _, v in cells]
        errors = [100 * statistics.stdev(v) if len(v) > 1 else 0.0 for _, v in cells]
        label = f"OMP-gradient + 250 steps, {loss.upper()}{' + KL distillation' if distilled else ''}"
        ax.errorbar(xs, ys, yerr=errors, fmt=marker, capsize=3, label=label)
        for x, y, (removed, _) in zip(xs, ys, cells, strict=True):
            ax.annotate(f"{removed:.0%}", (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    for name, cells in OLD_SCHEDULE.items():
        ax.plot([c[1] for c in cells], [100 * (c[2] - OLD_DENSE) for c in cells], "x:", alpha=0.6,
                label=f"earlier schedule: {name} (1 seed)")
    for name, (x, y) in REFERENCES.items():
        ax.plot([x], [y], "*", markersize=12, label=name)
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xlabel(f"speedup over dense, PyTorch, batch {batch} x 128 tokens, {threads} threads (x)")
    ax.set_ylabel("MNLI-m change vs dense CE (points)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
