"""The RMC-repaired study (issue 49) answered from its committed records.

Reads ``<main>/<stage>/<key>/{config.yaml,metrics.json}`` of the main sweep and, with
``--replacement DIR``, the sweep that re-ran a seed whose 70% member missed the member criterion
(≥ 55% MNLI-m; its stages ``imp70r`` and ``imp40_rmc``), and prints in points on MNLI
dev-matched (hard = the pairs the hypothesis-only model gets wrong):

* each seed's IMP members (MNLI-m; collapsed ones marked) and the 70% member the judged row used;
* ``imp40_rmc − imp40`` per seed (the judged row: the replacement's where the seed's own 70% member
  missed the criterion and a replacement ran), mean ± std and the pre-registered rule's verdict
  (``controls_table.verdict``), and the rows that missed the criterion, as run, not judged.

Run: ``python benchmarks/rmc_repaired_table.py results/rmc_repaired_cpu --replacement
results/rmc_repaired_cpu_s3r`` (``--page P`` also replaces the page's ``<!-- rmc_repaired_table -->``
block with what is printed).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from pathlib import Path

import yaml

from controls_table import mean_std, paste_block, verdict

MEMBERS = ("ft", "imp20", "imp40", "imp60", "imp70", "imp85")
CRITERION = 55.0
"""The 70% member's MNLI-m must reach this (pre-registered)."""
MEASURES = ("MNLI-m", "hard", "gap")


def runs(folder: Path) -> dict[tuple[str, int], dict[str, float | bool]]:
    """(stage, seed) -> MNLI-m, hard, gap (points) and collapsed, of every finished run."""
    found = {}
    for metrics_file in sorted(folder.glob("*/*/metrics.json")):
        seed = yaml.safe_load((metrics_file.parent / "config.yaml").read_text())["seed"]
        split = json.loads(metrics_file.read_text())["id"]["mnli_dev_matched"]
        found[(metrics_file.parent.parent.name, seed)] = {
            "MNLI-m": 100 * split["accuracy"], "hard": 100 * split["easy_hard"]["hard"],
            "gap": 100 * split["easy_hard"]["gap"], "collapsed": split["collapsed"]}
    return found


def print_tables(main: dict, replacement: dict) -> None:
    """The members, the per-seed differences, their verdicts, and the rows not judged."""
    seeds = sorted({seed for stage, seed in main if stage == "imp40_rmc"})
    print("| seed | " + " | ".join(MEMBERS) + " | 70% replacement | 70% member judged |")
    print("|---|" + "---|" * (len(MEMBERS) + 2))
    judged, unjudged = {}, {}
    for seed in seeds:
        cells = [f"{main[(s, seed)]['MNLI-m']:.2f}" + (" (collapsed)" if main[(s, seed)]["collapsed"] else "")
                 for s in MEMBERS]
        own = main[("imp70", seed)]["MNLI-m"]
        spare = replacement.get(("imp70r", seed))
        if own >= CRITERION:
            used, rmc = "its own", main[("imp40_rmc", seed)]
        elif spare is not None and spare["MNLI-m"] >= CRITERION:
            used, rmc = "the replacement", replacement[("imp40_rmc", seed)]
            unjudged[seed] = main[("imp40_rmc", seed)]
        else:
            used, rmc = "none meets 55%", None
            unjudged[seed] = main[("imp40_rmc", seed)]
        if rmc is not None:
            judged[seed] = rmc
        shown = "–" if spare is None else f"{spare['MNLI-m']:.2f}"
        print(f"| {seed} | " + " | ".join(cells) + f" | {shown} | {used} |")
    header = " | ".join(f"{m} per seed | {m} mean ± std | verdict" for m in MEASURES)
    print(f"\n| imp40_rmc − imp40 | {header} |\n|---|" + "---|---|---|" * len(MEASURES))
    for label, rows in (("judged (seeds " + ", ".join(map(str, judged)) + ")", judged),
                        *((f"seed {s}, its own 70% member (under 55%): not judged", {s: r})
                          for s, r in unjudged.items())):
        cells = []
        for measure in MEASURES:
            diffs = [rows[s][measure] - main[("imp40", s)][measure] for s in rows]
            judged_here = verdict(diffs) if len(diffs) >= 3 and rows is judged else "–"
            cells += [", ".join(f"{d:+.2f}" for d in diffs), mean_std(diffs, 2), judged_here]
        print(f"| {label} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("main", type=Path, help="the main sweep's records")
    parser.add_argument("--replacement", type=Path, help="the replacement sweep's records")
    parser.add_argument("--page", type=Path, help="a page whose rmc_repaired_table block gets the output")
    args = parser.parse_args()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_tables(runs(args.main), runs(args.replacement) if args.replacement else {})
    print(printed.getvalue(), end="")
    if args.page:
        paste_block(args.page, "rmc_repaired_table", printed.getvalue().rstrip())


if __name__ == "__main__":
    main()
