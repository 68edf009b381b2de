"""List single swaps strict_synonym accepts, in context, for a hand audit (issue 39 step 4).

    SRNET_DATA_DIR=../shared/data python benchmarks/audit_swaps.py --n 100 \
        --out results/attack_strictness/audit_swaps.md

Sentences of SST-2's dev file (``sst2/dev.jsonl``; not the test sentences the attack is scored on),
in a seeded order; for each, every content word's candidates that pass all of strict_synonym's
per-swap checks, tags and window similarity (no victim: what the attack *may* try), and one of them
drawn at random, until ``--n`` swaps.  The reader marks each ``ok`` (same meaning and polarity,
fluent) or not in ``audit_verdicts.json`` ({number: true/false}); ``--score`` tallies them.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

from srnet.evaluation.attacks import build_attack
from srnet.evaluation.attacks.resources.text import Words
from srnet.tasks import get_task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--score", action="store_true", help="tally audit_verdicts.json beside --out")
    parser.add_argument("--param", action="append", default=[], help="strict_synonym setting KEY=JSON")
    args = parser.parse_args()
    if args.score:
        verdicts = json.loads((args.out.parent / "audit_verdicts.json").read_text())
        ok = sum(bool(v) for v in verdicts.values())
        print(f"{ok} of {len(verdicts)} accepted swaps judged ok")
        return
    data = Path(os.environ.get("SRNET_DATA_DIR", "../shared/data"))
    attack = build_attack(
        "strict_synonym", {k: json.loads(v) for k, v in (p.split("=", 1) for p in args.param)}
    )
    attack.ready(get_task("sentiment"), data)
    attack.prepare(None, None)
    rows = [json.loads(x) for x in (data / "sst2" / "dev.jsonl").read_text().splitlines()]
    rng = np.random.default_rng(args.seed)
    lines = [f"# {args.n} single swaps strict_synonym accepts (SST-2 dev sentences)", ""]
    found = 0
    for k in rng.permutation(len(rows)):
        words = Words.split(rows[k]["sentence"])
        if len(words.words) < 6:
            continue
        options = [(i, c) for i in words.editable() for c in attack.candidates(words, words, i, rng)]
        if not options:
            continue
        index, candidate = options[int(rng.integers(len(options)))]
        found += 1
        old, new = words.words[index], candidate.words.words[index]
        marked = words.replace(index, f"[{old} → {new}]").text.strip()
        lines.append(f"{found}. {marked}")
        if found == args.n:
            break
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({found} swaps)")


if __name__ == "__main__":
    main()
