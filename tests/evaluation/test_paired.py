"""Paired accuracy differences: the Newcombe interval, non-inferiority gates, and correctness
vectors read from a run's prediction files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import tiny_recipe
from srnet import api
from srnet.bias import write_bias_predictions
from srnet.errors import SrnetError
from srnet.evaluation.paired import (
    PairedDifference,
    compare_runs,
    gate_text,
    non_inferior,
    paired_difference,
    split_correctness,
)
from srnet.rundir.record import read_metrics
from srnet.tasks import generate_synthetic

LABELS = ["entailment", "neutral", "contradiction"]


def table(a: int, b: int, c: int, d: int) -> tuple[list[bool], list[bool]]:
    """(reference, candidate) flags of a paired table: a both right, b only the candidate right,
    c only the reference right, d both wrong."""
    reference = [True] * a + [False] * b + [True] * c + [False] * d
    candidate = [True] * a + [True] * b + [False] * c + [False] * d
    return reference, candidate


def test_an_identical_candidate_differs_by_zero_and_passes_a_one_point_margin():
    flags = [True] * 340 + [False] * 60
    diff = paired_difference(flags, flags)
    assert (diff.n, diff.difference, diff.b, diff.c) == (400, 0.0, 0, 0)
    assert diff.reference == diff.candidate == 0.85
    assert diff.low < 0 < diff.high
    assert non_inferior(diff, 1.0)
    assert gate_text("id", diff, 1.0).startswith("PASS id: ")


def test_a_candidate_three_points_worse_on_300_examples_fails():
    diff = paired_difference(*table(243, 3, 12, 42))
    assert diff.reference == pytest.approx(0.85) and diff.candidate == pytest.approx(0.82)
    assert diff.difference == pytest.approx(-0.03)
    assert diff.high < 0 and not non_inferior(diff, 1.0)
    assert gate_text("hard", diff, 1.0).startswith("FAIL hard: ")


def test_the_interval_narrows_with_n():
    widths = []
    for k in (1, 4, 16, 64):
        diff = paired_difference(*table(50 * k, 4 * k, 6 * k, 15 * k))
        assert diff.difference == pytest.approx(-2 / 75)
        widths.append(diff.high - diff.low)
    assert widths == sorted(widths, reverse=True)
    assert widths[-1] / widths[-2] == pytest.approx(0.5, abs=0.02)  # 1/sqrt(n) for large n


def test_published_values_for_a_paired_table():
    """Cavo et al. (2012), Fagerland, Lydersen & Laake (2017) ch. 8: -0.0621 (-0.1186 to -0.0046)."""
    diff = paired_difference(*table(59, 6, 16, 80))
    assert (diff.b, diff.c, diff.n) == (6, 16, 161)
    assert diff.difference == pytest.approx(-0.0621, abs=5e-5)
    assert diff.low == pytest.approx(-0.1186, abs=5e-5)
    assert diff.high == pytest.approx(-0.0046, abs=5e-5)
    assert diff.method == "newcombe-square-and-add"


def test_hand_computed_values_for_a_small_table():
    """a=2, b=3, c=1, d=4: ad - bc = 5 = n/2, so the correlation is 0.  Candidate 5/10, Wilson
    (0.236594, 0.763406); reference 3/10, Wilson (0.107791, 0.603221) at z = 1.959964.
    low = 0.2 - sqrt(0.263406^2 + 0.303221^2), high = 0.2 + sqrt(0.192209^2 + 0.263406^2)."""
    diff = paired_difference(*table(2, 3, 1, 4))
    assert (diff.reference, diff.candidate, diff.difference) == (0.3, 0.5, 0.2)
    assert diff.low == pytest.approx(-0.201654, abs=2e-6)
    assert diff.high == pytest.approx(0.526078, abs=2e-6)


def test_a_lower_confidence_gives_a_narrower_interval():
    wide, narrow = (paired_difference(*table(50, 4, 6, 15), confidence=c) for c in (0.95, 0.8))
    assert wide.low < narrow.low < narrow.high < wide.high


@pytest.mark.parametrize(("reference", "candidate", "message"), [
    ([True, False], [True], "2 reference flags but 1 candidate ones"),
    ([], [], "no examples"),
])
def test_unpaired_or_empty_flags_are_refused(reference, candidate, message):
    with pytest.raises(SrnetError, match=message):
        paired_difference(reference, candidate)


def test_the_gate_line():
    diff = PairedDifference(n=4302, reference=0.70, candidate=0.7031, difference=0.0031, low=-0.0052,
                            high=0.0114, b=100, c=87, confidence=0.95)
    assert gate_text("hard", diff, 1.0) == (
        "PASS hard: +0.31 points (95% CI −0.52 … +1.14, n 4302) vs margin −1.00"
    )
    assert not non_inferior(diff, 0.5)


def write_rows(run: Path, split: str, rows: list[dict]) -> Path:
    path = run / "predictions" / f"{split}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def rows(ids: list[str], right: list[bool], hard: list[bool] | None = None) -> list[dict]:
    out = [{"id": i, "gold": "entailment", "pred": "entailment" if r else "neutral", "probs": [1, 0, 0]}
           for i, r in zip(ids, right, strict=True)]
    return out if hard is None else [row | {"hard": h} for row, h in zip(out, hard, strict=True)]


def test_runs_are_paired_by_id_whatever_the_order(tmp_path):
    write_rows(tmp_path / "ref", "dev", rows(["a", "b", "c"], [True, False, True], [True, True, False]))
    write_rows(tmp_path / "cand", "dev", rows(["c", "a", "b"], [True, False, True], [False, True, True]))
    diff = compare_runs(tmp_path / "ref", tmp_path / "cand", "dev")
    assert (diff.n, diff.b, diff.c, diff.difference) == (3, 1, 1, 0.0)
    hard = compare_runs(tmp_path / "ref", tmp_path / "cand", "dev", subset="hard")
    assert (hard.n, hard.reference, hard.candidate) == (2, 0.5, 0.5)
    assert split_correctness(tmp_path / "cand", "dev", subset="easy") == {"c": True}


def test_mismatched_ids_are_refused_in_one_line(tmp_path):
    write_rows(tmp_path / "ref", "dev", rows(["a", "b", "c"], [True, False, True]))
    write_rows(tmp_path / "cand", "dev", rows(["a", "b", "d"], [True, False, True]))
    with pytest.raises(SrnetError, match=r"ids differ \(1 only in the reference, 1 only in the candidate, "
                                         r"e\.g\. 'c'\)") as caught:
        compare_runs(tmp_path / "ref", tmp_path / "cand", "dev")
    assert "\n" not in str(caught.value) and "ref/predictions/dev.jsonl" in str(caught.value)


@pytest.mark.parametrize(("bad", "message"), [
    ({"id": "a", "gold": "entailment"}, "row 2 needs 'id', and 'gold' and 'pred' label names"),
    ({"id": "a", "gold": "entailment", "pred": "neutral"}, "id 'a' appears twice"),
    ({"id": "b", "gold": "entailment", "pred": "neutral", "hard": 1},
     "'hard' of id 'b' is not true or false"),
])
def test_bad_prediction_rows_are_refused(tmp_path, bad, message):
    write_rows(tmp_path, "dev", [*rows(["a"], [True], [True]), bad])
    with pytest.raises(SrnetError, match=message):
        split_correctness(tmp_path, "dev", subset="hard")


def test_a_hard_subset_needs_the_field_or_a_recorded_bias_file(tmp_path):
    write_rows(tmp_path, "dev", rows(["a"], [True]))
    (tmp_path / "metrics.json").write_text(json.dumps({"task": "synthetic_nli", "id": {"dev": {"n": 1}}}))
    with pytest.raises(SrnetError, match=r"no per-example 'hard' field, and .*metrics.json records no "
                                         r"easy/hard bias file for ID split 'dev'"):
        split_correctness(tmp_path, "dev", subset="hard")
    with pytest.raises(SrnetError, match=r"prediction file .*missing\.jsonl does not exist"):
        split_correctness(tmp_path, "missing")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, tiny_model_dir) -> Path:
    """A finished tiny synthetic-NLI run with a bias file for its dev split (so an easy/hard split)."""
    root = tmp_path_factory.mktemp("paired")
    dev = generate_synthetic("dev", 30, seed=0)
    rng = np.random.default_rng(0)
    log_probs = np.log(rng.dirichlet(np.ones(3), size=len(dev)))
    write_bias_predictions(root / "bias" / "synthetic_dev.jsonl", [ex.id for ex in dev], log_probs,
                           labels=LABELS, feature="t", split="dev")
    return api.run(tiny_recipe(root, tiny_model_dir, "run", bias_dir=str(root / "bias"))).run_dir


def test_correctness_reproduces_the_recorded_accuracies(tiny_run):
    metrics = read_metrics(tiny_run)
    dev, challenge = metrics.id["synthetic_dev"], metrics.ood["synthetic_challenge"]
    for block, split in ((dev, "synthetic_dev"), (challenge, "synthetic_challenge")):
        correct = split_correctness(tiny_run, split)
        assert len(correct) == block["n"]
        assert np.mean(list(correct.values())) == pytest.approx(block["accuracy"], abs=1e-12)
    hard = split_correctness(tiny_run, "synthetic_dev", subset="hard")
    easy = split_correctness(tiny_run, "synthetic_dev", subset="easy")
    assert (len(hard), len(easy)) == (dev["easy_hard"]["n_hard"], dev["easy_hard"]["n_easy"])
    assert np.mean(list(hard.values())) == pytest.approx(dev["easy_hard"]["hard"], abs=1e-12)
    assert np.mean(list(easy.values())) == pytest.approx(dev["easy_hard"]["easy"], abs=1e-12)


def test_the_challenge_files_agree_and_a_run_matches_itself(tiny_run):
    jsonl = [json.loads(line) for line in (tiny_run / "predictions" / "synthetic_challenge.jsonl").open()]
    hans = (tiny_run / "predictions" / "synthetic_challenge_hans_predictions.txt").read_text().split()[1:]
    assert hans == [f"{row['id']},{row['pred']}" for row in jsonl]
    diff = compare_runs(tiny_run, tiny_run, "synthetic_dev", subset="hard")
    assert (diff.difference, diff.b, diff.c) == (0.0, 0, 0)


def test_old_prediction_files_fall_back_on_the_recorded_bias_file(tiny_run, tmp_path):
    """A run written before the ``hard`` field: the same hard examples from metrics.json's bias file."""
    old = tmp_path / "old"
    (old / "predictions").mkdir(parents=True)
    (old / "metrics.json").write_bytes((tiny_run / "metrics.json").read_bytes())
    source = [json.loads(line) for line in (tiny_run / "predictions" / "synthetic_dev.jsonl").open()]
    assert all(isinstance(row["hard"], bool) for row in source)
    write_rows(old, "synthetic_dev", [{k: v for k, v in row.items() if k != "hard"} for row in source])
    assert split_correctness(old, "synthetic_dev", subset="hard") == split_correctness(
        tiny_run, "synthetic_dev", subset="hard")
    assert {row["id"] for row in source if row["hard"]} == set(
        split_correctness(old, "synthetic_dev", subset="hard"))
