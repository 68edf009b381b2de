"""Success at each strictness (issue 39 step 3): attacks of one victim on the same sentences, side by
side, with automatic validity estimates of their successes.

    SRNET_DATA_DIR=../shared/data python benchmarks/attack_strictness.py \
        "textfooler (Jin et al.)=DIR/textfooler/textfooler.json" \
        "textfooler adjusted (Morris et al.)=DIR/adjusted/textfooler.json" \
        "strict_synonym=DIR/strict/strict_synonym.json" --out results/attack_strictness/sst2.md

Per attack: success (successful / attacked, i.e. of the correctly classified sentences), Aua,
average queries, and two estimates over its successes: the label judge keeps the gold label
(strict_synonym's judge criteria) and every swap passes strict_synonym's per-swap checks and budget
(:meth:`StrictSynonym.audit` without the judge).  ``--no-judge`` (pairs, e.g. MNLI) marks validity
unchecked.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from srnet.evaluation.attacks import build_attack
from srnet.tasks import get_task


def estimates(attack, rows: list[dict], labels: tuple[str, ...]) -> tuple[float, float]:
    """(fraction the judge accepts, fraction passing the per-swap checks and budget) of successes."""
    judge, attack.judge = attack.judge, None
    filters = [attack.audit(r["original"], r["perturbed"], labels.index(r["gold"])) is None for r in rows]
    attack.judge = judge
    accepted = [
        attack.accept((r["original"], None), [(r["perturbed"], None)], labels.index(r["gold"]))[0]
        for r in rows
    ]
    n = max(len(rows), 1)
    return sum(accepted) / n, sum(filters) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("attacks", nargs="+", help="LABEL=path/to/<attack>.json")
    parser.add_argument("--out", default=None)
    parser.add_argument("--no-judge", action="store_true", help="validity unchecked (no judge for the task)")
    args = parser.parse_args()
    strict = None
    if not args.no_judge:
        strict = build_attack("strict_synonym")
        strict.ready(get_task("sentiment"), Path(os.environ.get("SRNET_DATA_DIR", ".")))
        strict.prepare(None, None)
    lines = [
        "| attack | attacked | success % | Aua % | avg queries | judge keeps label % | passes strict "
        "checks % | time s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for item in args.attacks:
        label, path = item.split("=", 1)
        summary = json.loads(Path(path).read_text())
        rows = [json.loads(x) for x in Path(path).with_suffix(".jsonl").read_text().splitlines()]
        wins = [r for r in rows if r["result"] == "successful"]
        if strict is None:
            judged = checked = "unchecked"
        else:
            a, b = estimates(strict, wins, get_task(summary["task"]).labels)
            judged, checked = f"{100 * a:.1f}", f"{100 * b:.1f}"
        attacked = summary["successful"] + summary["failed"]
        lines.append(
            f"| {label} | {attacked} | {100 * summary['success_rate']:.1f} | {100 * summary['aua']:.1f} | "
            f"{summary['avg_queries']:.1f} | {judged} | {checked} | {summary['time_s']} |"
        )
    table = "\n".join(lines)
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
