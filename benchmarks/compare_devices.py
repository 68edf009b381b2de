"""The same runs (same recipe and seed, so the same stage keys) made on two machines, side by side.

Matches the finished runs of two result folders by their path under the folder
(``<stage>/<key>``), and prints, in points on the first easy/hard ID split, each pair's ID and hard
accuracy and their difference, then the mean absolute difference next to the seed-to-seed standard
deviation of the second folder's configurations (what a difference of devices is small against).
Run: ``python benchmarks/compare_devices.py results/winwin_easy_hard_cpu results/winwin_easy_hard_h100``.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from srnet.reporting.runs import Run, find_runs, load_run
from srnet.reporting.stats import cohorts, group_runs, run_values
from srnet.reporting.study.base import RunSet
from srnet.reporting.study.easy_hard import easy_hard_split


def load(folder: Path) -> dict[Path, Run]:
    """Run path under ``folder`` -> the run."""
    return {p.relative_to(folder): load_run(p) for p in find_runs([folder])}


def device(run: Run) -> str:
    import json

    env = run.path / "environment.json"
    return json.loads(env.read_text(encoding="utf-8")).get("device", "?") if env.is_file() else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    args = parser.parse_args()
    first, second = load(args.first), load(args.second)
    both = sorted(set(first) & set(second))
    if not both:
        raise SystemExit(f"no run of {args.first} has the same stage and key as a run of {args.second}")
    cohort = max((s for s in cohorts(list(second.values())) if s.id_splits), key=lambda s: len(s.runs))
    split = easy_hard_split(RunSet(1, cohort, group_runs(cohort)))
    if split is None:
        raise SystemExit(f"no easy/hard split in {args.second}")
    columns = (f"ID {split}", f"hard {split}")
    a, b = device(first[both[0]]), device(second[both[0]])
    print(f"# {args.first} ({a}) vs {args.second} ({b}): {len(both)} runs with equal keys\n")
    print(f"| run | seed | ID ({a}) | ID ({b}) | Δ ID | hard ({a}) | hard ({b}) | Δ hard |")
    print("|---|---|---|---|---|---|---|---|")
    deltas: dict[str, list[float]] = {c: [] for c in columns}
    for key in both:
        x, y = run_values(first[key], cohort), run_values(second[key], cohort)
        if any(x.get(c) is None or y.get(c) is None for c in columns):
            continue
        row = [str(key.parent), str(first[key].seed)]
        for c in columns:
            deltas[c].append(100 * (y[c] - x[c]))
            row += [f"{100 * x[c]:.1f}", f"{100 * y[c]:.1f}", f"{deltas[c][-1]:+.1f}"]
        print("| " + " | ".join(row) + " |")
    stds = {c: [g.stats[c].std * 100 for g in group_runs(cohort)
                if c in g.stats and len(g.runs) > 1 and g.stats[c].std is not None] for c in columns}
    print()
    for c in columns:
        if deltas[c] and stds[c]:
            print(f"{c}: mean |Δ| {statistics.mean(abs(d) for d in deltas[c]):.2f} points over "
                  f"{len(deltas[c])} runs; seed-to-seed std in {args.second}: median "
                  f"{statistics.median(stds[c]):.2f} points over {len(stds[c])} configurations")


if __name__ == "__main__":
    main()
