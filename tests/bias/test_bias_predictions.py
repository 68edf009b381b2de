"""Bias-prediction files, teacher predictions (the ``teacher_probs`` input) and RMC sample difficulty."""

from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pytest

from srnet.bias import (
    compute_difficulty,
    load_bias_log_probs,
    load_difficulty,
    read_bias_header,
    write_bias_predictions,
    write_difficulty,
)
from srnet.bias.difficulty import normalise
from srnet.errors import SrnetError
from srnet.loss_inputs import ReadContext
from srnet.loss_inputs.teacher_probs import TeacherProbs

LABELS = ("entailment", "neutral", "contradiction")
PROBS = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [1.0, 0.0, 0.0]])
IDS = ["a", "b", "c"]


def write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# --- srnet bias format --------------------------------------------------------------------------


def test_srnet_format_round_trip_in_any_id_order(tmp_path):
    path = write_bias_predictions(
        tmp_path / "bias" / "train.jsonl",
        IDS,
        np.log([*PROBS[:2].tolist(), [0.5, 0.25, 0.25]]),
        labels=LABELS,
        feature="overlap",
        split="train",
        accuracy=0.5,
    )
    lines = path.read_text().splitlines()
    assert json.loads(lines[0]) == {
        "srnet_bias": 1,
        "labels": list(LABELS),
        "feature": "overlap",
        "split": "train",
        "accuracy": 0.5,
    }
    assert json.loads(lines[1])["id"] == "a" and len(lines) == 4
    assert read_bias_header(path)["feature"] == "overlap"
    got = load_bias_log_probs(path, ["c", "a"], 3, labels=LABELS)
    np.testing.assert_allclose(np.exp(got), [[0.5, 0.25, 0.25], [0.7, 0.2, 0.1]], atol=1e-5)
    assert not list(tmp_path.joinpath("bias").glob(".*.tmp"))  # written atomically


def test_srnet_format_checks_labels_and_class_count(tmp_path):
    path = write_bias_predictions(
        tmp_path / "b.jsonl", IDS[:2], np.log(PROBS[:2]), labels=LABELS, feature="f", split="dev"
    )
    with pytest.raises(SrnetError, match=r"header has 3 labels .*; expected 2 classes"):
        load_bias_log_probs(path, IDS[:2], 2)
    with pytest.raises(SrnetError, match="differ from the task's"):
        load_bias_log_probs(path, IDS[:2], 3, labels=("neutral", "entailment", "contradiction"))
    with pytest.raises(SrnetError, match=r"shape \[2, 2\]; expected \[2, 3\]"):
        write_bias_predictions(
            tmp_path / "x.jsonl", IDS[:2], PROBS[:2, :2], labels=LABELS, feature="f", split="d"
        )


# --- other formats ------------------------------------------------------------------------------


def test_npy_rows_are_aligned_with_the_given_order(tmp_path):
    path = tmp_path / "bias.npy"
    np.save(path, PROBS)
    got = load_bias_log_probs(path, IDS, 3)
    assert np.isfinite(got).all()  # the zero probabilities are floored, not -inf
    np.testing.assert_allclose(np.exp(got), PROBS, atol=1e-6)
    np.testing.assert_allclose(np.log(np.exp(got).sum(1)), 0, atol=1e-6)
    with pytest.raises(SrnetError, match=r"bias.npy: 3 rows; expected 4 \(one per example"):
        load_bias_log_probs(path, [*IDS, "d"], 3)
    with pytest.raises(SrnetError, match=r"bias\.npy: 3 classes per row; expected 2"):
        load_bias_log_probs(path, IDS, 2)


def test_pickle_dict_of_arrays_or_log_prob_lists(tmp_path):
    path = tmp_path / "bias.pkl"
    with path.open("wb") as f:
        pickle.dump({1: PROBS[0], "b": list(np.log(PROBS[1]))}, f)
    got = load_bias_log_probs(path, ["b", "1"], 3)
    np.testing.assert_allclose(np.exp(got), PROBS[[1, 0]], atol=1e-6)
    with path.open("wb") as f:
        pickle.dump([1, 2], f)
    with pytest.raises(SrnetError, match="pickle holds a list; expected a dict keyed by example id"):
        load_bias_log_probs(path, ["b"], 3)


