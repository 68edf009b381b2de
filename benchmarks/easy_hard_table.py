"""The RMC paper's Table 6 layout (hard / easy / gap, in points) for a folder of finished runs.

One row per configuration (method x loss x paradigm x sparsity), mean ± std over its runs
(seeds): ID accuracy, Hard, Easy and Easy − Hard on the first ID split that has an easy/hard
split, then every other split's primary metric (challenge splits with their collapse marks).
Run: ``python benchmarks/easy_hard_table.py runs/rmc_easy_hard_cpu``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from srnet.experiments.aggregate import collapsed_runs, find_runs, group_runs, load_run, sections


def table(folder: Path) -> str:
    runs = [load_run(p) for p in find_runs([folder]) if "report" not in p.relative_to(folder).parts]
    lines = []
    for section in sections(runs):
        groups = group_runs(section)
        split = next((s for s in section.id_splits if any(f"E-H {s}" in g.stats for g in groups)), None)
        if split is None:
            continue
        others = [f"ID {s}" for s in section.id_splits if s != split] + section.ood_splits
        header = ["model", "sparsity", "n", f"{split}", "Hard", "Easy", "Gap (E − H)", *others]
        lines += [f"| {' | '.join(header)} |", "|" + "---|" * len(header)]
        for group in groups:
            row = [group.name, f"{group.labels['sparsity']:.0%}", str(len(group.runs))]
            row += [_points(group.stats.get(f"{kind} {split}")) for kind in ("ID", "hard", "easy", "E-H")]
            row += [_points(group.stats.get(c), collapsed_runs(group, c)) for c in others]
            lines.append(f"| {' | '.join(row)} |")
    return "\n".join(lines)


def _points(stat, mark: str = "") -> str:
    """A fraction's mean ± std in points (one decimal), '-' when missing."""
    if stat is None:
        return "-"
    std = f" ± {100 * stat.std:.1f}" if stat.std is not None else ""
    return f"{100 * stat.mean:.1f}{std}{mark}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    print(table(parser.parse_args().folder))


if __name__ == "__main__":
    main()
