"""benchmarks/rmc_agreement.py: every difficulty stage of a sweep, on the training sample (its file)
and on dev (the variance over its member runs' dev predictions, found through the stage records)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from conftest import REPO
from srnet.bias import write_bias_predictions, write_difficulty
from srnet.evaluation.predict import write_predictions
from srnet.tasks import get_task, load_examples
from srnet.tasks.spec import DataSpec

NLI = get_task("nli")
LABELS = ["entailment", "neutral", "contradiction"]
GOLD = [0, 1, 2, 0, 1, 2]
BIAS_RIGHT = np.array([True, True, True, False, False, False])


def write_split(path, name):
    rows = [{"premise": f"p {i}", "hypothesis": f"h {i}", "label": LABELS[g]} for i, g in enumerate(GOLD)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [ex.id for ex in load_examples(NLI, DataSpec(path=str(path), name=name))]


def probs_with_gold_share(gold_share):
    """Rows whose gold class has ``gold_share`` and the next class the rest."""
    probs = np.zeros((len(GOLD), 3))
    for i, (g, share) in enumerate(zip(GOLD, gold_share, strict=True)):
        probs[i, g], probs[i, (g + 1) % 3] = share, 1 - share
    return probs


def stage(sweep, name, key, kind, deps):
    folder = sweep / name / key
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "stage.json").write_text(json.dumps({"stage": name, "kind": kind, "key": key,
                                                   "grid": {"seed": 1}, "deps": deps}))
    return folder


def test_agreement_on_train_and_on_dev_through_the_stage_records(tmp_path):
    train_ids = write_split(tmp_path / "train.jsonl", None)
    dev_ids = write_split(tmp_path / "dev.jsonl", "mnli_dev_matched")
    sweep = tmp_path / "sweep"
    bias = stage(sweep, "bias_hyp", "b0", "bias_fit", [])
    bias_probs = np.where(BIAS_RIGHT[:, None], probs_with_gold_share([0.8] * 6),
                          probs_with_gold_share([0.1] * 6))
    for ids, split in ((train_ids, "train"), (dev_ids, "mnli_dev_matched")):
        write_bias_predictions(bias / f"{split}.jsonl", ids, np.log(bias_probs + 1e-9), labels=LABELS,
                               feature="t", split=split)
    examples = load_examples(NLI, DataSpec(path=str(tmp_path / "dev.jsonl"), name="mnli_dev_matched"))
    space = NLI.scheme(None).space
    # dense fits every pair; the sparse member loses the pairs the bias model gets wrong: the
    # variance is low exactly on the bias-easy pairs (dev agreement 1)
    for name, key, share in (("ft", "r1", [0.9] * 6), ("imp40", "r2", [0.9] * 3 + [0.4] * 3)):
        run = stage(sweep, name, key, "train", [])
        logits = np.log(probs_with_gold_share(share) + 1e-9)
        write_predictions(run / "predictions" / "mnli_dev_matched.jsonl", examples, logits,
                          logits.argmax(1), space)
    stage(sweep, "teacher", "p1", "predict", ["r1"])
    stage(sweep, "pred40", "p2", "predict", ["r2"])
    for name, key, values in (("difficulty_a", "d1", [0.2, 0.3, 0.1, 0.9, 0.8, 1.0]),   # agrees
                              ("difficulty_b", "d2", [0.9, 0.8, 1.0, 0.2, 0.3, 0.1])):  # inverted
        write_difficulty(stage(sweep, name, key, "difficulty", ["p1", "p2"]) / "difficulty.jsonl",
                         train_ids, np.array(values))
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "rmc_agreement.py"), str(sweep), "--bias", str(bias),
         "--train", str(tmp_path / "train.jsonl"), "--dev", str(tmp_path / "dev.jsonl")],
        capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == [
        "difficulty_a seed 1: train agreement 1.000 over 6 (3 easy); dev agreement 1.000 over 6 (3 easy)",
        "difficulty_b seed 1: train agreement 0.000 over 6 (3 easy); dev agreement 1.000 over 6 (3 easy)",
    ]
    # a second sweep's difficulty stage naming a member of the first by path (its sweep.yaml lists
    # it), at the seed of its base: the dev variance is taken over both members' runs again
    other = tmp_path / "other"
    named = str(sweep / "teacher" / "p1" / "train.jsonl")
    other.mkdir()
    (other / "sweep.yaml").write_text(json.dumps({"base": {"seed": 3}, "stages": {
        "difficulty_c": {"kind": "difficulty", "with": {"runs": [named, "@pred40"]}}}}))
    folder = stage(other, "difficulty_c", "d3", "difficulty", ["p2"])
    (folder / "stage.json").write_text(json.dumps({"stage": "difficulty_c", "kind": "difficulty", "key": "d3",
                                                   "grid": {}, "deps": ["p2"]}))
    write_difficulty(folder / "difficulty.jsonl", train_ids, np.array([0.2, 0.3, 0.1, 0.9, 0.8, 1.0]))
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "rmc_agreement.py"), str(sweep), str(other), "--bias",
         str(bias), "--train", str(tmp_path / "train.jsonl"), "--dev", str(tmp_path / "dev.jsonl")],
        capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[2] == ("difficulty_c seed 3: train agreement 1.000 over 6 (3 easy); dev agreement 1.000 "
                      "over 6 (3 easy)")
