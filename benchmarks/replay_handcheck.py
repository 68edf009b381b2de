"""Replay hand-judged attack successes through strict_synonym's filters (issue 39 step 4).

    SRNET_DATA_DIR=../shared/data python benchmarks/replay_handcheck.py \
        results/textfooler_sst2/textfooler.jsonl results/textfooler_sst2/handcheck_sst2.md \
        --out results/attack_strictness/replay_textfooler.md

The hand check's table gives each of the first successes of the ``.jsonl`` a verdict ("valid..." or
"invalid..."); every success is put through the strict attack's checks in order: the word budget,
each swap's per-swap checks (:meth:`StrictSynonym.rejection`), the tags (:meth:`context_rejection`)
and the label judge (:meth:`accept`).  Prints how many invalid ones the filters reject and how many
valid ones they keep, and each example's first failed check.  With ``--audit N`` it also lists N
accepted single swaps of a strict attack's ``.jsonl`` in context, for reading.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from srnet.evaluation.attacks import build_attack
from srnet.evaluation.attacks.resources.text import Words
from srnet.tasks import get_task


def verdicts(table: Path) -> dict[int, str]:
    """Row number -> verdict text of a hand check's markdown table (| # | gold | changed | verdict |)."""
    out = {}
    for line in table.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0].isdigit():
            out[int(cells[0])] = cells[-1]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jsonl")
    parser.add_argument("handcheck")
    parser.add_argument("--out", default=None)
    parser.add_argument("--param", action="append", default=[], help="strict_synonym setting KEY=JSON")
    args = parser.parse_args()
    params = {k: json.loads(v) for k, v in (p.split("=", 1) for p in args.param)}
    attack = build_attack("strict_synonym", params)
    task = get_task("sentiment")
    attack.ready(task, Path(os.environ.get("SRNET_DATA_DIR", ".")))
    attack.prepare(None, None)
    judged = verdicts(Path(args.handcheck))
    rows = [json.loads(x) for x in Path(args.jsonl).read_text().splitlines()]
    successes = [r for r in rows if r["result"] == "successful"][: len(judged)]
    lines = ["| # | hand verdict | changed words | strict filters |", "|---|---|---|---|"]
    tally = {"valid": [0, 0], "invalid": [0, 0]}  # [kept, rejected]
    for number, row in enumerate(successes, 1):
        verdict = judged[number]
        kind = "invalid" if verdict.lower().startswith("invalid") else "valid"
        failure = attack.audit(row["original"], row["perturbed"], task.labels.index(row["gold"]))
        tally[kind][failure is not None] += 1
        original, perturbed = Words.split(row["original"]), Words.split(row["perturbed"])
        swaps = "; ".join(f"{original.words[i]} → {perturbed.words[i]}" for i in perturbed.changed(original))
        lines.append(
            f"| {number} | {verdict} | {swaps} | {'kept' if failure is None else 'rejected: ' + failure} |"
        )
    summary = (
        f"invalid rejected: {tally['invalid'][1]} of {sum(tally['invalid'])}; "
        f"valid kept: {tally['valid'][0]} of {sum(tally['valid'])}"
    )
    print(summary)
    text = "\n".join(
        [
            f"# Replay of {args.handcheck} through strict_synonym's filters",
            "",
            f"`python benchmarks/replay_handcheck.py {args.jsonl} {args.handcheck}`"
            + "".join(f" --param {p}" for p in args.param),
            "",
            f"**{summary}.**",
            "",
            *lines,
            "",
        ]
    )
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        print(text)


if __name__ == "__main__":
    main()
