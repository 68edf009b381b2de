"""Add ``survivors`` to attack summaries written before ``srnet attack`` recorded them.

``srnet report`` forms the attack-union Aua (a sentence survives only if it survives every attack)
from each summary's ``survivors``: the ids of the examples still classified correctly after the
attack. Summaries written earlier lack them; this reads them from the ``attack/<name>.jsonl``
beside each summary under RUNS (rows whose ``result`` is ``failed``) and rewrites the summary
atomically. Run: ``python benchmarks/backfill_attack_survivors.py runs/robust_tickets_3seeds_cpu``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from srnet.io import atomic_write_json


def backfill(root: Path) -> int:
    """Summaries under ``root`` given their survivors; returns how many were rewritten."""
    done = 0
    for summary_path in sorted(root.rglob("attack/*.json")):
        rows_path = summary_path.with_suffix(".jsonl")
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        if "survivors" in summary or not rows_path.is_file():
            continue
        rows = [json.loads(line) for line in rows_path.read_text(encoding="utf-8").splitlines() if line]
        if len(rows) != summary["total"]:
            raise SystemExit(f"{rows_path}: {len(rows)} rows, its summary counts {summary['total']}")
        survivors = [r["id"] for r in rows if r["result"] == "failed"]
        atomic_write_json(summary_path, summary | {"survivors": survivors})
        done += 1
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path)
    print(f"gave {backfill(parser.parse_args().runs)} attack summaries their survivors")


if __name__ == "__main__":
    main()
