"""Queries per second of srnet's attack loop against a TextAttack-style one-query-at-a-time loop.

On the default backbone (2-way head; speed does not depend on training) this runs one attack
(``charswap`` by default; ``wordswap`` needs WordNet) on the first ``--n`` SST-2 test sentences
(``$SRNET_DATA_DIR/sst2/test.jsonl``; a few built-in sentences when absent) with srnet's victim:
every candidate of a step scored in one batch padded to the batch's longest, repeated queries
cached.  It records every text the attack asked for, then replays the first ``--baseline``
of them the way TextAttack's stock HuggingFace wrapper runs them: one text per forward pass,
padded to 512 tokens, no cache.  Both rates count texts asked for per second; srnet's rate
without the cache (texts the model actually ran on) is printed too.

Run: ``python benchmarks/bench_attack.py [--attack charswap --n 20 --baseline 150 --threads 2]``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import torch

from srnet.evaluation.attacks import Victim, build_attack
from srnet.models import load_classifier, load_tokenizer

FALLBACK = [
    "it 's a charming and often affecting journey .", "unflinchingly bleak and desperate",
    "allows us to hope that nolan is poised to embark a major career as a commercial yet inventive "
    "filmmaker .",
    "the acting , costumes , music , cinematography and sound are all astounding given the production 's "
    "austere locales .", "it 's slow -- very , very slow .",
]


def sentences(n: int) -> list[str]:
    default = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    path = Path(os.environ.get("SRNET_DATA_DIR", default)) / "sst2" / "test.jsonl"
    if path.is_file():
        with path.open() as handle:
            return [json.loads(line)["sentence"] for _, line in zip(range(n), handle, strict=False)]
    return (FALLBACK * (n // len(FALLBACK) + 1))[:n]


class LoggingVictim(Victim):
    """A victim that also records every text asked for."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.log: list[tuple[str, str | None]] = []

    def probs(self, pairs):
        self.log.extend(pairs)
        return super().probs(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attack", default="charswap")
    parser.add_argument("--n", type=int, default=20, help="sentences attacked by srnet's loop")
    parser.add_argument("--baseline", type=int, default=150, help="queries replayed one at a time, pad 512")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", default="default")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    model = load_classifier(args.model, ("negative", "positive")).eval()
    tokenizer = load_tokenizer(args.model)
    attack = build_attack(args.attack)
    attack.prepare(model, tokenizer)
    texts = sentences(args.n)
    victim = LoggingVictim(model, tokenizer, 128)
    gold = victim.probs([(t, None) for t in texts]).argmax(axis=1)  # attack every sentence
    victim.queries = victim.evaluated = 0
    victim.log.clear()

    start = time.perf_counter()
    outcomes = [attack.attack(victim, (t, None), int(g), np.random.default_rng(i))
                for i, (t, g) in enumerate(zip(texts, gold, strict=True))]
    fast = time.perf_counter() - start
    replay = victim.log[: args.baseline]
    slow_victim = Victim(model, tokenizer, 512, batch_size=1, cache=False, pad_to=512)
    start = time.perf_counter()
    for pair in replay:
        slow_victim.probs([pair])
    slow = time.perf_counter() - start

    fast_rate, slow_rate = victim.queries / fast, len(replay) / slow
    eval_rate = victim.evaluated / fast
    wins = sum(o.result == "successful" for o in outcomes)
    print(f"attack {args.attack} on {len(texts)} sentences, {args.threads} threads, {args.model} backbone")
    print(f"srnet loop   : {victim.queries} queries ({victim.evaluated} ran on the model, the rest cached) "
          f"in {fast:.1f} s -> {fast_rate:.1f} queries/s ({eval_rate:.1f} model evaluations/s); "
          f"{wins} successful")
    print(f"one-at-a-time: {len(replay)} queries padded to 512 in {slow:.1f} s -> {slow_rate:.1f} queries/s")
    print(f"ratio: {fast_rate / slow_rate:.1f}x (without the cache: {eval_rate / slow_rate:.1f}x)")


if __name__ == "__main__":
    main()