def test_json_dict_and_headerless_jsonl(tmp_path):
    path = tmp_path / "bias.json"
    path.write_text(json.dumps({"a": PROBS[0].tolist(), "b": PROBS[1].tolist()}), encoding="utf-8")
    np.testing.assert_allclose(np.exp(load_bias_log_probs(path, ["a", "b"], 3)), PROBS[:2], atol=1e-6)
    rows = [{"id": "a", "gold": "entailment", "pred": "entailment", "probs": PROBS[0].tolist()}]
    jsonl = write_jsonl(tmp_path / "preds.jsonl", rows)
    np.testing.assert_allclose(np.exp(load_bias_log_probs(jsonl, ["a"], 3)), PROBS[:1], atol=1e-6)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            {"a": [0.5, 0.2, 0.0]},
            r"bias.json: row for id 'a' sums to 0.7; expected probabilities or log-probabilities",
        ),
        ({"a": [-1.0, -1.0, -1.0]}, "row for id 'a' sums to -3; expected"),
        ({"a": [0.5, 0.5]}, "row for id 'a' has 2 classes; expected 3"),
        ({"a": "high"}, "row for id 'a' is not a list of numbers"),
        ({"b": [0.5, 0.25, 0.25]}, "bias.json: no prediction for example id 'a'"),
        ([0.5, 0.5], "JSON holds a list"),
        ({"a": [True, False, False]}, r"^\S*bias.json: row for id 'a' holds a boolean; expected numbers$"),
    ],
)
def test_bad_bias_values_are_named(tmp_path, content, message):
    path = tmp_path / "bias.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(SrnetError, match=message):
        load_bias_log_probs(path, ["a"], 3)


def test_missing_ids_are_counted_and_bad_files_named(tmp_path):
    path = write_jsonl(tmp_path / "b.jsonl", [{"id": "a", "log_probs": np.log(PROBS[0]).tolist()}])
    with pytest.raises(SrnetError, match=r"no prediction for example id 'x' \(and 1 more\)"):
        load_bias_log_probs(path, ["a", "x", "y"], 3)
    (tmp_path / "bad.jsonl").write_text('{"id": "a"}\n{oops\n', encoding="utf-8")
    with pytest.raises(SrnetError, match=r"bad\.jsonl:2: not valid JSON"):
        load_bias_log_probs(tmp_path / "bad.jsonl", ["a"], 3)
    write_jsonl(tmp_path / "dup.jsonl", [{"id": "a", "probs": [1, 0, 0]}] * 2)
    with pytest.raises(SrnetError, match="id 'a' appears twice"):
        load_bias_log_probs(tmp_path / "dup.jsonl", ["a"], 3)
    with pytest.raises(SrnetError, match=r"unknown bias file type '.csv'"):
        (tmp_path / "b.csv").write_text("x")
        load_bias_log_probs(tmp_path / "b.csv", ["a"], 3)
    with pytest.raises(SrnetError, match="does not exist"):
        load_bias_log_probs(tmp_path / "none.npy", ["a"], 3)


@pytest.mark.parametrize(
    ("header", "field"),
    [({"srnet_bias": 1, "labels": list(LABELS), "feature": "f", "split": "train"}, "log_probs"),
     (None, "probs")],
)
def test_json_booleans_are_not_probabilities(tmp_path, header, field):
    """JSON ``true``/``false`` read as Python bools, which NumPy takes for 1 and 0: a one-hot row of
    booleans would pass as probabilities.  Each is one line naming the file, line and field."""
    rows = [json.dumps(header)] if header else []
    rows += ["", json.dumps({"id": "a", field: [1, 0, 0] if field == "probs" else np.log(PROBS[0]).tolist()})]
    rows += [json.dumps({"id": "b", field: [[True], [False], [False]]})]
    path = tmp_path / "b.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    line = len(rows)
    message = rf"^\S*b\.jsonl:{line}: '{field}' holds a boolean; expected numbers$"
    with pytest.raises(SrnetError, match=message):
        load_bias_log_probs(path, ["a", "b"], 3)


def test_boolean_arrays_in_a_pickle_are_refused(tmp_path):
    path = tmp_path / "bias.pkl"
    with path.open("wb") as f:
        pickle.dump({"a": np.array([True, False, False])}, f)
    with pytest.raises(SrnetError, match=r"bias\.pkl: row for id 'a' holds a boolean; expected numbers$"):
        load_bias_log_probs(path, ["a"], 3)


# --- teacher predictions ------------------------------------------------------------------------


def make_run(tmp_path, task="nli", probs=PROBS, name="run"):
    run = tmp_path / name
    rows = [
        {"id": i, "gold": "entailment", "pred": "entailment", "probs": p.tolist()}
        for i, p in zip(IDS, probs, strict=True)
    ]
    write_jsonl(run / "predictions" / "train.jsonl", rows)
    (run / "config.yaml").write_text(f"task: {task}\nseed: 1\n", encoding="utf-8")
    return run


def load_teacher_probs(path, ids, num_classes, task=None):
    return TeacherProbs().read(path, ReadContext(ids, None, num_classes, task=task))


def test_teacher_from_run_dir_or_file(tmp_path):
    run = make_run(tmp_path)
    np.testing.assert_allclose(load_teacher_probs(run, ["c", "a"], 3, task="nli"), PROBS[[2, 0]])
    file = run / "predictions" / "train.jsonl"
    np.testing.assert_allclose(load_teacher_probs(file, IDS, 3), PROBS)


