"""Calibrate strict_synonym's counter-fitted cosine threshold: the least cosine at which a WordNet pair
of SST-2 training words at or above it is a synonym pair with precision >= 0.95, on a balanced set
(antonym pairs weighted to the synonym pairs' count; WordNet lists 4 antonym pairs per synonym pair
here, counting indirect antonyms in every sense, which would otherwise set the threshold by how
many opposites WordNet enumerates).  The unweighted precision is printed beside it.

    SRNET_DATA_DIR=../shared/data python benchmarks/calibrate_strict.py [--out results/attack_strictness]

Pairs: both words seen at least 5 times in SST-2's training split and in the counter-fitted space;
synonyms share a synset among the two most frequent senses of both (the counter-fitting's own
definition), antonyms are WordNet opposites in any sense.  Prints the precision/recall curve.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter
from pathlib import Path

import numpy as np

from srnet.evaluation.attacks.resources.counterfit import (
    CounterFitSettings,
    load_counterfitted,
    wordnet_pairs,
)
from srnet.evaluation.attacks.resources.text import Words
from srnet.evaluation.attacks.resources.wordnet import load_wordnet
from srnet.io import atomic_write_json


def sst2_words(path: Path, min_count: int = 5) -> set[str]:
    counts: Counter[str] = Counter()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            counts.update(w.lower() for w in Words.split(json.loads(line)["sentence"]).words)
    return {w for w, c in counts.items() if c >= min_count}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="folder for calibration.json")
    parser.add_argument("--precision", type=float, default=0.95)
    args = parser.parse_args()
    data = Path(os.environ.get("SRNET_DATA_DIR", "../shared/data")) / "sst2" / "train.jsonl"
    wordnet = load_wordnet()
    space = load_counterfitted(wordnet, CounterFitSettings())
    vocabulary = sorted(sst2_words(data) & set(space.words))
    synonyms, antonyms = wordnet_pairs(wordnet, vocabulary)
    vectors = space.vectors.numpy()
    rows = np.array([space.row[w] for w in vocabulary])

    def cosines(pairs: np.ndarray) -> np.ndarray:
        a, b = vectors[rows[pairs[:, 0]]], vectors[rows[pairs[:, 1]]]
        return (a * b).sum(1)

    syn, ant = cosines(synonyms), cosines(antonyms)
    print(f"{len(vocabulary)} words; {len(syn)} synonym pairs, {len(ant)} antonym pairs")
    curve = []
    for threshold in np.round(np.arange(-0.2, 1.0, 0.05), 2):
        kept_syn, kept_ant = int((syn >= threshold).sum()), int((ant >= threshold).sum())
        precision = kept_syn / max(kept_syn + kept_ant * len(syn) / len(ant), 1)  # balanced
        raw = kept_syn / max(kept_syn + kept_ant, 1)
        curve.append(
            {
                "threshold": float(threshold),
                "precision": round(precision, 4),
                "precision_unweighted": round(raw, 4),
                "synonym_recall": round(kept_syn / len(syn), 4),
                "antonyms_kept": kept_ant,
            }
        )
        print(
            f"cos >= {threshold:+.2f}: precision {precision:.3f} (unweighted {raw:.3f}), synonyms kept "
            f"{kept_syn / len(syn):.3f}, "
            f"antonyms kept {kept_ant}"
        )
    chosen = next(c for c in curve if c["precision"] >= args.precision)
    print(f"least threshold at precision >= {args.precision}: {chosen['threshold']}")
    if args.out:
        out = Path(args.out) / "counterfit_calibration.json"
        atomic_write_json(
            out,
            {
                "vocabulary": len(vocabulary),
                "synonym_pairs": len(syn),
                "antonym_pairs": len(ant),
                "target_precision": args.precision,
                "chosen": chosen,
                "curve": curve,
                "space": space.record["sha256"],
            },
        )
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
