"""Guards on both sides of the mask budget: ``mask_lr: auto`` resolved from the
schedule and recorded, its bad inputs refused early, the 1% movement guard, the ID-collapse flag
and timing checkpoints checked when a sweep is planned."""

from __future__ import annotations

import json
import logging
import math
import subprocess
import sys

import pytest
import torch

from conftest import merge, save_tiny_model, tiny_recipe
from srnet import api
from srnet.config import recipe_from_dict
from srnet.errors import SrnetError
from srnet.evaluation.mask_analysis import mask_movement
from srnet.evaluation.metrics import id_collapse
from srnet.pruning.mask_training import (
    DEFAULT_REACH,
    MIN_STEPS_PER_THRESHOLD,
    auto_lr_capped,
    auto_mask_lr,
    implied_reach,
)


def recipe(root, model, name, **extra) -> dict:
    return tiny_recipe(root, model, name, **merge({"training": {"mixed_precision": "no"}}, extra))


def mask_train(sparsity: float = 0.5, **params) -> dict:
    return {"method": "mask_train", "sparsity": sparsity, "params": params}


def test_auto_rule_matches_the_papers_setting_and_inverts():
    # Win-win: hard init (threshold alpha*phi/2 = 0.01), 5e-5 over ~61k steps
    assert implied_reach(5e-5, 0.01, 61_000) == pytest.approx(0.87, abs=0.01)
    lr = auto_mask_lr(0.65, 0.01, 933)
    assert lr == pytest.approx(0.65 * 0.01 / math.sqrt(933 / 2))
    assert implied_reach(lr, 0.01, 933) == pytest.approx(0.65)


def test_auto_mask_lr_is_capped_on_short_schedules_only():
    # the demo's 126 steps: reach 0.65 would cross the threshold in 12 steps (the masks collapsed)
    assert auto_lr_capped(0.65, 0.01, 126)
    assert auto_mask_lr(0.65, 0.01, 126) == pytest.approx(0.01 / MIN_STEPS_PER_THRESHOLD)
    for steps in (100, 126, 300):
        assert auto_mask_lr(0.65, 0.01, steps) == pytest.approx(0.01 / MIN_STEPS_PER_THRESHOLD)
    for steps in (933, 3000, 61_000):  # the calibrated schedules keep the square-root rule
        assert not auto_lr_capped(0.65, 0.01, steps)
        assert implied_reach(auto_mask_lr(0.65, 0.01, steps), 0.01, steps) == pytest.approx(0.65)
    assert not auto_lr_capped(0.16, 0.04, 126)  # soft init's reach stays under the cap there


def test_auto_mask_lr_is_resolved_from_the_schedule_and_recorded(tmp_path, tiny_model_dir):
    result = api.run(recipe(tmp_path, tiny_model_dir, "auto", pruning=mask_train(mask_lr="auto")))
    budget = result.metrics.mask_budget
    assert budget.rule == "auto" and budget.steps == 6 and budget.init == "hard"
    assert budget.score_scale == pytest.approx(0.01, rel=0.01)  # half-way between 0.02 and ~0
    assert budget.mask_lr == pytest.approx(auto_mask_lr(DEFAULT_REACH["hard"], budget.score_scale, 6))
    assert budget.capped and budget.steps_per_threshold == pytest.approx(MIN_STEPS_PER_THRESHOLD)
    assert budget.reach == pytest.approx(implied_reach(budget.mask_lr, budget.score_scale, 6))
    recorded = (result.run_dir / "config.yaml").read_text()
    assert "mask_reach: 0.65" in recorded  # the default is written into the run's config


def test_a_given_mask_lr_records_its_reach(tmp_path, tiny_model_dir):
    result = api.run(recipe(tmp_path, tiny_model_dir, "given", pruning=mask_train(mask_lr=0.01, init="soft")))
    budget = result.metrics.mask_budget
    assert budget.rule == "given" and budget.mask_lr == 0.01 and budget.init == "soft"
    assert budget.reach == pytest.approx(implied_reach(0.01, budget.score_scale, 6))


def test_mask_reach_scales_the_auto_lr(tmp_path, tiny_model_dir):
    def lr(reach: float) -> float:
        pruning = mask_train(mask_lr="auto", mask_reach=reach)
        metrics = api.run(recipe(tmp_path, tiny_model_dir, f"r{reach:g}", pruning=pruning)).metrics
        return metrics.mask_budget.mask_lr

    assert lr(0.03) == pytest.approx(3 * lr(0.01))  # under the cap (6 steps: reach < 0.07)
    assert lr(3.0) == pytest.approx(lr(1.0))  # both capped


