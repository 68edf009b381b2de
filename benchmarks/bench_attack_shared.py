"""What a sweep's attack stage gains by handing an attack's state from one victim to the next.

The ``attack`` stage of ``srnet sweep`` attacks several runs on the same sentences; an attack's
victim-independent state (``Attack.shared()``: the sentence encoder with its cached embeddings,
e.g. ``strict_synonym``'s Lesk glosses and windows) passes from one run to the next.  This attacks
victim A, then victim B twice, side by side in one process: once cold (a fresh attack, as a
separate ``srnet attack`` would) and once with A's shared state (as the stage does), and prints the
ratio of B's attack times, how many of B's outcomes (result, perturbed text, queries) differ both
ways, and the largest difference in a recorded similarity (embeddings computed in other batches).

    SRNET_DATA_DIR=../shared/data python benchmarks/bench_attack_shared.py RUN_A RUN_B \
        [--attack strict_synonym --split sst2_test --n 60 --threads 1]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import torch

from srnet.console import quiet_libraries
from srnet.experiments.verbs.attack import AttackConfig
from srnet.experiments.verbs.attack_run import attack_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_a", help="the first attacked run (its state is handed on)")
    parser.add_argument("run_b", help="the second attacked run, timed cold and with A's state")
    parser.add_argument("--attack", default="strict_synonym")
    parser.add_argument("--split", default="sst2_test")
    parser.add_argument("--n", type=int, default=60, help="sentences drawn from the split (seed 0)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    quiet_libraries()
    torch.set_num_threads(args.threads)
    config = AttackConfig(attack=args.attack, split=args.split, n=args.n, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        cold = attack_run(args.run_b, None, config, out=out / "b_cold", overwrite=True)
        first = attack_run(args.run_a, None, config, out=out / "a", overwrite=True)
        warm = attack_run(args.run_b, None, config, out=out / "b_shared", resources=first.shared,
                          overwrite=True)
        rows = [[json.loads(x) for x in r.examples_path.read_text().splitlines()] for r in (cold, warm)]
    outcome = ("id", "result", "perturbed", "queries", "changed_words", "pred_after")
    changed = sum(any(a[k] != b[k] for k in outcome) for a, b in zip(*rows, strict=True))
    drift = max((abs(a["similarity"] - b["similarity"]) for a, b in zip(*rows, strict=True)
                 if a["similarity"] is not None and b["similarity"] is not None), default=0.0)
    seconds = {"a (cold)": first.summary["time_s"], "b cold": cold.summary["time_s"],
               "b with a's state": warm.summary["time_s"]}
    print(json.dumps({"attack": args.attack, "n": args.n, "threads": args.threads, "seconds": seconds,
                      "speed-up on b": round(seconds["b cold"] / seconds["b with a's state"], 2),
                      "b's outcomes that differ": changed, "b's largest similarity difference": drift},
                     indent=1))


if __name__ == "__main__":
    main()
