"""The TAMT study's table, dev-loss-vs-downstream figure and mask similarity (issue 9 §5).

Reads a sweep folder of ``recipes/studies/tamt_cpu.yaml`` (or ``tamt.yaml``): every search stage
(``random``, ``omp``, ``imp_mlm``, ``tamt_*``: a ``text`` run with a mask and its MLM/KD dev
losses), every transfer run (a task run whose ``pruning.mask_file`` is one of those masks) and the
dense references (``mlm_head`` for the dev losses, ``dense_*`` for the transfers).  Writes
``table.md``, ``loss_vs_downstream.png`` and ``mask_jaccard_<sparsity>.png`` into ``--out``.

    python benchmarks/tamt_table.py runs/studies/tamt_cpu --out docs/results/tamt_cpu
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.lines import Line2D
from scipy.stats import spearmanr

from srnet.evaluation.mask_analysis import compare_masks
from srnet.experiments.aggregate import load_run
from srnet.report import format_table, new_figure, plot_similarity, save_figure
from srnet.sparsity.mask_io import load_masks

METHODS = {"random": "random", "omp": "OMP", "imp_mlm": "IMP-MLM", "tamt_mlm": "TAMT-MLM",
           "tamt_kd": "TAMT-KD", "tamt_mlm_kd": "TAMT-MLM+KD"}
SCORES = {"sst2": ("sst2_dev", "id"), "mnli_m": ("mnli_dev_matched", "id"), "hans": ("hans", "ood")}
SCORE_NAMES = {"sst2": "SST-2", "mnli_m": "MNLI-m", "hans": "HANS"}
LOSSES = {"mlm_dev_loss": "MLM dev loss", "kd_dev_loss": "KD dev loss (1 - cos)"}


def stage_of(folder: Path) -> str | None:
    path = folder / "stage.json"
    return json.loads(path.read_text())["stage"] if path.is_file() else None


def collect(sweep: Path) -> tuple[list[dict[str, Any]], dict[Path, dict[str, Any]]]:
    """One row per mask (and one for the dense model), its dev losses and transfer scores."""
    stages = {p: stage_of(p) for p in sorted(sweep.glob("*/*")) if (p / "metrics.json").is_file()}
    rows: dict[Path, dict[str, Any]] = {}
    dense: dict[str, Any] = {"method": "dense", "sparsity": 0.0}
    transfers = []
    for folder, stage in stages.items():
        if stage in METHODS or stage == "mlm_head":
            metrics = json.loads((folder / "metrics.json").read_text())
            if stage == "mlm_head":
                dense.update(metrics["pretraining"])
            else:
                rows[folder.resolve()] = {"method": METHODS[stage], **metrics["pretraining"],
                                          "sparsity": metrics["sparsity"]["overall"]}
        elif stage is not None:
            transfers.append(folder)
    for folder in transfers:  # after every mask's row exists
        run = load_run(folder)
        mask = (run.recipe.get("pruning") or {}).get("mask_file")
        source = None if mask is None else Path(mask).resolve()  # a run folder or its mask file
        target = dense if source is None else rows.get(source if source.is_dir() else source.parent)
        if target is None:
            continue
        for column, (split, kind) in SCORES.items():
            block = (run.metrics.get(kind) or {}).get(split)
            if block is not None:
                target[column] = block["accuracy"]
                if column == "hans":
                    target["hans_gap"] = block.get("shortcut_gap")
    order = list(METHODS.values())
    table = [dense, *sorted(rows.values(), key=lambda r: (round(r["sparsity"], 2), order.index(r["method"])))]
    return table, rows


def spearman(x: list[float], y: list[float]) -> float | None:
    """Spearman's rank correlation (scipy; average ranks for ties); None when either side is
    constant, where it is undefined."""
    if len(set(x)) < 2 or len(set(y)) < 2:
        return None
    return float(spearmanr(x, y).statistic)


def correlations(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Spearman of each dev loss with each downstream score: pooled over every mask, and the mean
    over sparsities of the within-sparsity correlation (sparsity itself drives both); a level
    whose scores are all equal (e.g. every mask at chance) has no correlation and is left out."""
    masks = [r for r in table if r["method"] != "dense"]
    out = []
    for loss in LOSSES:
        for score in SCORES:
            pairs = [r for r in masks if loss in r and score in r]
            if len(pairs) < 3:
                continue
            within = []
            for s in sorted({round(r["sparsity"], 2) for r in pairs}):
                level = [r for r in pairs if round(r["sparsity"], 2) == s]
                rho = spearman([r[loss] for r in level], [r[score] for r in level])
                if len(level) >= 3 and rho is not None:
                    within.append(rho)
            out.append({"dev loss": loss, "score": score, "n": len(pairs), "levels": len(within),
                        "spearman pooled": spearman([r[loss] for r in pairs], [r[score] for r in pairs]),
                        "spearman within sparsity (mean)": float(np.mean(within)) if within else None})
    return out


