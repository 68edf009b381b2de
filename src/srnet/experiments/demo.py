"""The built-in demo: a sweep that shows the win-win.

Stages (run by the sweep machinery, each once, resumable): ``ft`` fine-tunes the default backbone
with CE; ``bias_model`` fits the bias model; ``control`` trains a CE mask at 50% sparsity on the
CE model and ``prune`` a PoE mask at 50% (Win-win paradigm (a)), so the difference between the
two is PoE's.  Every stage keeps its last checkpoint (``training.select: last``): selecting on the
biased ID dev split would keep the early, shortcut-following mask.  The masks start from OMP's
(hard init, kept scores 0.02) and train at ``mask_lr: 3e-4`` (a score needs 33 steps to travel
the threshold), the rate the demo's 3-seed runs in fp32 and bf16 chose over ``auto`` and the
paper's 5e-5 (docs/demo.md).  Then ``srnet report`` writes
``report/report.md`` and its figures.  The default task is the synthetic controlled-bias NLI
task; with a data folder, the real MNLI sample (subsampled) -> MNLI dev-matched and HANS.

``seeds`` > 1 runs every stage per seed (42, 1, 2, ...) into ``<name>_seeds<N>`` and prints mean
± std.  ``--set key=value`` applies to every stage (the base recipe); ``--set <stage>.key=value``
to one stage (``prune.training.epochs=1``), as grid keys do.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from srnet.config import parse_override, set_dotted
from srnet.errors import NeedsOption, SrnetError
from srnet.io import atomic_write_text, set_aside

SUMMARY = "summary.txt"

SEEDS = (42, 1, 2, 3, 4, 5, 6, 7, 8, 9)
MASK = {"method": "mask_train", "sparsity": 0.5, "params": {"init": "hard", "mask_lr": 3e-4}}
STAGES: dict[str, dict[str, Any]] = {
    "ft": {"kind": "train", "set": {"loss.name": "ce", "bias_dir": "@bias_model", "tags.paradigm": "dense"}},
    "bias_model": {"kind": "bias_fit"},
    "control": {
        "kind": "train",
        "set": {"model.init_from": "@ft", "bias_dir": "@bias_model", "dense_reference": "@ft",
                "loss.name": "ce", "pruning": dict(MASK), "tags.paradigm": "a"},
    },
    "prune": {
        "kind": "train",
        "set": {
            "model.init_from": "@ft", "bias_dir": "@bias_model", "dense_reference": "@ft",
            "loss.name": "poe", "pruning": dict(MASK), "tags.paradigm": "a",
        },
    },
}


def demo_sweep(
    data_dir: str | Path | None = None, output_dir: str | Path = "runs", overrides: list[str] | None = None,
    seeds: int = 1,
) -> dict[str, Any]:
    """The demo's sweep dict (output in ``<output_dir>/demo`` or ``<output_dir>/demo_mnli``, with a
    ``_seeds<N>`` suffix for ``seeds`` > 1)."""
    if not 1 <= seeds <= len(SEEDS):
        raise SrnetError(f"demo --seeds: {seeds} is not between 1 and {len(SEEDS)}")
    name, base, mask_stage = _synthetic() if data_dir is None else _mnli(Path(data_dir))
    name += f"_seeds{seeds}" if seeds > 1 else ""
    stages = copy.deepcopy(STAGES)
    for stage in ("control", "prune"):
        stages[stage]["set"].update(mask_stage)
    sweep = {"name": name, "output_dir": str(Path(output_dir) / name), "base": base, "stages": stages,
             "grid": {"seed": list(SEEDS[:seeds])} if seeds > 1 else {}}
    for item in overrides or []:
        key, value = parse_override(item)
        stage, _, rest = key.partition(".")
        if stage in stages and rest:
            stages[stage].setdefault("set", {})[rest] = value
        else:
            set_dotted(base, key, value, "--set")
    return sweep


def _synthetic() -> tuple[str, dict[str, Any], dict[str, Any]]:
    def split(name: str, n: int) -> dict[str, Any]:
        return {"format": "synthetic", "name": f"synthetic_{name}",
                "synthetic": {"split": name, "n": n, "bias_strength": 0.9, "seed": 0},
                **({"challenge": "hans"} if name == "challenge" else {})}

    base = {
        "task": "synthetic_nli", "model": {"name": "default", "max_length": 64},
        "data": {"train": split("train", 2000), "dev": split("dev", 500),
                 "challenge": [split("challenge", 1000)]},
        "training": {"epochs": 3, "batch_size": 32, "lr": 5e-5, "eval_every": 50, "log_every": 10,
                     "select": "last"},
    }
    return "demo", base, {"training.epochs": 2}


def _mnli(root: Path) -> tuple[str, dict[str, Any], dict[str, Any]]:
    needed = [root / "mnli/train.jsonl", root / "mnli/dev_matched.jsonl", root / "hans/train.jsonl"]
    missing = [str(p) for p in needed if not p.is_file()]
    if missing:
        raise SrnetError(f"demo --data-dir {root}: missing {missing[0]}")
    base = {
        "task": "nli", "model": {"name": "default", "max_length": 128},
        "data": {
            "train": {"path": str(needed[0]), "n": 4000, "seed": 0},
            "dev": {"path": str(needed[1]), "n": 1000, "seed": 0, "name": "mnli_dev_matched"},
            "challenge": [{"path": str(needed[2]), "n": 2000, "seed": 0, "challenge": "hans",
                           "name": "hans"}],
        },
        "training": {"epochs": 1, "batch_size": 32, "lr": 5e-5, "eval_every": 50, "log_every": 10,
                     "select": "last"},
    }
    return "demo_mnli", base, {}


@dataclass
class DemoResult:
    """A finished demo: its folder, its report and the printed summary (table + report path)."""

    output_dir: Path
    report: Path
    summary: str


def run_demo(
    data_dir: str | Path | None = None,
    output_dir: str | Path = "runs",
    overrides: list[str] | None = None,
    *,
    resume: bool = False,
    overwrite: bool = False,
    seeds: int = 1,
    progress: Callable[[str], None] = print,
) -> DemoResult:
    """Run the demo sweep and write its report and summary; a demo that has already completed
    returns its finished result again (``overwrite`` starts it over, ``resume`` continues it)."""
    from srnet.experiments.sweep.execute import execute
    from srnet.experiments.sweep.plan import RECORD, plan_sweep, record_sweep
    from srnet.models.loading import check_model_source

    data = demo_sweep(data_dir, output_dir, overrides, seeds)
    jobs = plan_sweep(data, "demo")
    out = Path(data["output_dir"])
    if not overwrite and (done := finished_demo(out, jobs)) is not None:
        return done
    check_model_source(data["base"]["model"]["name"])
    if not overwrite and (out / RECORD).is_file() and not resume:
        raise NeedsOption(f"{out} holds an unfinished demo; pass resume=True to continue it or "
                          "overwrite=True to start over", "resume", "overwrite")
    with set_aside(out if overwrite else None, "the demo"):
        record_sweep(data, out, resume=resume and not overwrite)
        result = execute(jobs, out, progress=progress)
        for job in jobs:
            if job.key in result.failed:
                raise SrnetError(f"demo stage '{job.label}' failed: {result.failed[job.key]}")
        return summarize_demo(out, progress=progress)


def finished_demo(out: Path, jobs: list) -> DemoResult | None:
    """The result of the demo in ``out`` when every stage of ``jobs`` and its summary are done."""
    summary = out / SUMMARY
    if not summary.is_file() or not all(job.complete for job in jobs):
        return None
    return DemoResult(out, out / "report" / "report.md", summary.read_text(encoding="utf-8"))


def summarize_demo(out: Path, progress: Callable[[str], None] = print) -> DemoResult:
    """Write the demo's report (``srnet report``'s machinery) and its summary: dense CE vs the
    subnetworks, one row per configuration (mean ± std over seeds) under the primary collapse rule
    (report.md has both), collapsed configurations marked."""
    from srnet.reporting.render import format_table
    from srnet.reporting.runs import find_runs, load_run, split_grid_points
    from srnet.reporting.stats import (
        COLLAPSED,
        MASK_FLIPPED,
        MASK_JACCARD,
        cohorts,
        collapsed_runs,
        group_runs,
    )
    from srnet.reporting.study import RULE_TEXT, write_report

    progress("report: writing report.md and figures")
    report = write_report([out], out / "report")
    runs = split_grid_points(load_run(p) for p in find_runs([out]) if out / "report" not in p.parents)
    found = cohorts(runs)
    lines = []
    for cohort in found:
        merging = cohort.merging_splits()
        rows = []
        for group in group_runs(cohort):
            measured = [(r.metrics.sparsity.overall if r.metrics.sparsity else None) or 0.0
                        for r in group.runs]
            row = {"model": group.name, "sparsity": f"{sum(measured) / len(measured):.1%}",
                   "n": len(group.runs)}
            for column, stat in group.stats.items():
                if column.startswith(("F_bias", f"{COLLAPSED} ", MASK_FLIPPED, MASK_JACCARD)):
                    continue
                split = column.removeprefix("abs gap ").removeprefix("gap ")
                row[column] = _mean_std(stat) + collapsed_runs(group, split)
            rows.append(row)
        columns = list(dict.fromkeys(c for row in rows for c in row))
        lines += [f"{cohort.title}", format_table(rows, columns)]
        if merging:
            lines += [f"{', '.join(merging)}: collapse rule '{cohort.rule}': {RULE_TEXT[cohort.rule]} "
                      "(report.md: both rules)"]
        if any("†" in str(v) for row in rows for v in row.values()):
            lines += ["† k/n: k of the n runs put >= 95% of their challenge predictions in one class "
                      "(collapsed): that accuracy and gap are no robustness"]
        lines += [""]
    lines += [f"report: {report.path} ({len(report.figures)} figures)"]
    text = "\n".join(lines)
    atomic_write_text(out / SUMMARY, text + "\n")
    return DemoResult(out, report.path, text + "\n")


def _mean_std(stat) -> str:
    return f"{stat.mean:.4f}" + (f" ± {stat.std:.4f}" if stat.std is not None else "")
