"""Copy the record of every finished run of a sweep or demo folder into the repository.

For each run directory (one with a ``metrics.json``) under SRC, copies ``metrics.json``,
``config.yaml``, ``environment.json`` and ``log.jsonl`` (and a bias stage's ``bias_metrics.json``,
a compress stage's ``compress.json`` and ``sizing.json``, a bench stage's ``bench.json``, a sweep's
``events.jsonl``, a pilot's ``pilot.json``, and the attack summaries ``attack/<name>.json`` and
``attack/<stage key>/<name>.json``) to the same relative path under DST, so a study run in parts
loses nothing between sessions.
Models, masks and predictions stay out.  Run:
``python benchmarks/collect_results.py runs/rmc_easy_hard_cpu results/rmc_easy_hard_cpu``.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from srnet.rundir.layout import attack_files

KEPT = ("metrics.json", "config.yaml", "environment.json", "log.jsonl", "bias_metrics.json", "stage.json",
        "compress.json", "sizing.json", "bench.json", "events.jsonl", "pilot.json")
MARKERS = ("metrics.json", "bias_metrics.json", "compress.json", "bench.json", "events.jsonl")
"""A folder holding one of these is a finished run or stage whose record is kept."""


def collect(src: Path, dst: Path) -> int:
    copied = 0
    for marker in sorted({path for name in MARKERS for path in src.rglob(name)}):
        run = marker.parent
        parts = run.relative_to(src).parts
        if any(part.startswith(".") or part in ("report", "checkpoints") for part in parts):
            continue
        target = dst / run.relative_to(src)
        target.mkdir(parents=True, exist_ok=True)
        for name in KEPT:
            if (run / name).is_file():
                shutil.copy2(run / name, target / name)
                copied += 1
        for summary in attack_files(run):
            kept = target / summary.relative_to(run)
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(summary, kept)
            copied += 1
    return copied


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", type=Path)
    parser.add_argument("dst", type=Path)
    args = parser.parse_args()
    print(f"copied {collect(args.src, args.dst)} files into {args.dst}")


if __name__ == "__main__":
    main()
