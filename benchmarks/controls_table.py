"""The compute-matched controls study (issue 49 §1), answered from its committed records.

Reads ``results/controls_cpu/<stage>/<key>/{stage.json,metrics.json}`` and prints, in points on
MNLI dev-matched (hard = the pairs the hypothesis-only model gets wrong):

* the checks every number needs first: each mask at its target in every matrix, each learned mask
  moved, no run collapsed on MNLI or SNLI (``collapsed`` in its record);
* one row per stage (mean ± std over the seeds it has, and n);
* the pre-registered pairs (docs/studies/controls_cpu.md), paired by seed: the per-seed
  differences, their mean ± std, and the verdict of the rule written before the runs
  (positive: mean >= +0.5 and every seed > 0; negative: mean <= -0.5 and every seed < 0; else
  level).  A pair with fewer than 3 seeds on both sides is printed as pending, never judged.

Run: ``python benchmarks/controls_table.py results/controls_cpu`` (``--page docs/studies/controls_cpu.md``
also replaces the page's ``<!-- controls_table -->`` block with what is printed).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import statistics
from collections import defaultdict
from pathlib import Path

ID = "mnli_dev_matched"
ROWS = {
    "ft": "dense CE (933 steps)",
    "ft_poe": "dense PoE (933)",
    "c_poe2": "dense PoE, 2 epochs (1,866)",
    "c_poe4": "dense PoE, 4 epochs (3,732)",
    "u70_all": "W2: 70% PoE mask, kd + gradual + 2 epochs",
    "c_dense_kd": "dense CE + PoE + KD, 1,866 steps, no mask",
    "c_u70_2ep": "70% PoE mask, 2 epochs, no kd, no gradual",
    "c_u70_ce": "W2 with CE and a CE teacher",
    "s50_omp": "W6: structured 50%, distilled PoE recovery",
    "c_poe_kd": "dense PoE + the same distilled epoch",
    "c_s50_ce": "W6 with CE in search and recovery",
}
PAIRS = [("u70_all", "c_dense_kd"), ("u70_all", "c_poe2"), ("u70_all", "c_poe4"), ("u70_all", "c_u70_2ep"),
         ("u70_all", "c_u70_ce"), ("s50_omp", "c_poe_kd"), ("s50_omp", "c_s50_ce")]
"""The pre-registered pairs (row - control), in the study page's order."""
MEASURES = ("MNLI-m", "hard", "easy", "gap", "SNLI", "HANS")
JUDGED = ("MNLI-m", "hard")


def values(metrics: dict) -> dict[str, float]:
    """One run's numbers in points."""
    mnli, snli, hans = metrics["id"][ID], metrics["id"]["snli_dev"], metrics["ood"]["hans"]
    raw = {"MNLI-m": mnli["accuracy"], "hard": mnli["easy_hard"]["hard"], "easy": mnli["easy_hard"]["easy"],
           "gap": mnli["easy_hard"]["gap"], "SNLI": snli["accuracy"], "HANS": hans["accuracy"]}
    return {k: 100 * v for k, v in raw.items()}


def load(folder: Path) -> dict[str, dict[int, dict]]:
    """Stage name -> seed -> metrics.json (finished runs only)."""
    runs: dict[str, dict[int, dict]] = defaultdict(dict)
    for stage_file in sorted(folder.glob("*/*/stage.json")):
        metrics_file = stage_file.parent / "metrics.json"
        if not metrics_file.is_file():
            continue
        stage = json.loads(stage_file.read_text())
        metrics = json.loads(metrics_file.read_text())
        runs[stage["stage"]][metrics["seed"]] = metrics
    return runs


HEADS = 12
"""Attention heads per layer of the studies' model (MiniLM-L6): a head matrix can only be at a
multiple of 1/12, so it is checked to within half a head of its target (30% removes 4 of 12)."""


def off_target(sparsity: dict) -> str | None:
    """The first matrix off its target in a ``metrics.json`` ``sparsity`` record, as
    "``matrix`` at ``value``, off its target ``target``" (weights and FFN neurons within 0.02,
    heads within half a head); None where every matrix is at its target or nothing is recorded."""
    target = sparsity.get("target")
    for matrix, value in (sparsity.get("per_matrix") or {}).items():
        tolerance = 0.5 / HEADS if matrix.endswith(".heads") else 0.02
        if target is not None and abs(value - target) > tolerance:
            return f"{matrix} at {value:.3f}, off its target {target}"
    return None


