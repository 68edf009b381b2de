"""The Win-win guards: checkpoint selection, mixed precision, mask movement, collapse flags,
easy/hard on request and subset files, each on a tiny model or as a unit."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from conftest import merge, tiny_recipe
from conftest import synthetic_split as synthetic
from srnet import api
from srnet.config import load_recipe
from srnet.errors import SrnetError
from srnet.evaluation.metrics import collapse_flag
from srnet.tasks import generate_synthetic
from srnet.training import precision


def recipe(root, model, name, **extra) -> dict:
    """The shared tiny recipe in fp32 (a test asks for another precision explicitly)."""
    return tiny_recipe(root, model, name, **merge({"training": {"mixed_precision": "no"}}, extra))


@pytest.fixture
def no_model_load(monkeypatch):
    """Fails the test if a run gets as far as loading its model."""
    import srnet.experiments.run.task as run

    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded before the error")

    monkeypatch.setattr(run, "load_classifier", refuse)


def log_events(run_dir, event: str) -> list[dict]:
    return [e for e in map(json.loads, (run_dir / "log.jsonl").open()) if e["event"] == event]


def test_select_last_keeps_the_final_step_and_records_the_rule(tmp_path, tiny_model_dir):
    result = api.run(recipe(tmp_path, tiny_model_dir, "last", training={"select": "last"}))
    selection = result.metrics.as_json()["selection"]
    assert selection == {"rule": "last", "split": None, "after": None, "step": 6, "of": 6}
    assert result.metrics.best_step == 6
    assert not any(e.get("best") for e in log_events(result.run_dir, "eval"))  # evaluated, never 'best'


def test_select_best_on_a_named_challenge_split(tmp_path, tiny_model_dir):
    result = api.run(recipe(tmp_path, tiny_model_dir, "ood",
                            training={"select": "best", "select_on": "synthetic_challenge"}))
    selection = result.metrics.as_json()["selection"]
    assert selection["rule"] == "best" and selection["split"] == "synthetic_challenge"
    best = [e for e in log_events(result.run_dir, "eval") if e.get("best")]
    assert best and best[-1]["step"] == selection["step"] == result.metrics.best_step


def test_select_on_an_unknown_split_fails_before_the_model_loads(tmp_path, tiny_model_dir, no_model_load):
    bad = recipe(tmp_path, tiny_model_dir, "bad", training={"select_on": "mnli_hard"})
    with pytest.raises(SrnetError, match=r"training.select_on: no split named 'mnli_hard' in the recipe "
                                         r"\(splits: synthetic_dev, synthetic_challenge\)"):
        api.run(bad)
    assert not (tmp_path / "bad").exists()


def test_mixed_precision_auto_follows_the_hardware(monkeypatch):
    monkeypatch.setattr(precision, "native_bf16", lambda: True)
    assert precision.resolve_mixed_precision("auto") == "bf16"
    assert precision.resolve_mixed_precision("bf16") == "bf16"
    monkeypatch.setattr(precision, "native_bf16", lambda: False)
    assert precision.resolve_mixed_precision("auto") == "no"
    assert precision.resolve_mixed_precision("no") == "no"
    with pytest.raises(SrnetError, match=r"training\.mixed_precision: bf16 is not native"):
        precision.resolve_mixed_precision("bf16")


def test_fp16_needs_a_gpu(monkeypatch):
    monkeypatch.setattr(precision.torch.cuda, "is_available", lambda: False)
    with pytest.raises(SrnetError, match=r"training\.mixed_precision: fp16 needs a CUDA GPU"):
        precision.resolve_mixed_precision("fp16")


def test_cpu_bf16_flags_are_read_from_cpuinfo(tmp_path):
    with_flag, without = tmp_path / "a", tmp_path / "b"
    with_flag.write_text("processor : 0\nflags : fpu sse avx512f avx512_bf16 amx_tile\n")
    without.write_text("processor : 0\nflags : fpu sse avx2\n")
    assert precision.cpu_has_native_bf16(str(with_flag))
    assert not precision.cpu_has_native_bf16(str(without))
    assert not precision.cpu_has_native_bf16(str(tmp_path / "missing"))


def test_bf16_without_native_support_fails_before_the_model_loads(
    tmp_path, tiny_model_dir, monkeypatch, no_model_load
):
    monkeypatch.setattr(precision, "native_bf16", lambda: False)
    bad = recipe(tmp_path, tiny_model_dir, "bad", training={"mixed_precision": "bf16"})
    with pytest.raises(SrnetError, match=r"training\.mixed_precision: bf16 is not native"):
        api.run(bad)


def test_yaml_no_means_fp32(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("training: {mixed_precision: no}\n")
    assert load_recipe(path).training.mixed_precision == "no"
    assert load_recipe(None).training.mixed_precision == "auto"


def test_runs_in_two_precisions_in_one_process_and_records_it(tmp_path, tiny_model_dir, monkeypatch):
    monkeypatch.setattr(precision, "native_bf16", lambda: True)
    mask = {"method": "mask_train", "sparsity": 0.5}
    fp32 = api.run(recipe(tmp_path, tiny_model_dir, "fp32", pruning=mask))
    bf16 = api.run(recipe(tmp_path, tiny_model_dir, "bf16", training={"mixed_precision": "auto"},
                          pruning=mask))
    assert fp32.metrics.mixed_precision == "no" and bf16.metrics.mixed_precision == "bf16"
    for result in (fp32, bf16):  # masks exact at the target whatever the precision
        assert result.metrics.sparsity.overall == pytest.approx(0.5, abs=0.01)


def test_a_mask_that_did_not_move_is_reported(tmp_path, tiny_model_dir, caplog):
    still = recipe(tmp_path, tiny_model_dir, "still", pruning={"method": "mask_train", "sparsity": 0.5,
                                                               "params": {"mask_lr": 1e-9}})
    with caplog.at_level(logging.WARNING, logger="srnet"):
        result = api.run(still)
    movement = result.metrics.as_json()["mask_movement"]
    assert movement["flipped"] == 0.0 and movement["jaccard"] == 1.0 and movement["moved"] is False
    assert set(movement["per_matrix"]) == set(result.metrics.sparsity.per_matrix)
    warning = ("still: the mask did not move from its OMP start (Jaccard 1.0000, 0.0000% of entries "
               "flipped; a learned mask should move by >= 1%): raise pruning.params.mask_lr (or use "
               "mask_lr: auto) or the budget")
    assert warning in caplog.text
    early = ("pruning.params.mask_lr 1e-09 over 6 steps reaches 0.00 of the initial threshold 0.01: "
             "the mask will barely leave its OMP start")
    assert early in caplog.text  # said before any step was spent
    assert log_events(result.run_dir, "mask_movement")[0]["warning"] == warning


def test_a_mask_that_moved_records_how_far(tmp_path, tiny_model_dir, caplog):
    moving = recipe(tmp_path, tiny_model_dir, "moving", pruning={"method": "mask_train", "sparsity": 0.5,
                                                                 "params": {"mask_lr": 0.5}})
    with caplog.at_level(logging.WARNING, logger="srnet"):
        movement = api.run(moving).metrics.as_json()["mask_movement"]
    assert movement["moved"] and 0.001 <= movement["flipped"] <= 1 and movement["jaccard"] <= 0.99
    assert movement["flipped_entries"] > 0
    assert "did not move" not in caplog.text and "barely leave" not in caplog.text


def test_one_shot_methods_record_no_movement(tmp_path, tiny_model_dir):
    omp = recipe(tmp_path, tiny_model_dir, "omp", pruning={"method": "omp", "sparsity": 0.5})
    metrics = api.run(omp).metrics
    assert metrics.mask_movement is None


def test_collapse_flag():
    names = ("entailment", "non-entailment")
    balanced = np.array([0, 1] * 50)
    assert collapse_flag(np.ones(100, dtype=int), balanced, names) == {
        "majority": {"label": "non-entailment", "fraction": 1.0}, "collapsed": True}
    almost = np.array([1] * 95 + [0] * 5)
    assert collapse_flag(almost, balanced, names)["collapsed"]
    assert not collapse_flag(np.array([1] * 94 + [0] * 6), balanced, names)["collapsed"]
    skewed_gold = np.array([1] * 97 + [0] * 3)  # a split that is itself one class cannot collapse
    assert not collapse_flag(np.ones(100, dtype=int), skewed_gold, names)["collapsed"]


def test_every_split_records_its_collapse_flag(tmp_path, tiny_model_dir):
    metrics = api.run(recipe(tmp_path, tiny_model_dir, "flags")).metrics
    block = metrics.ood["synthetic_challenge"]
    assert isinstance(block["collapsed"], bool) and 0.5 <= block["majority"]["fraction"] <= 1
    assert all("collapsed" in b for b in block["by_rule"].values())
    assert "collapsed" in metrics.id["synthetic_dev"]


def test_easy_hard_on_request_needs_a_bias_dir_and_its_files(tmp_path, tiny_model_dir, no_model_load):
    missing_dir = recipe(tmp_path, tiny_model_dir, "a", evaluation={"easy_hard": True})
    with pytest.raises(SrnetError, match=r"evaluation\.easy_hard: needs bias_dir"):
        api.run(missing_dir)
    (tmp_path / "bias").mkdir()
    no_file = recipe(tmp_path, tiny_model_dir, "b", evaluation={"easy_hard": True},
                     bias_dir=str(tmp_path / "bias"))
    with pytest.raises(SrnetError, match=r"evaluation.easy_hard: .*synthetic_dev.jsonl not found"):
        api.run(no_file)


def test_easy_hard_from_a_bias_fit_stage_in_a_sweep(tmp_path, tiny_model_dir):
    from srnet.experiments.sweep.execute import execute
    from srnet.experiments.sweep.plan import plan_sweep

    base = {k: v for k, v in recipe(tmp_path, tiny_model_dir, "x").items() if k not in ("name", "output_dir")}
    ft = {"kind": "train", "set": {"bias_dir": "@bias_model", "evaluation.easy_hard": True}}
    sweep = {"name": "eh", "output_dir": str(tmp_path / "eh"), "base": base,
             "stages": {"bias_model": {"kind": "bias_fit"}, "ft": ft}}
    jobs = plan_sweep(sweep, "test")
    (tmp_path / "eh").mkdir()
    assert not execute(jobs, tmp_path / "eh", progress=lambda line: None).failed
    metrics = json.loads(next((tmp_path / "eh" / "ft").glob("*/metrics.json")).read_text())
    block = metrics["id"]["synthetic_dev"]["easy_hard"]
    assert block["n_easy"] + block["n_hard"] == 30 and block["rule"] == "bias model predicts the gold label"


def test_a_subset_file_selects_a_challenge_split(tmp_path, tiny_model_dir):
    from srnet.experiments.run.data import load_run_data
    from srnet.tasks import get_task

    dev = generate_synthetic("dev", 30, seed=0)
    hard = tmp_path / "hard.jsonl"
    hard.write_text("".join(json.dumps({"pairID": ex.id, "sentence1": "x"}) + "\n" for ex in dev[:7]))
    split = {**synthetic("dev", 30), "name": "dev_hard", "ids_file": str(hard)}
    data = load_run_data(api.as_recipe(recipe(tmp_path, tiny_model_dir, "s", data={"challenge": [split]})),
                         get_task("synthetic_nli"))
    assert [ex.id for ex in data.challenges[0][1]] == [ex.id for ex in dev[:7]]
    hard.write_text(json.dumps({"pairID": "nothing-like-it"}) + "\n")
    with pytest.raises(SrnetError, match=r"hard.jsonl: none of its 1 ids matches an example of"):
        api.run(recipe(tmp_path, tiny_model_dir, "t", data={"challenge": [split]}))
    hard.write_text(json.dumps({"sentence1": "no id"}) + "\n")
    with pytest.raises(SrnetError, match=r"hard.jsonl:1: no 'pairID' or 'id' field"):
        api.run(recipe(tmp_path, tiny_model_dir, "u", data={"challenge": [split]}))


def test_results_recorded_before_the_flag_are_marked_from_their_confusion(tmp_path, tiny_model_dir):
    from srnet.reporting.runs import load_run
    from srnet.reporting.stats import cohorts, collapsed_runs, group_runs

    run = api.run(recipe(tmp_path, tiny_model_dir, "legacy")).run_dir
    metrics = json.loads((run / "metrics.json").read_text())
    block = metrics["ood"]["synthetic_challenge"]
    for scores in [block, *block["by_rule"].values()]:
        scores.pop("collapsed"), scores.pop("majority")
        scores["confusion"] = [[0, 12], [0, 12]]  # every pair called non-entailment
    (run / "metrics.json").write_text(json.dumps(metrics))
    [group] = group_runs(cohorts([load_run(run)])[0])
    assert collapsed_runs(group, "synthetic_challenge") == " †1/1"


def test_an_unmoved_auto_mask_is_not_told_to_use_auto(tmp_path, tiny_model_dir, caplog):
    short = recipe(tmp_path, tiny_model_dir, "short_auto", training={"max_steps": 1},
                   pruning={"method": "mask_train", "sparsity": 0.5, "params": {"mask_lr": "auto"}})
    with caplog.at_level(logging.WARNING, logger="srnet"):
        result = api.run(short)
    assert result.metrics.as_json()["mask_movement"]["moved"] is False  # one step cannot move it
    line = next(r.getMessage() for r in caplog.records if "did not move" in r.getMessage())
    assert "mask_lr: auto is already in use" in line and "or use mask_lr: auto" not in line
