"""Issue 27's targets W1-W4, answered from the runs of the Win-win easy/hard study.

Reads every finished run under the folders given (a sweep's output or its committed
``results/`` copy), groups them as ``srnet report`` does (seeds pooled, nothing else) and prints,
in points on the first easy/hard ID split (MNLI dev-matched):

* W1: at >= 50% sparsity, the PoE subnetworks whose hard accuracy *and* ID accuracy are >= dense PoE's;
* W2: at 70%, hard >= dense CE's + 1.5 at ID >= dense CE's - 3;
* W3: at 50 and 70%, PoE mask training minus the CE mask-training control (both from dense CE) on
  hard accuracy, paired by seed: holds when mean - std of the paired differences >= 1.5;
* W4: at 90%, gradual minus fixed target on ID accuracy >= 2 (paired by seed);

and every learned mask's movement (flipped %, Jaccard with its start).  Means use the seeds each
configuration has; a target is answered only where every configuration it needs has >= 1 run.
Run: ``python benchmarks/winwin_targets.py results/winwin_easy_hard_cpu``.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from srnet.reporting.runs import DENSE, find_runs, load_run
from srnet.reporting.stats import Cohort, Group, cohorts, group_runs, run_values
from srnet.reporting.study.base import RunSet
from srnet.reporting.study.easy_hard import easy_hard_split


def mean_std(values: list[float]) -> str:
    std = f" ± {statistics.stdev(values):.1f}" if len(values) > 1 else ""
    return f"{statistics.mean(values):.1f}{std}"


def by_seed(group: Group, cohort: Cohort, column: str) -> dict[int, float]:
    """Run seed -> the column's value in points."""
    values = {run.seed: run_values(run, cohort).get(column) for run in group.runs}
    return {seed: 100 * value for seed, value in values.items() if value is not None}


def find(groups: list[Group], **labels) -> Group | None:
    hits = [g for g in groups if all(g.labels.get(k) == v for k, v in labels.items())]
    return hits[0] if len(hits) == 1 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args()
    runs = [load_run(p) for p in find_runs(args.paths)]
    scored = [s for s in cohorts(runs) if s.id_splits]
    cohort = max(scored, key=lambda s: len(s.runs))
    groups = group_runs(cohort)
    split = easy_hard_split(RunSet(1, cohort, groups))
    if split is None:
        raise SystemExit("no easy/hard split in these runs")
    idc, hard = f"ID {split}", f"hard {split}"

    def pts(group: Group | None, column: str) -> float | None:
        return None if group is None or column not in group.stats else 100 * group.stats[column].mean

    dense_ce = find(groups, method=DENSE, loss="ce")
    dense_poe = find(groups, method=DENSE, loss="poe")
    print(f"# Win-win targets on {split} (points; n = seeds)\n")
    if dense_ce is None or dense_poe is None:
        raise SystemExit("the targets need the dense CE and dense PoE runs (method dense, loss ce / poe)")
    for name, dense in (("dense CE", dense_ce), ("dense PoE", dense_poe)):
        print(f"{name}: ID {pts(dense, idc):.1f}, hard {pts(dense, hard):.1f} (n={len(dense.runs)})")
    print()

    print("## W1: PoE subnetworks at >= 50% with hard >= dense PoE's and ID >= dense PoE's\n")
    print("| configuration | sparsity | n | ID | hard | holds |\n|---|---|---|---|---|---|")
    for g in groups:
        if g.labels["method"] == DENSE or g.labels["loss"] != "poe" or g.labels["sparsity"] < 0.5:
            continue
        ok = pts(g, hard) >= pts(dense_poe, hard) and pts(g, idc) >= pts(dense_poe, idc)
        print(f"| {g.name} | {g.labels['sparsity']:.0%} | {len(g.runs)} | {pts(g, idc):.1f} | "
              f"{pts(g, hard):.1f} | {'yes' if ok else 'no'} |")

    print("\n## W2: at 70%, hard >= dense CE + 1.5 at ID >= dense CE - 3\n")
    print("| configuration | n | ID | hard | holds |\n|---|---|---|---|---|")
    for g in groups:
        if g.labels["method"] == DENSE or abs(g.labels["sparsity"] - 0.7) > 1e-9:
            continue
        ok = pts(g, hard) >= pts(dense_ce, hard) + 1.5 and pts(g, idc) >= pts(dense_ce, idc) - 3
        print(f"| {g.name} | {len(g.runs)} | {pts(g, idc):.1f} | {pts(g, hard):.1f} | "
              f"{'yes' if ok else 'no'} |")

    print("\n## W3: PoE mask minus CE mask control (from dense CE), hard accuracy, paired by seed\n")
    print("| sparsity | seeds | PoE | CE | difference (mean ± std) | holds (mean − std >= 1.5) |\n"
          "|---|---|---|---|---|---|")
    for sparsity in (0.5, 0.7):
        poe = find(groups, method="mask_train", loss="poe", paradigm="a (from CE)", sparsity=sparsity)
        ce = find(groups, method="mask_train", loss="ce", paradigm="a (from CE)", sparsity=sparsity)
        if poe is None or ce is None:
            continue
        a, b = by_seed(poe, cohort, hard), by_seed(ce, cohort, hard)
        diffs = [a[s] - b[s] for s in sorted(set(a) & set(b))]
        if not diffs:
            continue
        spread = statistics.stdev(diffs) if len(diffs) > 1 else 0.0
        ok = statistics.mean(diffs) - spread >= 1.5
        print(f"| {sparsity:.0%} | {len(diffs)} | {mean_std(list(a.values()))} | "
              f"{mean_std(list(b.values()))} | {mean_std(diffs)} | {'yes' if ok else 'no'}"
              f"{' (1 seed)' if len(diffs) == 1 else ''} |")

    print("\n## W4: 90%, gradual minus fixed target, ID accuracy, paired by seed\n")
    fixed, gradual = find(groups, paradigm="90% fixed"), find(groups, paradigm="90% gradual")
    if fixed is None or gradual is None:
        print("not answered: the 90% fixed and gradual runs are not both there yet")
    else:
        a, b = by_seed(gradual, cohort, idc), by_seed(fixed, cohort, idc)
        diffs = [a[s] - b[s] for s in sorted(set(a) & set(b))]
        print(f"gradual {mean_std(list(a.values()))}, fixed {mean_std(list(b.values()))}: difference "
              f"{mean_std(diffs)} over {len(diffs)} seed(s): "
              f"{'holds' if diffs and statistics.mean(diffs) >= 2 else 'does not hold'} (target >= 2)")

    print("\n## Mask movement (learned masks)\n")
    print("| configuration | sparsity | n | flipped % | Jaccard with start |\n|---|---|---|---|---|")
    for g in groups:
        if "mask flipped" in g.stats:
            flipped, jac = g.stats["mask flipped"], g.stats["mask jaccard"]
            print(f"| {g.name} | {g.labels['sparsity']:.0%} | {len(g.runs)} | {100 * flipped.mean:.2f} | "
                  f"{jac.mean:.3f} |")


if __name__ == "__main__":
    main()
