"""The compute-matched controls study's figure: each pre-registered pair's per-seed difference
(row − control, points on MNLI dev-matched and on its hard subset), one dot per seed and the mean
as a bar, with the rule's ±0.5 band. Read from the committed records, as the table is.

Run::

    python benchmarks/controls_figure.py results/controls_cpu --out docs/results/controls_cpu/controls.png
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from controls_table import JUDGED, PAIRS, load, values
from srnet.reporting.render import new_figure, save_figure


def differences(runs: dict, row: str, control: str, key: str) -> list[float]:
    """``row − control`` in ``key`` for every seed both have, in seed order."""
    seeds = sorted(set(runs.get(row, {})) & set(runs.get(control, {})))
    return [values(runs[row][s])[key] - values(runs[control][s])[key] for s in seeds]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    runs = load(args.folder)
    fig = new_figure((11, 4.2))
    axes = fig.subplots(1, len(JUDGED), sharey=True)
    labels = [f"{row} − {control}" for row, control in PAIRS]
    for ax, key in zip(axes, JUDGED, strict=True):
        ax.axvspan(-0.5, 0.5, color="0.9", zorder=0)
        ax.axvline(0, color="0.5", lw=0.8)
        for y, (row, control) in enumerate(PAIRS):
            diffs = differences(runs, row, control, key)
            if not diffs:
                continue
            ax.barh(y, statistics.mean(diffs), height=0.5, color="C0", alpha=0.35)
            ax.plot(diffs, [y] * len(diffs), "o", color="C0", ms=5)
            ax.annotate(f"n={len(diffs)}", (max(diffs), y), xytext=(6, -3), textcoords="offset points",
                        fontsize=8)
        ax.set_title(f"{key}: row − control (points)")
        ax.set_yticks(range(len(PAIRS)), labels)
    axes[0].invert_yaxis()  # the axes share y: once, so the first pair is on top
    fig.suptitle("Compute-matched controls (CPU): paired per-seed differences; grey: the rule's ±0.5 band")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
