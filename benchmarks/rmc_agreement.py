"""RMC's variance proxy vs the hypothesis-only easy/hard split on the training sample.

For every ``difficulty`` stage of a sweep folder (the RMC study), reads its difficulty file (the
min-max normalised variance of the gold-label loss across models of five sparsities) and the
bias stage's out-of-fold training predictions (``<bias stage>/train.jsonl``: easy = the
hypothesis-only model predicts the gold label), and prints the agreement rate of the two
splits (RMC paper section 4.1 reports 82.8% on MNLI).  Run:
``python benchmarks/rmc_agreement.py runs/rmc_easy_hard_cpu --bias runs/rmc_easy_hard_cpu/bias_hyp/<key>
--train ../shared/data/mnli/train.jsonl``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from srnet.bias import load_bias_log_probs
from srnet.bias.difficulty import load_difficulty, proxy_agreement
from srnet.tasks import get_task, load_examples
from srnet.tasks.spec import DataSpec

NLI = get_task("nli")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", type=Path)
    parser.add_argument("--bias", type=Path, required=True, help="the bias_fit stage folder")
    parser.add_argument("--train", type=Path, required=True, help="the training file (gold labels)")
    args = parser.parse_args()
    train = load_examples(NLI, DataSpec(path=str(args.train)))  # ids and labels as the runs read them
    gold = np.array([ex.label for ex in train])
    ids = [ex.id for ex in train]
    log_probs = load_bias_log_probs(args.bias / "train.jsonl", ids, len(NLI.labels), labels=NLI.labels)
    bias_easy = log_probs.argmax(axis=1) == gold
    for folder in sorted((args.sweep / "difficulty").glob("*/")):
        files = list(folder.glob("*.jsonl"))
        if len(files) != 1:
            continue
        result = proxy_agreement(load_difficulty(files[0], ids), bias_easy)
        print(f"{folder.name}: agreement {result['agreement']:.3f} over {result['n']} examples "
              f"({result['n_easy']} easy)")


if __name__ == "__main__":
    main()
