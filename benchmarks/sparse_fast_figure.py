"""The sparse_fast study's figure: two panels, dense CE and dense PoE as dashed reference lines.

* left: MNLI-m and hard accuracy (mean ± std over seeds) against sparsity for the unstructured
  rows (the Win-win reference mask and its levers at 70%, all levers at 90%);
* right: hard accuracy against the speedup ``srnet bench`` measured for each structured row's
  shape (a bench JSON; dense PyTorch FP32 = 1×), and the INT8 export of the W7 run at its
  ONNX Runtime INT8 speedup.

Run::

    python benchmarks/sparse_fast_figure.py results/sparse_fast_h200 \\
        --bench results/sparse_fast_h200/bench_cpu.json \\
        --int8 results/sparse_fast_w7_cpu/eval_onnx-int8/metrics.json \\
        --out docs/results/sparse_fast_h200/sparse_fast.png
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from sparse_fast_targets import ROWS, load, values
from srnet.reporting.render import new_figure, save_figure

UNSTRUCTURED = {"u70": 0.7, "u70_kd": 0.7, "u70_grad": 0.7, "u70_all": 0.7, "u90_all": 0.9}
STRUCTURED = ("s50_omp", "s50_rec", "s50p_rec")


def stats(runs: dict[int, dict], column: str) -> tuple[float, float]:
    numbers = [values(m)[column] for m in runs.values()]
    return statistics.mean(numbers), statistics.stdev(numbers) if len(numbers) > 1 else 0.0


def speedup(bench: dict, label_part: str, runtime: str, batch: int = 32) -> float:
    """The bench row's speedup over the first model (dense PyTorch) for a model whose label holds
    ``label_part``, under ``runtime``, at ``batch``."""
    for row in bench["rows"]:
        if label_part in row["model"] and row.get("runtime", "torch") == runtime and row["batch"] == batch:
            return float(row["speedup"])
    raise SystemExit(f"no bench row for '{label_part}' ({runtime}, batch {batch})")


def bench_cpu(bench: dict) -> str:
    """The bench machine's CPU and its best int8 instructions, in a few words."""
    env = bench.get("environment", {})
    flags = env.get("cpu_int8", {}).get("flags", [])
    return f"{env.get('cpu', 'unknown CPU')}, {flags[-1] if flags else 'no int8 flags'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--bench", type=Path, required=True, help="srnet bench --out JSON of the shapes")
    parser.add_argument("--int8", type=Path, help="metrics.json of the INT8 evaluation (W7)")
    parser.add_argument("--model", default="s50_export",
                        help="a part of the bench label of the structured model (default: the W7 export)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    runs = load(args.folder)
    bench = json.loads(args.bench.read_text())
    fig = new_figure((13, 4.5))
    left, right = fig.subplots(1, 2)
    for ax, columns in ((left, ("MNLI-m", "hard")), (right, ("hard",))):
        for stage, style in (("ft", "--"), ("ft_poe", ":")):
            for column in columns:
                ax.axhline(stats(runs[stage], column)[0], linestyle=style, linewidth=1,
                           color="grey" if column == "hard" else "black", label=f"{ROWS[stage]}, {column}")
    colors = dict(zip([*UNSTRUCTURED, *STRUCTURED], [f"C{i}" for i in range(10)], strict=False))
    for offset, stage in enumerate(s for s in UNSTRUCTURED if s in runs):
        x = 100 * UNSTRUCTURED[stage] + (offset - 2) * 0.8
        for column, marker in (("MNLI-m", "o"), ("hard", "s")):
            mean, std = stats(runs[stage], column)
            left.errorbar([x], [mean], yerr=[std], fmt=marker, capsize=3, color=colors[stage],
                          label=stage if column == "hard" else None)
    left.set(xlabel="sparsity (% of encoder weights)", ylabel="accuracy (points)", xlim=(65, 95),
             title="Unstructured PoE masks: MNLI-m (o) and hard (s)")
    left.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    shape = speedup(bench, args.model, "torch")
    for stage in (s for s in STRUCTURED if s in runs):
        mean, std = stats(runs[stage], "hard")
        right.errorbar([shape], [mean], yerr=[std], fmt="o", capsize=3, color=colors[stage],
                       label=f"{stage} (PyTorch FP32)")
    if args.int8:
        metrics = json.loads(args.int8.read_text())
        hard = 100 * metrics["id"]["mnli_dev_matched"]["easy_hard"]["hard"]
        right.plot([speedup(bench, args.model, "onnxruntime-int8")], [hard], "D", color="black",
                   label="W7 export, ONNX Runtime INT8 (seed 1)")
    for target, what in ((2.0, "W6: 2x"), (3.5, "W7: 3.5x")):
        right.axvline(target, color="red", linewidth=0.8, alpha=0.5)
        right.annotate(what, (target, right.get_ylim()[0]), fontsize=7, color="red", rotation=90,
                       xytext=(2, 4), textcoords="offset points")
    threads = bench.get("threads")
    right.set(xlabel=f"speedup over dense PyTorch FP32 (batch 32, {threads} thread; {bench_cpu(bench)})",
              ylabel="hard accuracy (points)", xlim=(0.8, 4.0),
              title="Structured 50% heads + neurons, shrunk")
    right.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    save_figure(fig, args.out)


if __name__ == "__main__":
    main()