def checks(runs: dict[str, dict[int, dict]]) -> list[str]:
    """One line per problem: a mask off its target, a learned mask that did not move, a collapse."""
    problems = []
    for stage, by_seed in runs.items():
        for seed, m in by_seed.items():
            if off := off_target(m.get("sparsity") or {}):
                problems.append(f"{stage} seed {seed}: {off}")
            movement = m.get("mask_movement")
            if movement is not None and not movement.get("moved"):
                flipped = movement.get("flipped")
                problems.append(f"{stage} seed {seed}: the learned mask did not move (flipped {flipped})")
            for split in (ID, "snli_dev"):
                if (m["id"].get(split) or {}).get("collapsed"):
                    problems.append(f"{stage} seed {seed}: collapsed on {split}")
    return problems


def mean_std(xs: list[float], digits: int = 1) -> str:
    if len(xs) == 1:
        return f"{xs[0]:.{digits}f}"
    return f"{statistics.mean(xs):.{digits}f} ± {statistics.stdev(xs):.{digits}f}"


def paste_block(page: Path, name: str, table: str) -> None:
    """Replace the page's one ``<!-- name -->`` ... ``<!-- /name -->`` block with ``table``."""
    block = f"<!-- {name} -->\n```text\n{table}\n```\n<!-- /{name} -->"
    pattern = rf"<!-- {name} -->.*?<!-- /{name} -->"
    new, count = re.subn(pattern, lambda _: block, page.read_text(), flags=re.S)
    if count != 1:
        raise SystemExit(f"{page}: expected one {name} block, found {count}")
    page.write_text(new)


def verdict(diffs: list[float]) -> str:
    """The pre-registered rule."""
    mean = statistics.mean(diffs)
    if mean >= 0.5 and all(d > 0 for d in diffs):
        return "positive"
    if mean <= -0.5 and all(d < 0 for d in diffs):
        return "negative"
    return "level"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--page", type=Path, help="a page whose controls_table block gets the output")
    args = parser.parse_args()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_tables(load(args.folder))
    print(printed.getvalue(), end="")
    if args.page:
        paste_block(args.page, "controls_table", printed.getvalue().rstrip())


def print_tables(runs: dict[str, dict[int, dict]]) -> None:
    """The checks, the rows and the pre-registered pairs, as printed by :func:`main`."""
    problems = checks(runs)
    print("checks: " + ("every mask at its target, every learned mask moved, no collapse on MNLI or SNLI"
                        if not problems else f"{len(problems)} problem(s)"))
    for line in problems:
        print(f"  {line}")
    print("\n| row | n | " + " | ".join(MEASURES) + " |\n|---|---|" + "---|" * len(MEASURES))
    for stage, label in ROWS.items():
        by_seed = runs.get(stage, {})
        if not by_seed:
            print(f"| {label} | 0 | " + " | ".join("" for _ in MEASURES) + " |")
            continue
        rows = [values(m) for m in by_seed.values()]
        cells = [mean_std([r[k] for r in rows]) for k in MEASURES]
        print(f"| {label} | {len(rows)} | " + " | ".join(cells) + " |")
    print("\n| pair (row − control) | seeds | " + " | ".join(f"{k} per seed | {k} mean ± std | verdict"
                                                         for k in JUDGED) + " |")
    print("|---|---|" + "---|---|---|" * len(JUDGED))
    for row, control in PAIRS:
        seeds = sorted(set(runs.get(row, {})) & set(runs.get(control, {})))
        cells = []
        for key in JUDGED:
            diffs = [values(runs[row][s])[key] - values(runs[control][s])[key] for s in seeds]
            if not diffs:
                cells += ["", "", "pending"]
                continue
            judged = verdict(diffs) if len(diffs) >= 3 else f"pending ({len(diffs)} seed(s))"
            cells += [", ".join(f"{d:+.1f}" for d in diffs), mean_std(diffs), judged]
        print(f"| {row} − {control} | {','.join(map(str, seeds)) or '-'} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
