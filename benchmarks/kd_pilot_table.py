"""The recovery-distillation pilots of `srnet compress` (issue 50), answered from their records.

Two pilots (pre-registered in docs/compress.md), one question: which distillation should the
compressed student's PoE recovery use: none, plain KL to the teacher's training-split predictions
(compress's default), or KL through the bias (``kd`` ``through_bias``)?

* ``synthetic FAST ALT``: the compress study ``results/compress_synthetic_kd`` (each seed's
  teacher and default student, inside its ``fast`` stage) and the re-run students
  ``results/compress_synthetic_kd_alt`` (the same student configs with ``pred_weight 0`` or
  ``through_bias``); measures in points: dev accuracy, its hard subset, the challenge split.
* ``mnli FOLDER``: the sweep ``results/kd_through_bias_cpu`` (dense PoE teacher ``ft_poe``, its
  30% students ``omp_poe``); MNLI-m, hard, easy, HANS. ``--reproduces results/structured_kd_cpu``
  also checks that the stages that study ran too (same keys) gave the same figures.

Each arm is named by what its recorded config says (``objective.params``), never by its folder
name. Printed: the checks (each student at its target in every matrix, no collapse), one row per
arm, and the pre-registered pairs, paired by seed, with the rule's verdict
(``controls_table.verdict``). Run: ``python benchmarks/kd_pilot_table.py synthetic
results/compress_synthetic_kd results/compress_synthetic_kd_alt``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from pathlib import Path

import yaml

from controls_table import mean_std, off_target, paste_block, verdict

ARMS = {"teacher": "dense PoE teacher", "none": "PoE, no distillation", "plain": "PoE + KL (default)",
        "through": "PoE + KL through the bias"}
PAIRS = {"synthetic": [("none", "plain"), ("through", "plain"), ("through", "none"), ("plain", "teacher"),
                       ("none", "teacher"), ("through", "teacher")],
         "mnli": [("through", "plain"), ("plain", "none"), ("through", "none")]}
JUDGED = {"synthetic": "challenge", "mnli": "hard"}


def checks(runs: dict[str, dict[int, dict]]) -> list[str]:
    """One line per student off its target (FFN neurons within 0.02, heads within half a head) or
    collapsed on a split."""
    problems = []
    for name, seeds in runs.items():
        for seed, m in sorted(seeds.items()):
            if off := off_target(m.get("sparsity") or {}):
                problems.append(f"{name} seed {seed}: {off}")
            collapsed = [split for group in ("id", "ood") for split, v in (m.get(group) or {}).items()
                         if v.get("collapsed")]
            if collapsed:
                problems.append(f"{name} seed {seed}: collapsed on {', '.join(collapsed)}")
    return problems


def arm(config: dict) -> str:
    """The arm a run belongs to, from its recorded objective."""
    if (config.get("pruning") or {}).get("method", "dense") == "dense":
        return "teacher"
    params = (config.get("objective") or {}).get("params") or {}
    if params.get("pred_weight", 1.0) == 0:
        return "none"
    return "through" if params.get("through_bias") else "plain"


def measures(task: str, metrics: dict) -> dict[str, float]:
    """One run's figures in points."""
    if task == "synthetic":
        dev = metrics["id"]["synthetic_dev"]
        raw = {"dev": dev["accuracy"], "hard": dev["easy_hard"]["hard"],
               "challenge": metrics["ood"]["synthetic_challenge"]["accuracy"]}
    else:
        mnli = metrics["id"]["mnli_dev_matched"]
        split = mnli["easy_hard"]
        raw = {"MNLI-m": mnli["accuracy"], "hard": split["hard"], "easy": split["easy"],
               "HANS": metrics["ood"]["hans"]["accuracy"]}
    return {k: 100 * v for k, v in raw.items()}


def run_folders(task: str, folders: list[Path]) -> list[Path]:
    """The run folders of the pilot: the synthetic compress stages' teacher and student, the
    re-run students, or the MNLI sweep's teacher and students."""
    if task == "synthetic":
        fast, alt = folders
        return [*sorted(fast.glob("fast/*/stages/teacher/*")), *sorted(fast.glob("fast/*/stages/student/*")),
                *sorted(p for p in alt.iterdir() if (p / "metrics.json").is_file())]
    (folder,) = folders
    return [*sorted(folder.glob("ft_poe/*")), *sorted(folder.glob("omp_poe/*"))]


