"""Issue 38's targets W2, W5 and W6 (accuracy), answered from the records of the sparse_fast study.

Reads the committed records (``results/<study>/<stage>/<key>/{stage.json,metrics.json}``), groups
them by stage name (seeds pooled), and prints in points on MNLI dev-matched (hard = pairs the
hypothesis-only model gets wrong):

* one row per stage: MNLI-m, hard, easy, gap, SNLI, SNLI hard, HANS, mask movement (flipped %,
  Jaccard with its start), the lowest and highest per-matrix sparsity against the target, and the
  runs flagged collapsed on any split (``collapsed``: one class predicted);
* each 70% lever minus the Win-win reference row (u70), paired by seed;
* W2: at 70%, hard >= dense CE + 1.5 at MNLI-m >= dense CE - 3;
* W5: at 90%, MNLI-m >= dense CE - 10 with hard >= dense CE - 5;
* W6 (accuracy part; the speed is measured by ``srnet bench``): a structured row with
  MNLI-m >= dense PoE - 0.5 and hard >= dense PoE.

Run: ``python benchmarks/sparse_fast_targets.py results/sparse_fast_h200``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

ID = "mnli_dev_matched"
ROWS = {
    "ft": "dense CE", "ft_poe": "dense PoE",
    "u70": "70%: PoE mask (Win-win reference)", "u70_kd": "70%: + distillation from dense PoE",
    "u70_grad": "70%: + gradual 0.5 → 0.7", "u70_all": "70%: kd + gradual + 2 epochs",
    "u90_all": "90%: kd + gradual 0.7 → 0.9 + 2 epochs",
    "s50_omp": "structured 50%: OMP-gradient + distilled PoE recovery",
    "s50_mask": "structured 50%: PoE mask on frozen CE weights (before recovery)",
    "s50_rec": "structured 50%: that mask + distilled PoE recovery",
    "s50p_mask": "structured 50%: PoE mask on frozen PoE weights (before recovery)",
    "s50p_rec": "structured 50%: that mask + distilled PoE recovery",
}
"""The study's stages in report order, with what each row is."""


def values(metrics: dict) -> dict[str, float]:
    """The row's numbers of one run, in points (movement in % and Jaccard)."""
    mnli, snli, hans = metrics["id"][ID], metrics["id"]["snli_dev"], metrics["ood"]["hans"]
    out = {"MNLI-m": mnli["accuracy"], "hard": mnli["easy_hard"]["hard"], "easy": mnli["easy_hard"]["easy"],
           "gap": mnli["easy_hard"]["gap"], "SNLI": snli["accuracy"], "SNLI hard": snli["easy_hard"]["hard"],
           "HANS": hans["accuracy"]}
    out = {k: 100 * v for k, v in out.items()}
    movement = metrics.get("mask_movement")
    if movement:
        out["flipped %"] = 100 * movement["flipped"]
        out["Jaccard"] = movement["jaccard"]
    return out


def load(folder: Path) -> dict[str, dict[int, dict]]:
    """Stage name -> seed -> metrics.json."""
    runs: dict[str, dict[int, dict]] = defaultdict(dict)
    for stage_file in folder.glob("*/*/stage.json"):
        metrics_file = stage_file.parent / "metrics.json"
        if metrics_file.is_file():
            stage = json.loads(stage_file.read_text())
            runs[stage["stage"]][stage["grid"]["seed"]] = json.loads(metrics_file.read_text())
    return runs


def fmt(numbers: list[float], digits: int = 1) -> str:
    if not numbers:
        return "-"
    std = f" ± {statistics.stdev(numbers):.{digits}f}" if len(numbers) > 1 else ""
    return f"{statistics.mean(numbers):.{digits}f}{std}"


def mean(runs: dict[int, dict], column: str) -> float:
    return statistics.mean(values(m)[column] for m in runs.values())