def plot(table: list[dict[str, Any]], path: Path) -> Path:
    fig = new_figure((11, 7.5))
    axes = fig.subplots(2, 3)
    markers = {0.5: "o", 0.7: "s", 0.9: "^"}
    for i, loss in enumerate(LOSSES):
        for j, score in enumerate(SCORES):
            ax = axes[i, j]
            for k, method in enumerate(METHODS.values()):
                for r in (r for r in table if r["method"] == method and loss in r and score in r):
                    marker = markers.get(round(r["sparsity"], 1), "x")
                    ax.scatter(r[loss], r[score], color=f"C{k}", marker=marker, s=36)
            dense = table[0]
            if score in dense:
                ax.axhline(dense[score], color="grey", ls="--", lw=1)
            ax.set_xlabel(LOSSES[loss])
            ax.set_ylabel(f"{SCORE_NAMES[score]} accuracy after transfer")
            ax.grid(alpha=0.3)
    handles = {m: Line2D([], [], color=f"C{k}", marker="s", ls="") for k, m in enumerate(METHODS.values())}
    handles["dense (unpruned)"] = Line2D([], [], color="grey", ls="--")
    for sparsity, marker in markers.items():
        handles[f"sparsity {sparsity:.0%}"] = Line2D([], [], color="black", marker=marker, ls="")
    fig.legend(handles.values(), handles.keys(), loc="outside right center", fontsize=8)
    fig.suptitle("TAMT study (default backbone, CPU schedule): subnetwork's pre-training dev loss vs "
                 "downstream accuracy (colour: method, marker: sparsity)", fontsize=10)
    return save_figure(fig, path)


def similarity(rows: dict[Path, dict[str, Any]], out: Path) -> list[str]:
    """Jaccard of kept weights between the methods' masks at each sparsity (heatmap + table)."""
    lines = []
    for sparsity in sorted({round(r["sparsity"], 1) for r in rows.values()}):
        level = sorted(((p, r) for p, r in rows.items() if round(r["sparsity"], 1) == sparsity),
                       key=lambda pr: list(METHODS.values()).index(pr[1]["method"]))
        masks = [load_masks(p / "masks.safetensors")[0] for p, _ in level]
        names = [r["method"] for _, r in level]
        matrix = np.array([[compare_masks(a, b).overall.jaccard for b in masks] for a in masks])
        figure = plot_similarity(names, matrix, out / f"mask_jaccard_{round(sparsity * 100)}.png",
                                 title=f"Mask similarity at sparsity {sparsity:.0%} (all masked matrices)")
        cells = [{"": name, **dict(zip(names, map(float, line), strict=True))}
                 for name, line in zip(names, matrix, strict=True)]
        lines += [f"\nJaccard of kept weights at sparsity {sparsity:.0%} ({figure.name}):\n",
                  format_table(cells, ["", *names], dict.fromkeys(names, ".3f"), markdown=True)]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="folder for table.md and the figures")
    args = parser.parse_args()
    table, rows = collect(args.sweep)
    args.out.mkdir(parents=True, exist_ok=True)
    columns = ["method", "sparsity", *LOSSES, *SCORES, "hans_gap"]
    text = [format_table(table, columns, {"sparsity": ".0%", "mlm_dev_loss": ".3f", "kd_dev_loss": ".4f",
                                          "sst2": ".3f", "mnli_m": ".3f", "hans": ".3f", "hans_gap": ".3f"},
                         markdown=True)]
    rho = ["spearman pooled", "spearman within sparsity (mean)"]
    text += ["\nSpearman rank correlation of dev loss with downstream accuracy "
             "(negative = lower loss, better transfer):\n",
             format_table(correlations(table), ["dev loss", "score", "n", "levels", *rho],
                          dict.fromkeys(rho, ".2f"), markdown=True)]
    text += similarity(rows, args.out)
    (args.out / "table.md").write_text("\n".join(text) + "\n")
    print("\n".join(text))
    print(f"figure: {plot(table, args.out / 'loss_vs_downstream.png')}")


if __name__ == "__main__":
    main()
