"""Section ``tamt``: TAMT's masks of the pre-trained model, their pre-training dev losses against
how well they transfer (docs/studies/tamt_cpu.md).

Applies when the runs include raw-text mask searches (task ``text``: a ``pretraining`` block with
the subnetwork's MLM and KD dev losses, and a mask).  One row per mask, named by its pruning
method and objective (random, OMP, IMP-MLM, TAMT-MLM, TAMT-KD, TAMT-MLM+KD), plus the dense row (a
dense text run for the losses, the dense task runs of the same sweep for the scores); the
columns after the losses are the accuracy of every task run that fine-tuned with that mask
(``pruning.params.mask_file`` naming the search run or its mask file) on each of its splits, and
the shortcut gap of the OOD ones.  Then Spearman's rank correlation of each dev loss with each
score (pooled, and the mean within sparsity levels), and the Jaccard similarity of the methods'
masks at each sparsity (tables and heatmaps ``mask_jaccard_<sparsity>.png``); the figure
``loss_vs_downstream.png`` plots every score against every loss.  The tables are also written on
their own to ``tamt_table.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.lines import Line2D
from scipy.stats import spearmanr

from srnet.compat import recorded_param
from srnet.io import atomic_write_text
from srnet.reporting.render import format_table, new_figure, outside_legend, plot_similarity, save_figure
from srnet.reporting.runs import Run
from srnet.reporting.study.base import (
    SHORT_SPLITS,
    Part,
    Study,
    StudySection,
    register_section,
    relative,
    short,
)
from srnet.reporting.study.jaccard import jaccard_matrix, jaccard_table

PRUNERS = {"random": "random", "omp": "OMP", "imp": "IMP", "mask_train": "TAMT"}
OBJECTIVES = {"mlm": "MLM", "distill": "KD", "mlm+distill": "MLM+KD"}
ORDER = ["random", "OMP", "IMP-MLM", "TAMT-MLM", "TAMT-KD", "TAMT-MLM+KD"]
LOSSES = {"mlm_dev_loss": "MLM dev loss", "kd_dev_loss": "KD dev loss (1 - cos)"}
TABLE = "tamt_table.md"
FIGURE = "loss_vs_downstream.png"
MARKERS = ["o", "s", "^", "D", "v", "P", "X"]


def is_search(run: Run) -> bool:
    """A raw-text mask search: dev losses of a masked pre-trained model."""
    return run.metrics.is_text_run and run.metrics.method not in (None, "dense") \
        and run.metrics.sparsity is not None


def is_text_dense(run: Run) -> bool:
    """A raw-text run without a mask (the dense model's dev losses, e.g. the MLM-head probe)."""
    return run.metrics.is_text_run and run.metrics.method in (None, "dense")


def method_name(run: Run) -> str:
    """random, OMP, IMP-MLM, TAMT-MLM, TAMT-KD, TAMT-MLM+KD (one-shot masks train no objective)."""
    method, objective = str(run.metrics.method), str(run.metrics.objective)
    if method in ("random", "omp"):
        return PRUNERS[method]
    return f"{PRUNERS.get(method, method)}-{OBJECTIVES.get(objective, objective)}"


def study_folder(run: Run) -> Path:
    """The sweep a run belongs to (``<sweep>/<stage>/<key>``), or its parent folder."""
    return run.path.parent.parent if (run.path / "stage.json").is_file() else run.path.parent


@dataclass
class TamtStudy:
    """The rows of one sweep's TAMT table and the search run of each mask row."""

    folder: Path
    table: list[dict[str, Any]]
    searches: list[tuple[Run, dict[str, Any]]]
    scores: list[str] = field(default_factory=list)
    gaps: list[str] = field(default_factory=list)


def collect(runs: list[Run]) -> list[TamtStudy]:
    """One table per sweep with mask searches: the dense row, then one row per mask (sorted by
    sparsity, then method), with the transfer accuracies of every task run that used the mask."""
    searches = [run for run in runs if is_search(run)]
    studies = []
    for folder in dict.fromkeys(study_folder(run) for run in searches):
        mine = [run for run in searches if study_folder(run) == folder]
        dense: dict[str, Any] = {"method": "dense", "sparsity": 0.0}
        for run in runs:
            if is_text_dense(run) and study_folder(run) == folder:
                dense.update(run.metrics.pretraining or {})
                break
        rows = {run.path.resolve(): {"method": method_name(run), **(run.metrics.pretraining or {}),
                                     "sparsity": run.metrics.sparsity.overall} for run in mine}
        by_stage_key = {tuple(run.path.parts[-2:]): run.path.resolve() for run in mine}
        ids: dict[str, None] = {}
        oods: dict[str, None] = {}
        for run in runs:  # in path order: a later transfer of the same mask and split wins
            if run.metrics.is_text_run:
                continue
            mask = recorded_param(run.recipe.get("pruning"), "mask_file")
            if mask is None:
                target = dense if run.dense and study_folder(run) == folder else None
            else:
                target = rows.get(_search_of(Path(mask), by_stage_key))  # type: ignore[arg-type]
            if target is None:
                continue
            for kind, seen in (("id", ids), ("ood", oods)):
                for split, block in getattr(run.metrics, kind).items():
                    target[short(split)] = block.get("accuracy")
                    seen.setdefault(short(split), None)
                    if kind == "ood" and "shortcut_gap" in block:
                        target[f"{short(split)}_gap"] = block["shortcut_gap"]
        known = list(SHORT_SPLITS.values())
        scores = sorted(ids, key=lambda c: known.index(c) if c in known else len(known)) + list(oods)
        gaps = [f"{c}_gap" for c in oods if any(f"{c}_gap" in r for r in [dense, *rows.values()])]
        ordered = sorted(rows.items(), key=lambda kv: (round(kv[1]["sparsity"], 2), _rank(kv[1]["method"])))
        found = {run.path.resolve(): run for run in mine}
        studies.append(TamtStudy(folder, [dense, *(row for _, row in ordered)],
                                 [(found[path], row) for path, row in ordered], scores, gaps))
    return studies


def _search_of(mask: Path, by_stage_key: dict[tuple[str, ...], Path]) -> Path | None:
    """The search run a transfer's mask file names: its folder (or the folder of the file), as
    written or, when that path does not exist from here, by its ``<stage>/<key>``."""
    folder = mask.parent if mask.suffix == ".safetensors" else mask
    if folder.exists() and folder.resolve() in by_stage_key.values():
        return folder.resolve()
    return by_stage_key.get(tuple(folder.parts[-2:]))


def _rank(method: str) -> tuple[int, str]:
    return (ORDER.index(method) if method in ORDER else len(ORDER), method)


def spearman(x: list[float], y: list[float]) -> float | None:
    """Spearman's rank correlation (average ranks for ties); None when either side is constant,
    where it is undefined."""
    if len(set(x)) < 2 or len(set(y)) < 2:
        return None
    return float(spearmanr(x, y).statistic)


def correlations(table: list[dict[str, Any]], scores: list[str]) -> list[dict[str, Any]]:
    """Spearman of each dev loss with each score: pooled over every mask, and the mean over
    sparsities of the within-sparsity correlation (sparsity itself drives both); a level whose
    scores are all equal (e.g. every mask at chance) has no correlation and is left out."""
    masks = [r for r in table if r["method"] != "dense"]
    out = []
    for loss in LOSSES:
        for score in scores:
            pairs = [r for r in masks if r.get(loss) is not None and r.get(score) is not None]
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


@register_section("tamt")
class LossVsTransfer(StudySection):
    """TAMT: each mask's pre-training dev losses against its transfer accuracy; mask similarity."""

    order = 120

    def applies(self, study: Study) -> bool:
        return any(is_search(run) for run in study.runs)

    def render(self, study: Study) -> Part:
        part = Part(lines=["## TAMT: pre-training dev loss vs transfer"])
        studies = collect(study.runs)
        for index, tamt in enumerate(studies, 1):
            prefix = "" if len(studies) == 1 else f"{index}_"
            first = len(part.figures)
            blocks = self._tables(tamt, study, prefix, part)
            text = "\n".join(blocks) + "\n"
            file = atomic_write_text(study.out / f"{prefix}{TABLE}", text)
            part.files.append(file)
            where = relative(tamt.folder, study.out)
            part.lines += ["", f"`{where}`: one row per mask (method, sparsity), its dev losses on "
                           "held-out text and the accuracy of the task runs fine-tuned with it (the "
                           f"dense row: the unpruned model); also written to `{file.name}`.", "", text]
            if study.figures and tamt.scores:
                path = _plot(tamt, study.out / f"{prefix}{FIGURE}")
                part.figures.insert(first, ("dev loss vs downstream accuracy after transfer "
                                        "(colour: method, marker: sparsity)", path))
        return part

    def _tables(self, tamt: TamtStudy, study: Study, prefix: str, part: Part) -> list[str]:
        columns = ["method", "sparsity", *LOSSES, *tamt.scores, *tamt.gaps]
        formats = {"sparsity": ".0%", "mlm_dev_loss": ".3f", "kd_dev_loss": ".4f"}
        formats |= dict.fromkeys([*tamt.scores, *tamt.gaps], ".3f")
        table = format_table(tamt.table, columns, formats, markdown=True)
        part.tables.append(table)
        blocks = [table]
        rho = ["spearman pooled", "spearman within sparsity (mean)"]
        found = correlations(tamt.table, tamt.scores)
        if found:
            blocks += ["\nSpearman rank correlation of dev loss with downstream accuracy "
                       "(negative = lower loss, better transfer):\n",
                       format_table(found, ["dev loss", "score", "n", "levels", *rho],
                                    dict.fromkeys(rho, ".2f"), markdown=True)]
        blocks += _similarity(tamt, study, prefix, part)
        return blocks


def _similarity(tamt: TamtStudy, study: Study, prefix: str, part: Part) -> list[str]:
    """Jaccard of kept weights between the methods' masks at each sparsity (table + heatmap)."""
    from srnet.sparsity.mask_io import load_masks

    lines = []
    kept = [(run, row) for run, row in tamt.searches if (run.path / "masks.safetensors").is_file()]
    for sparsity in sorted({round(row["sparsity"], 1) for _, row in kept}):
        level = sorted(((run, row) for run, row in kept if round(row["sparsity"], 1) == sparsity),
                       key=lambda pair: _rank(pair[1]["method"]))
        if len(level) < 2:
            continue
        names = [row["method"] for _, row in level]
        matrix = jaccard_matrix(names, [load_masks(run.path / "masks.safetensors")[0] for run, _ in level])
        shown = ""
        if study.figures:
            title = f"Mask similarity at sparsity {sparsity:.0%} (all masked matrices)"
            path = study.out / f"{prefix}mask_jaccard_{round(sparsity * 100)}.png"
            figure = plot_similarity(names, matrix, path, title=title)
            part.figures.append((f"Mask similarity at sparsity {sparsity:.0%}", figure))
            shown = f" ({figure.name})"
        lines += [f"\nJaccard of kept weights at sparsity {sparsity:.0%}{shown}:\n",
                  jaccard_table(names, matrix)]
    return lines


def _plot(tamt: TamtStudy, path: Path) -> Path:
    table, scores = tamt.table, tamt.scores
    methods = list(dict.fromkeys(sorted((r["method"] for r in table[1:]), key=_rank)))
    levels = sorted({round(r["sparsity"], 1) for r in table[1:]})
    markers = {s: MARKERS[i % len(MARKERS)] for i, s in enumerate(levels)}
    fig = new_figure((3.7 * len(scores) + 0.6, 3.75 * len(LOSSES)))
    axes = np.atleast_2d(fig.subplots(len(LOSSES), len(scores), squeeze=False))
    for i, loss in enumerate(LOSSES):
        for j, score in enumerate(scores):
            ax = axes[i, j]
            for k, method in enumerate(methods):
                for r in (r for r in table[1:] if r["method"] == method
                          and r.get(loss) is not None and r.get(score) is not None):
                    marker = markers[round(r["sparsity"], 1)]
                    ax.scatter(r[loss], r[score], color=f"C{k % 10}", marker=marker, s=36)
            if table[0].get(score) is not None:
                ax.axhline(table[0][score], color="grey", ls="--", lw=1)
            ax.set_xlabel(LOSSES[loss])
            ax.set_ylabel(f"{score} accuracy after transfer")
            ax.grid(alpha=0.3)
    handles = {m: Line2D([], [], color=f"C{k % 10}", marker="s", ls="") for k, m in enumerate(methods)}
    handles["dense (unpruned)"] = Line2D([], [], color="grey", ls="--")
    for sparsity, marker in markers.items():
        handles[f"sparsity {sparsity:.0%}"] = Line2D([], [], color="black", marker=marker, ls="")
    outside_legend(fig, list(handles.values()), list(handles), fontsize=8)
    fig.suptitle("TAMT: subnetwork's pre-training dev loss vs downstream accuracy "
                 "(colour: method, marker: sparsity)", fontsize=10)
    return save_figure(fig, path)
