"""Aggregate finished runs into one comparison table (and an ID vs OOD plot)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from srnet.errors import SrnetError
from srnet.experiments.rundir import RunDir

HEURISTIC_COLUMNS = {
    "lexical_overlap": "lex", "subsequence": "sub", "constituent": "const",
}
LABEL_SUFFIX = {"entailment": "E", "non-entailment": "N"}


def run_row(run_dir: str | Path) -> dict[str, Any]:
    """One table row from a finished run: method, loss, sparsity, first ID and first OOD split."""
    run = RunDir(Path(run_dir))
    if not run.metrics.is_file():
        raise SrnetError(f"{run.metrics}: not found (is '{run_dir}' a finished srnet run?)")
    try:
        metrics = json.loads(run.metrics.read_text(encoding="utf-8"))
        recipe = yaml.safe_load(run.config.read_text(encoding="utf-8")) if run.config.is_file() else {}
    except (json.JSONDecodeError, yaml.YAMLError, UnicodeDecodeError) as exc:
        what = type(exc).__name__
        raise SrnetError(f"{run.root}: unreadable metrics.json or config.yaml ({what})") from None
    pruning = recipe.get("pruning") or {}
    row: dict[str, Any] = {
        "run": metrics.get("run", Path(run_dir).name),
        "method": pruning.get("method", "dense"),
        "loss": (recipe.get("loss") or {}).get("name", "ce"),
        "sparsity": (metrics.get("sparsity") or {}).get("overall", 0.0),
    }
    for kind in ("id", "ood"):
        splits = metrics.get(kind) or {}
        if not splits:
            continue
        name, block = next(iter(splits.items()))
        row[kind] = block.get("accuracy")
        row[f"{kind}_split"] = name
        if kind == "id" and "easy_hard" in block:
            row["easy"], row["hard"] = block["easy_hard"]["easy"], block["easy_hard"]["hard"]
        if kind == "ood":
            row["gap"] = block.get("shortcut_gap")
            for heuristic, short in HEURISTIC_COLUMNS.items():
                for label, suffix in LABEL_SUFFIX.items():
                    row[f"{short}-{suffix}"] = (block.get("by_heuristic") or {}).get(heuristic, {}).get(label)
    return row


def comparison_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The columns of :func:`run_row` that at least one row fills, in a fixed order."""
    order = ["run", "method", "loss", "sparsity", "id", "easy", "hard", "ood", "gap"]
    order += [f"{h}-{s}" for h in HEURISTIC_COLUMNS.values() for s in LABEL_SUFFIX.values()]
    return [c for c in order if any(r.get(c) is not None for r in rows)]
