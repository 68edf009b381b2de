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

import torch

from srnet.evaluation.attacks.similarity import SentenceEncoder
from srnet.evaluation.attacks.text import Words


def word_vectors(encoder: SentenceEncoder, text: str, indices: list[int]) -> list[torch.Tensor]:
    """Unit-norm contextual embeddings of words ``indices`` of ``text`` (mean of their pieces)."""
    words = Words.split(text)
    spans, position = [], len(words.seps[0])
    for word, sep in zip(words.words, words.seps[1:], strict=True):
        spans.append((position, position + len(word)))
        position += len(word) + len(sep)
    encoded = encoder.tokenizer(text, return_offsets_mapping=True, return_tensors="pt", truncation=True,
                                max_length=encoder.max_length)
    offsets = encoded.pop("offset_mapping")[0].tolist()
    with torch.inference_mode():
        hidden = encoder.model(**encoded).last_hidden_state[0]
    out = []
    for index in indices:
        start, end = spans[index]
        pieces = [j for j, (s, t) in enumerate(offsets) if t > s and s >= start and t <= end]
        out.append(torch.nn.functional.normalize(hidden[pieces].mean(0), dim=0))
    return out


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
            before = word_vectors(encoder, row["original"], row["changed_words"])
            after = word_vectors(encoder, row["perturbed"], row["changed_words"])
            low = min(float(a @ b) for a, b in zip(before, after, strict=True))
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
