"""A blind hand check of attack successes (issue 39 step 5).

1. ``make``: the first ``--n`` successes of an attack's ``.jsonl``; their originals and perturbed
   texts shuffled together (seeded) into ``blind.md``, numbered, with nothing saying which is which
   or which belong together; the key goes to ``key.json`` (not to be opened before judging).
2. The reader writes ``verdicts.json``: for every number, ``[label, fluent]`` (label ``positive`` /
   ``negative`` / ``unsure``; fluent ``true`` / ``false``), judging each sentence on its own.
3. ``pairs``: after the blind verdicts are saved, the pairs side by side (``pairs.md``) for the
   meaning check; the reader writes ``meaning.json``: for every pair number, ``true`` when the
   perturbed sentence says the same thing (a synonym-level change).
4. ``score``: a success is *valid* when the reader gave the perturbed text the gold label and called
   it fluent, and the pair keeps its meaning.  Writes ``score.md`` (the tally and every pair).

    python benchmarks/blind_check.py make DIR/strict_synonym.jsonl --out results/attack_strictness/blind
    python benchmarks/blind_check.py pairs --out results/attack_strictness/blind
    python benchmarks/blind_check.py score --out results/attack_strictness/blind
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path


def make(jsonl: Path, out: Path, n: int, seed: int) -> None:
    rows = [json.loads(x) for x in jsonl.read_text().splitlines()]
    wins = [r for r in rows if r["result"] == "successful"][:n]
    items = [(r["id"], "original", r["original"]) for r in wins] + [
        (r["id"], "perturbed", r["perturbed"]) for r in wins
    ]
    random.Random(seed).shuffle(items)
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# Blind check: {len(items)} sentences",
        "",
        "Label each: positive / negative / unsure, and "
        "whether it reads as fluent English (SST-2's lower-case, tokenised style is normal).",
        "",
    ]
    lines += [f"{k}. {text.strip()}" for k, (_, _, text) in enumerate(items, 1)]
    (out / "blind.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    key = {
        "source": str(jsonl),
        "seed": seed,
        "items": [{"number": k, "id": i, "kind": kind} for k, (i, kind, _) in enumerate(items, 1)],
        "gold": {r["id"]: r["gold"] for r in wins},
    }
    (out / "key.json").write_text(json.dumps(key, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out / 'blind.md'} ({len(items)} sentences from {len(wins)} successes)")


def _load(out: Path) -> tuple[dict, list[dict]]:
    key = json.loads((out / "key.json").read_text())
    rows = {json.loads(x)["id"]: json.loads(x) for x in Path(key["source"]).read_text().splitlines()}
    wins = [rows[i] for i in key["gold"]]
    return key, wins


def pairs(out: Path) -> None:
    if not (out / "verdicts.json").is_file():
        raise SystemExit("write verdicts.json (the blind labels) before looking at the pairs")
    _, wins = _load(out)
    lines = ["# Pairs (after the blind verdicts): does the perturbed sentence keep the meaning?", ""]
    for k, r in enumerate(wins, 1):
        lines += [f"{k}. {r['original'].strip()}", f"   → {r['perturbed'].strip()}", ""]
    (out / "pairs.md").write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {out / 'pairs.md'}")


def score(out: Path) -> None:
    key, wins = _load(out)
    verdicts = json.loads((out / "verdicts.json").read_text())
    meaning = json.loads((out / "meaning.json").read_text())
    number = {(item["id"], item["kind"]): str(item["number"]) for item in key["items"]}
    table = [
        "| # | id | gold | reader: original | reader: perturbed | fluent | meaning kept | valid |",
        "|---|---|---|---|---|---|---|---|",
    ]
    valid = label_kept = fluent_count = meaning_count = original_right = 0
    for k, r in enumerate(wins, 1):
        gold = key["gold"][r["id"]]
        label_o, _ = verdicts[number[(r["id"], "original")]]
        label_p, fluent = verdicts[number[(r["id"], "perturbed")]]
        kept = bool(meaning[str(k)])
        ok = label_p == gold and fluent and kept
        valid += ok
        label_kept += label_p == gold
        fluent_count += bool(fluent)
        meaning_count += kept
        original_right += label_o == gold
        table.append(
            f"| {k} | {r['id']} | {gold} | {label_o} | {label_p} | {'yes' if fluent else 'no'} | "
            f"{'yes' if kept else 'no'} | {'**valid**' if ok else 'invalid'} |"
        )
    n = len(wins)
    summary = (
        f"valid {valid} of {n}; reader gave the gold label to {label_kept} perturbed texts (and to "
        f"{original_right} originals), called {fluent_count} perturbed texts fluent, and found "
        f"{meaning_count} pairs with the meaning kept"
    )
    (out / "score.md").write_text(
        f"# Blind check score\n\n**{summary}.**\n\n" + "\n".join(table) + "\n", encoding="utf-8"
    )
    print(summary)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["make", "pairs", "score"])
    parser.add_argument("jsonl", nargs="?", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--seed", type=int, default=39)
    args = parser.parse_args()
    if args.step == "make":
        if args.jsonl is None:
            raise SystemExit("make needs the attack's .jsonl")
        make(args.jsonl, args.out, args.n, args.seed)
    elif args.step == "pairs":
        pairs(args.out)
    else:
        score(args.out)


if __name__ == "__main__":
    main()
