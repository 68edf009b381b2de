"""How well a word-in-context check would separate valid from invalid ``wordswap`` successes.

For every hand-judged success of ``results/attack_handcheck/labels.json`` (the examples files of
``docs/studies/attack_validity.md``; run ``srnet attack ... --out runs/handcheck/<set>`` first, as
that page shows), the cosine between the fixed sentence encoder's contextual embeddings of each
changed word in the original and in the adversarial text (mean over its word pieces; the lowest
over the changed words), printed with the verdict, and the verdicts above each threshold.
Run: ``python benchmarks/attack_word_context.py runs/handcheck``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from srnet.evaluation.attacks.resources.similarity import SentenceEncoder
from srnet.evaluation.attacks.resources.text import Words


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("handcheck", type=Path, help="folder of the attack outputs (runs/handcheck)")
    parser.add_argument("--labels", type=Path, default=Path("results/attack_handcheck/labels.json"))
    args = parser.parse_args()
    labels, encoder, scored = json.loads(args.labels.read_text()), SentenceEncoder("default"), []
    for name, verdicts in labels.items():
        rows_file = args.handcheck / name / "wordswap.jsonl"
        if not isinstance(verdicts, dict) or "valid" not in verdicts or not rows_file.is_file():
            continue
        rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
        successes = [r for r in rows if r["result"] == "successful"][: verdicts["judged"]]
        for number, row in enumerate(successes, 1):
            original, perturbed = Words.split(row["original"]), Words.split(row["perturbed"])
            low = min(encoder.word_similarity(original, [perturbed], i)[0] for i in row["changed_words"])
            verdict = ("valid" if number in verdicts["valid"] else
                       "borderline" if number in verdicts["borderline"] else "invalid")
            scored.append((name, number, verdict, low))
            print(f"{name:8} {number:3} {verdict:10} {low:.3f}")
    for threshold in (0.3, 0.4, 0.5, 0.6, 0.7):
        kept = [v for *_, v, s in scored if s >= threshold]
        valid = sum(v == "valid" for v in kept)
        print(f">= {threshold}: {len(kept)} kept, {valid} valid ({valid / max(len(kept), 1):.0%})")


if __name__ == "__main__":
    main()