def load(task: str, folders: list[Path]) -> dict[str, dict[int, dict]]:
    """Arm -> seed -> metrics.json, from the runs' recorded configs."""
    runs: dict[str, dict[int, dict]] = {}
    for run in run_folders(task, folders):
        if not (run / "metrics.json").is_file():
            continue
        config = yaml.safe_load((run / "config.yaml").read_text())
        metrics = json.loads((run / "metrics.json").read_text())
        seeds = runs.setdefault(arm(config), {})
        if config["seed"] in seeds:
            raise SystemExit(f"{run}: a second {arm(config)} run of seed {config['seed']}")
        seeds[config["seed"]] = {**metrics, "folder": str(run)}
    return runs


def reproduction(folder: Path, reference: Path) -> list[str]:
    """One line per stage run both here and in ``reference`` (same stage and key): whether its
    figures are equal to the reference study's."""
    lines = []
    for metrics_file in sorted(folder.glob("*/*/metrics.json")):
        other = reference / metrics_file.relative_to(folder)
        if not other.is_file():
            continue
        ours, theirs = (json.loads(p.read_text()) for p in (metrics_file, other))
        same = ours["id"] == theirs["id"] and ours.get("ood") == theirs.get("ood")
        stage = metrics_file.parent.relative_to(folder)
        lines.append(f"{stage}: {'equal' if same else 'DIFFERENT'} figures in {reference.name}")
    return lines


def print_tables(task: str, runs: dict[str, dict[int, dict]], reproduced: list[str]) -> None:
    problems = checks({name: seeds for name, seeds in runs.items() if name != "teacher"})
    print("checks: " + ("; ".join(problems) if problems else "every student at its target in every matrix, "
                        "none collapsed"))
    for line in reproduced:
        print(f"reproduction: {line}")
    names = list(measures(task, next(iter(next(iter(runs.values())).values()))))
    print()
    print("| arm | seeds | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for name, label in ARMS.items():
        seeds = runs.get(name)
        if not seeds:
            continue
        rows = [measures(task, seeds[s]) for s in sorted(seeds)]
        cells = [mean_std([r[m] for r in rows]) for m in names]
        print(f"| {label} | {', '.join(map(str, sorted(seeds)))} | " + " | ".join(cells) + " |")
    print()
    print("| pair | measure | per seed | mean ± std | verdict |")
    print("|---|---|---|---|---|")
    for row, control in PAIRS[task]:
        common = sorted(set(runs.get(row, {})) & set(runs.get(control, {})))
        if not common:
            continue
        for measure in names:
            diffs = [measures(task, runs[row][s])[measure] - measures(task, runs[control][s])[measure]
                     for s in common]
            judged = verdict(diffs) if len(common) >= 3 else "pending (fewer than 3 seeds)"
            per_seed = ", ".join(f"{d:+.2f}" for d in diffs)
            mark = "**" if measure == JUDGED[task] else ""
            print(f"| {ARMS[row]} − {ARMS[control]} | {mark}{measure}{mark} | {per_seed} | "
                  f"{mean_std(diffs, 2)} | {judged} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=sorted(PAIRS))
    parser.add_argument("folders", type=Path, nargs="+", help="synthetic: FAST ALT; mnli: FOLDER")
    parser.add_argument("--reproduces", type=Path,
                        help="mnli: a study whose stages of the same key must give the same figures")
    parser.add_argument("--page", type=Path, help="a page whose kd_pilot_<task> block gets the output")
    args = parser.parse_args()
    if len(args.folders) != (2 if args.task == "synthetic" else 1):
        parser.error("synthetic takes FAST ALT, mnli takes FOLDER")
    reproduced = reproduction(args.folders[0], args.reproduces) if args.reproduces else []
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_tables(args.task, load(args.task, args.folders), reproduced)
    print(printed.getvalue(), end="")
    if args.page:
        paste_block(args.page, f"kd_pilot_{args.task}", printed.getvalue().rstrip())


if __name__ == "__main__":
    main()