@pytest.mark.parametrize("pruning, message", [
    ({"method": "l0", "sparsity": 0.5, "params": {"mask_lr": "auto"}},
     "mask_lr: auto is calibrated for mask_train's scores only"),
    ({"method": "imp", "sparsity": 0.5, "params": {"mask_lr": "auto"}}, "not a parameter of method 'imp'"),
    (mask_train(mask_lr="auto", mask_reach=0), "mask_reach"),
    (mask_train(mask_lr="auto", mask_reach=-1.0), "mask_reach"),
    (mask_train(mask_lr=1e-3, mask_reach=2.0), "mask_reach applies only with mask_lr: auto"),
    (mask_train(mask_lr="fast"), "mask_lr"),
    (mask_train(mask_lr="auto", init="random"), "mask_lr: auto is calibrated for init hard and soft"),
])
def test_bad_budgets_are_refused_in_one_line(tmp_path, tiny_model_dir, pruning, message):
    with pytest.raises(SrnetError, match=message) as info:
        recipe_from_dict(recipe(tmp_path, tiny_model_dir, "bad", pruning=pruning))
    assert "\n" not in str(info.value)


def test_cli_refuses_a_bad_budget_with_exit_2_before_the_model_loads(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("task: nli\nmodel: {name: no/such-model}\ndata: {train: {path: x.jsonl}}\n"
                    "pruning: {method: l0, sparsity: 0.5, params: {mask_lr: auto}}\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "srnet.cli", "run", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "mask_lr: auto is calibrated for mask_train" in lines[0]


def test_a_mask_within_one_percent_of_its_start_did_not_move():
    start = {"w": torch.tensor([1.0] * 500 + [0.0] * 500)}
    nudged = start["w"].clone()
    nudged[:2], nudged[500:502] = 0.0, 1.0  # 0.4% of the entries flipped: Jaccard 0.992
    movement = mask_movement(start, {"w": nudged})
    assert movement["flipped"] == pytest.approx(0.004) and movement["jaccard"] == pytest.approx(498 / 502)
    assert movement["moved"] is False  # the old 0.1%-flipped guard called this a move
    moved = start["w"].clone()
    moved[:6], moved[500:506] = 0.0, 1.0  # Jaccard 494/506 = 0.976
    assert mask_movement(start, {"w": moved})["moved"] is True


def test_a_run_that_barely_moves_warns(tmp_path, tiny_model_dir, caplog):
    still = recipe(tmp_path, tiny_model_dir, "still", pruning=mask_train(mask_lr=1e-9))
    with caplog.at_level(logging.WARNING, logger="srnet"):
        metrics = api.run(still).metrics
    assert metrics.mask_movement.moved is False
    assert "still: the mask did not move from its OMP start (Jaccard 1.0000" in caplog.text
    assert "the mask will barely leave its OMP start" in caplog.text  # said before any step


def test_a_pinned_lr_at_the_cap_does_not_warn_on_a_short_schedule(tmp_path, tiny_model_dir, caplog):
    """On 6 steps the cap binds: the demo's way (an lr pinned at the cap's 0.01 / 33) is as far as
    any safe lr reaches there, so it is not told that its mask will barely move."""
    at_cap = recipe(tmp_path, tiny_model_dir, "at_cap", pruning=mask_train(mask_lr=3e-4))
    with caplog.at_level(logging.WARNING, logger="srnet"):
        metrics = api.run(at_cap).metrics
    assert metrics.as_json()["mask_budget"]["steps_per_threshold"] == pytest.approx(0.01 / 3e-4, rel=1e-3)
    assert "barely leave" not in caplog.text and "scramble" not in caplog.text


def test_id_collapse_unit():
    at_chance = {"accuracy": 0.354, "collapsed": False,
                 "confusion": [[354, 0, 0], [330, 0, 0], [316, 0, 0]]}
    assert id_collapse(at_chance) == {"chance": 0.354, "near_chance": True, "collapsed": True}
    weak = {"accuracy": 0.45, "collapsed": False,
            "confusion": [[200, 100, 54], [100, 150, 80], [100, 116, 100]]}
    assert id_collapse(weak)["collapsed"] is False
    one_class = {"accuracy": 0.6, "collapsed": True, "confusion": [[60, 0], [40, 0]]}
    assert id_collapse(one_class)["collapsed"] is True


def lost_model(folder):
    """A tiny classifier that calls every pair 'entailment' (a model lost by training)."""
    from transformers import AutoModelForSequenceClassification

    path = save_tiny_model(folder)
    model = AutoModelForSequenceClassification.from_pretrained(path)
    with torch.no_grad():
        model.classifier.bias.copy_(torch.tensor([100.0, 0.0, 0.0]))
    model.save_pretrained(path)
    return path


def test_a_run_at_chance_on_its_id_split_is_flagged(tmp_path):
    lost = recipe(tmp_path, lost_model(tmp_path / "m"), "lost", data={"train": None})
    metrics = api.run(lost).metrics
    block = metrics.id["synthetic_dev"]
    assert block["near_chance"] and block["collapsed"] and block["majority"]["label"] == "entailment"
    from srnet.reporting.render import collapse_warnings
    id_line, challenge_line = collapse_warnings(metrics)  # every collapsed split, ID and challenge
    assert id_line.startswith("COLLAPSED: lost is at chance on ID split synthetic_dev")
    assert challenge_line.startswith("COLLAPSED: lost puts 100% of its synthetic_challenge predictions "
                                     "in one class (entailment)")


def test_the_cli_ends_with_the_collapse_line(tmp_path):
    import yaml
    lost = recipe(tmp_path, lost_model(tmp_path / "m"), "lost_cli", data={"train": None})
    path = tmp_path / "lost.yaml"
    path.write_text(yaml.safe_dump(lost), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "srnet.cli", "run", str(path)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("COLLAPSED: ")]
    assert len(lines) == 2 and done.stdout.strip().splitlines()[-2:] == lines  # once per split, last
    assert lines[0].startswith("COLLAPSED: lost_cli is at chance on ID split synthetic_dev")
    assert "its synthetic_challenge predictions in one class" in lines[1]


def test_a_timing_checkpoint_the_source_never_saves_is_refused_when_planned(tmp_path, tiny_model_dir):
    base = recipe(tmp_path, tiny_model_dir, "base")
    del base["name"], base["output_dir"]
    sweep = {"name": "timing", "output_dir": str(tmp_path / "sweep"), "base": base, "stages": {
        "ft": {"kind": "train", "set": {"training.save_at_steps": [3]}},
        "mask": {"kind": "train", "set": {"model.name": "@ft/intermediate/step_4",
                                          "pruning": mask_train(mask_lr="auto")}}}}
    import yaml
    path = tmp_path / "timing.yaml"
    path.write_text(yaml.safe_dump(sweep), encoding="utf-8")
    with pytest.raises(SrnetError, match=r"stage 'mask': '@ft/intermediate/step_4': stage 'ft' saves no "
                                         r"checkpoint at step 4 \(its training.save_at_steps: \[3\]\)"):
        api.sweep(path, dry_run=True)
    assert not (tmp_path / "sweep").exists()  # refused before anything was written
    sweep["stages"]["mask"]["set"]["model.name"] = "@ft/intermediate/step_3"
    path.write_text(yaml.safe_dump(sweep), encoding="utf-8")
    assert len(api.sweep(path, dry_run=True).jobs) == 2


def test_hard_init_breaks_ties_by_magnitude_under_a_gradual_schedule(tmp_path, tiny_model_dir):
    from srnet.models import load_classifier
    from srnet.pruning import build_method
    from srnet.sparsity import original_weight

    cfg = recipe_from_dict(recipe(tmp_path, tiny_model_dir, "gradual", pruning=mask_train(
        sparsity=0.8, mask_lr="auto") | {"schedule": {"kind": "cubic", "initial": 0.4, "end": 0.5}}))
    model = load_classifier(str(tiny_model_dir), ("entailment", "neutral", "contradiction"))
    method = build_method(cfg.pruning, 0)
    method.prepare(model, 10)
    for target, mask in zip(method.targets, method.masks().values(), strict=True):
        weight = original_weight(target.module).abs().flatten()
        kept = weight[mask.flatten() != 0]
        dropped = weight[mask.flatten() == 0]
        assert mask.float().mean().item() == pytest.approx(0.6, abs=0.02)  # the schedule's 40% at step 0
        assert kept.min() >= dropped.max()  # the largest weights, not the first in index order


def test_the_log_names_the_mask_lr_apart_from_the_weights_lr(tmp_path, tiny_model_dir):
    run = api.run(recipe(tmp_path, tiny_model_dir, "lrs", pruning=mask_train(mask_lr=0.01)))
    entries = [json.loads(line) for line in (run.run_dir / "log.jsonl").open()]
    train = [e for e in entries if e.get("event") == "train"]
    assert train and all("mask_lr" in e and "lr" not in e for e in train)  # weights frozen: no lr
    assert max(e["mask_lr"] for e in train) <= 0.01
    dense = api.run(recipe(tmp_path, tiny_model_dir, "dense_lrs"))
    entries = [json.loads(line) for line in (dense.run_dir / "log.jsonl").open()]
    assert all("lr" in e and "mask_lr" not in e for e in entries if e.get("event") == "train")
