"""The RMC paper's Table 6 layout (hard / easy / gap, in points) for a folder of finished runs.

One row per configuration (method x loss x paradigm x sparsity), mean ± std over its runs
(seeds): ID accuracy, Hard, Easy and Easy − Hard on the first ID split that has an easy/hard
split, then every other split's primary metric (challenge splits with their collapse marks).
With ``--figure PATH`` it also draws the paper's Figure 1: easy, hard and easy − hard accuracy
against sparsity, one line per method x loss (±std band), dense models as dashed lines.
Run: ``python benchmarks/easy_hard_table.py runs/rmc_easy_hard_cpu [--figure easy_hard.png]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from srnet.experiments.aggregate import DENSE, collapsed_runs, find_runs, group_runs, load_run, sections
from srnet.report import Curve, Panel, plot_sparsity_curves

PANELS = {"easy": "easy examples", "hard": "hard examples", "E-H": "easy − hard gap"}


def load(folder: Path):
    runs = [load_run(p) for p in find_runs([folder]) if "report" not in p.relative_to(folder).parts]
    return sections(runs)


def figure(folder: Path, path: Path) -> Path:
    """Easy, hard and easy − hard against sparsity for the first ID split with an easy/hard split."""
    for section in load(folder):
        groups = group_runs(section)
        split = next((s for s in section.id_splits if any(f"E-H {s}" in g.stats for g in groups)), None)
        if split is None:
            continue
        panels = []
        for kind, title in PANELS.items():
            curves: dict[str, list] = {}
            dense = []
            for group in groups:
                stat = group.stats.get(f"{kind} {split}")
                if stat is None:
                    continue
                if group.labels["method"] == DENSE:
                    dense.append((group.name, stat.mean, stat.std))
                else:
                    curves.setdefault(group.name, []).append((group.labels["sparsity"], stat.mean, stat.std))
            panels.append(Panel(f"{split}: {title}", "accuracy" if kind != "E-H" else "easy − hard accuracy",
                                [Curve(n, p) for n, p in curves.items()], dense))
        return plot_sparsity_curves(panels, path, title=f"{split}: easy / hard split against sparsity")
    raise SystemExit(f"{folder}: no run has an easy/hard split")


def table(folder: Path) -> str:
    lines = []
    for section in load(folder):
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
    parser.add_argument("--figure", type=Path, help="also draw easy / hard / gap against sparsity here")
    args = parser.parse_args()
    print(table(args.folder))
    if args.figure:
        print(f"wrote {figure(args.folder, args.figure)}")


if __name__ == "__main__":
    main()