def sparsity_check(runs: dict[int, dict]) -> str:
    """min-max per-matrix sparsity over the runs, and the target."""
    per = [v for m in runs.values() for v in m["sparsity"].get("per_matrix", {}).values()]
    targets = {m["sparsity"]["target"] for m in runs.values()} - {None}
    if not per or not targets:
        return "-"
    return f"{min(per):.3f}-{max(per):.3f} (target {'/'.join(f'{t:.2f}' for t in sorted(targets))})"


def collapsed(runs: dict[int, dict]) -> str:
    """Seeds whose model predicts one class on some split (HANS listed apart: at chance by scale)."""
    flags = defaultdict(list)
    for seed, m in sorted(runs.items()):
        for group in ("id", "ood"):
            for split, result in m[group].items():
                if result.get("collapsed"):
                    flags[split].append(seed)
    listed = [f"{split}: seeds {','.join(map(str, seeds))}" for split, seeds in flags.items()]
    return "; ".join(listed) or "none"


def table(runs: dict[str, dict[int, dict]]) -> None:
    columns = ["MNLI-m", "hard", "easy", "gap", "SNLI", "SNLI hard", "HANS", "flipped %", "Jaccard"]
    print("| stage | row | n | " + " | ".join(columns) + " | per-matrix sparsity | collapsed |")
    print("|" + "---|" * (len(columns) + 5))
    for stage, label in ROWS.items():
        if stage not in runs:
            continue
        rows = [values(m) for m in runs[stage].values()]
        cells = [fmt([r[c] for r in rows if c in r], 3 if c == "Jaccard" else 1) for c in columns]
        print(f"| {stage} | {label} | {len(rows)} | " + " | ".join(cells)
              + f" | {sparsity_check(runs[stage])} | {collapsed(runs[stage])} |")


def paired(runs: dict[str, dict[int, dict]], stage: str, reference: str) -> str:
    seeds = sorted(set(runs.get(stage, {})) & set(runs.get(reference, {})))
    parts = []
    for column in ("MNLI-m", "hard"):
        diffs = [values(runs[stage][s])[column] - values(runs[reference][s])[column] for s in seeds]
        parts.append(f"{column} {fmt(diffs)}")
    return f"{stage} − {reference} (n = {len(seeds)}): " + ", ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    runs = load(args.folder)
    if "ft" not in runs or "ft_poe" not in runs:
        raise SystemExit(f"{args.folder}: the targets need the dense CE (ft) and dense PoE (ft_poe) records")
    print(f"# Sparser and faster SRNets: {args.folder} (points on MNLI dev-matched; mean ± std over seeds)\n")
    table(runs)
    print("\n## The 70% levers, paired by seed\n")
    for stage in ("u70_kd", "u70_grad", "u70_all"):
        if stage in runs and "u70" in runs:
            print(f"- {paired(runs, stage, 'u70')}")
    ce_id, ce_hard = mean(runs["ft"], "MNLI-m"), mean(runs["ft"], "hard")
    poe_id, poe_hard = mean(runs["ft_poe"], "MNLI-m"), mean(runs["ft_poe"], "hard")
    print("\n## Targets\n")

    def verdict(stage: str, id_min: float, hard_min: float) -> str:
        if stage not in runs:
            return f"{stage}: no records"
        got_id, got_hard = mean(runs[stage], "MNLI-m"), mean(runs[stage], "hard")
        holds = got_id >= id_min and got_hard >= hard_min
        return (f"{stage}: MNLI-m {got_id:.1f} (needs ≥ {id_min:.1f}), hard {got_hard:.1f} "
                f"(needs ≥ {hard_min:.1f}): {'holds' if holds else 'not met'}")

    print("- W2 (70%): " + "; ".join(verdict(s, ce_id - 3, ce_hard + 1.5)
                                     for s in ("u70", "u70_kd", "u70_grad", "u70_all")))
    print("- W5 (90%): " + verdict("u90_all", ce_id - 10, ce_hard - 5))
    print("- W6 (structured 50%, accuracy): " + "; ".join(verdict(s, poe_id - 0.5, poe_hard)
                                                          for s in ("s50_omp", "s50_rec", "s50p_rec")))


if __name__ == "__main__":
    main()
