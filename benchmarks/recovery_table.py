"""Recoveries for a deep cut (docs/studies/compress_synthetic_recovery.md), from committed records.

Reads the baseline arm (``--baseline FOLDER:STAGE``, default today's recovery in
results/compress_synthetic_deep, stage ``deep``) and each candidate arm (``--arm FOLDER:STAGE``,
default the stages ``layers``, ``long``, ``gradual`` and ``longer`` of results/compress_synthetic_recovery),
and
prints, per arm:

* each seed's level and the minutes of its student stage (the recovery; from the stage events);
* the shipped model minus the dense PoE reference, in points, per seed and mean ± std (ID, hard,
  the challenge split, charswap accuracy under attack);
* the arm minus the baseline on those differences, paired by seed (seeds both arms have);
* how many seeds passed every gate.

Run: ``cd benchmarks && python recovery_table.py`` (``--page P`` also replaces the page's
``<!-- recovery_table -->`` block with what is printed).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from pathlib import Path

from compress_table import load, values
from controls_table import mean_std, paste_block

ROOT = Path(__file__).resolve().parents[1] / "results"
BASELINE = f"{ROOT / 'compress_synthetic_deep'}:deep"
ARMS = [f"{ROOT / 'compress_synthetic_recovery'}:{stage}"
        for stage in ("layers", "long", "gradual", "longer")]
MEASURES = ("ID", "hard", "challenge", "charswap Aua")


def student_minutes(folder: Path) -> float | None:
    """Wall minutes of the compression's student stage (each run counted from its last start, as
    the compress record counts stages), from its stage events; None if absent or unfinished."""
    from srnet.experiments.compress.run import stage_seconds

    events = folder / "stages" / "events.jsonl"
    if not events.is_file():
        return None
    rows = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
    keys = {row["key"] for row in rows if row.get("stage") == "student"}
    if not any(row.get("stage") == "student" and row["event"] == "done" for row in rows):
        return None
    return stage_seconds(folder / "stages", keys) / 60


def differences(record: dict) -> dict[str, float]:
    """Shipped minus reference, in points, on the measures (the one challenge split as
    ``challenge``)."""
    shipped, reference = values(record["figures"]["shipped"]), values(record["figures"]["teacher"])
    own = ("ID", "hard", "easy", "charswap Aua")
    challenge = [k for k in shipped if k not in own and not k.endswith(" gap")]
    out = {}
    for name in MEASURES:
        key = challenge[0] if name == "challenge" else name
        if shipped.get(key) is not None and reference.get(key) is not None:
            out[name] = shipped[key] - reference[key]
    return out


def arm(spec: str) -> tuple[str, dict[int, tuple[dict, Path]]]:
    folder, _, stage = spec.rpartition(":")
    return stage, load(Path(folder), stage)


def print_arm(name: str, found: dict[int, tuple[dict, Path]], base: dict[int, dict[str, float]]) -> None:
    """One arm's block; ``base`` empty for the baseline itself (no paired columns)."""
    seeds = sorted(found)
    print(f"## {name} ({len(seeds)} seed(s): {', '.join(map(str, seeds))})")
    levels = ", ".join(f"{found[s][0]['level']:.0%}" for s in seeds)
    minutes = [student_minutes(found[s][1]) for s in seeds]
    recovery = ", ".join("?" if m is None else f"{m:.1f}" for m in minutes)
    print(f"levels: {levels}; student stage: {recovery} min; "
          f"passed every gate: {sum(found[s][0]['passed'] for s in seeds)} of {len(seeds)}")
    diffs = {s: differences(found[s][0]) for s in seeds}
    print("| shipped - reference | per seed | mean ± std | - baseline, paired | per seed |")
    print("|---|---|---|---|---|")
    for measure in MEASURES:
        mine = [diffs[s][measure] for s in seeds if measure in diffs[s]]
        if not mine:
            continue
        paired = [diffs[s][measure] - base[s][measure] for s in seeds if s in base and measure in base[s]]
        print(f"| {measure} | {', '.join(f'{d:+.1f}' for d in mine)} | {mean_std(mine)} | "
              f"{mean_std(paired) if paired else '-'} | {', '.join(f'{d:+.1f}' for d in paired)} |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help="FOLDER:STAGE of today's recovery")
    parser.add_argument("--arm", action="append", help="FOLDER:STAGE of a candidate (repeatable)")
    parser.add_argument("--page", type=Path, help="a page whose recovery_table block gets the output")
    args = parser.parse_args()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        name, baseline = arm(args.baseline)
        base = {s: differences(record) for s, (record, _) in baseline.items()}
        print_arm(f"baseline: {name}", baseline, {})
        for spec in args.arm or ARMS:
            stage, found = arm(spec)
            if found:
                print_arm(stage, found, base)
    text = out.getvalue().rstrip()
    print(text)
    if args.page:
        paste_block(args.page, "recovery_table", text)


if __name__ == "__main__":
    main()