def test_teacher_task_mismatch_and_bad_rows(tmp_path):
    run = make_run(tmp_path, task="sentiment")
    with pytest.raises(SrnetError, match=f"teacher run {run} was trained for task 'sentiment', not 'nli'"):
        load_teacher_probs(run, IDS, 3, task="nli")
    (run / "config.yaml").write_text("task:\n  name: sentiment\n", encoding="utf-8")
    with pytest.raises(SrnetError, match="trained for task 'sentiment'"):
        load_teacher_probs(run / "predictions" / "train.jsonl", IDS, 3, task="nli")
    with pytest.raises(SrnetError, match="no prediction for example id 'zz'"):
        load_teacher_probs(run, ["zz"], 3)
    with pytest.raises(SrnetError, match="row for id 'a' has 3 classes; expected 2"):
        load_teacher_probs(run, IDS, 2)
    logs = make_run(tmp_path, probs=np.log(PROBS + 0.1), name="logs")
    with pytest.raises(SrnetError, match=r"row for id 'a' sums to .*; expected probabilities$"):
        load_teacher_probs(logs, IDS, 3)
    with pytest.raises(SrnetError, match="does not exist"):
        load_teacher_probs(tmp_path / "empty_dir_is_not_a_run", IDS, 3)


def test_teacher_probs_that_are_booleans_are_named_by_line(tmp_path):
    run = make_run(tmp_path)
    file = run / "predictions" / "train.jsonl"
    rows = file.read_text().splitlines()
    rows[1] = json.dumps({"id": "b", "gold": "neutral", "pred": "neutral", "probs": [False, True, False]})
    file.write_text("\n".join(rows) + "\n")
    with pytest.raises(SrnetError, match=r"train\.jsonl:2: 'probs' holds a boolean; expected numbers$"):
        load_teacher_probs(run, IDS, 3)


# --- sample difficulty --------------------------------------------------------------------------


def test_difficulty_is_loss_variance_normalised_to_alpha_one(tmp_path):
    # gold = [0, 2, 1]; each model's gold-class probabilities:
    gold_probs = np.array([[0.9, 0.5, 0.5], [0.9, 0.25, 0.5], [0.9, 0.125, 0.5]])
    paths = []
    for m, row in enumerate(gold_probs):
        probs = np.array([[row[0], 0.05, 0.05], [0.0, 1 - row[1], row[1]], [0.25, 0.5, 0.25]])
        paths.append(make_run(tmp_path, probs=probs, name=f"m{m}") / "predictions" / "train.jsonl")
    got = compute_difficulty(paths, IDS, [0, 2, 1], alpha=0.2)
    # losses: a: -log 0.9 three times (variance 0); b: log 2, log 4, log 8 (variance (2/3) log(2)^2);
    # c: log 2 three times (variance 0) -> min-max to [0.2, 1]
    np.testing.assert_allclose(got, [0.2, 1.0, 0.2])
    var_b = np.var([math.log(2), math.log(4), math.log(8)])
    assert var_b == pytest.approx(2 / 3 * math.log(2) ** 2)
    np.testing.assert_allclose(normalise(np.array([0.0, var_b / 2, var_b]), 0.2), [0.2, 0.6, 1.0])
    np.testing.assert_allclose(normalise(np.array([3.0, 3.0]), 0.2), [1.0, 1.0])
    np.testing.assert_allclose(normalise(np.array([1.0, 2.0, 3.0]), 0.2), [0.2, 0.6, 1.0])  # min -> alpha


def test_difficulty_rejects_bad_requests(tmp_path):
    path = make_run(tmp_path) / "predictions" / "train.jsonl"
    with pytest.raises(SrnetError, match="at least 2 models; got 1"):
        compute_difficulty([path], IDS, [0, 0, 0], alpha=0.5)
    with pytest.raises(SrnetError, match=r"alpha=1\.5"):
        compute_difficulty([path, path], IDS, [0, 0, 0], alpha=1.5)
    with pytest.raises(SrnetError, match="gold label 3 of id 'b' is outside its 3 classes"):
        compute_difficulty([path, path], IDS, [0, 3, 0], alpha=0.5)


def test_difficulty_file_round_trip_and_errors(tmp_path):
    path = write_difficulty(tmp_path / "difficulty.jsonl", IDS, np.array([0.2, 1.0, 0.55]))
    assert json.loads(path.read_text().splitlines()[0]) == {"id": "a", "difficulty": 0.2}
    np.testing.assert_allclose(load_difficulty(path, ["c", "a"]), [0.55, 0.2], rtol=1e-6)
    with pytest.raises(SrnetError, match="no difficulty for example id 'z'"):
        load_difficulty(path, ["z"])
    write_jsonl(path, [{"id": "a", "difficulty": 1.5}])
    with pytest.raises(SrnetError, match=r"difficulty of id 'a' is 1\.5; expected a number in"):
        load_difficulty(path, ["a"])
    with pytest.raises(SrnetError, match="2 difficulties for 3 example ids"):
        write_difficulty(path, IDS, np.ones(2))
