"""The pruning section: shared fields plus the method's own ``params``; the old flat spelling."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from srnet import compat
from srnet.compat import recorded_param
from srnet.config import load_recipe, recipe_from_dict
from srnet.errors import SrnetError
from srnet.experiments.sweep.plan import load_sweep, plan_sweep
from srnet.pruning import (
    METHODS,
    Dense,
    ImpParams,
    L0Params,
    MaskTrainingParams,
    OneShotParams,
    PruningConfig,
    available_methods,
    method_help,
    register_method,
)

ROOT = Path(__file__).resolve().parents[2]

# the same settings in the old flat spelling and in the new one, with the hash of the pruning
# section's fingerprint form, as the flat config dumped it before per-method params (pinned)
CASES = {
    "dense": ({"method": "dense", "sparsity": 0.0}, {"method": "dense", "sparsity": 0.0},
              "786a476f69faede6"),
    # the default's meaning changed (mask_lr: auto, reach 0.65; was 5e-5): a new key
    "default": ({}, {}, "8db385ea93106462"),
    "omp_gradient": (
        {"method": "omp", "granularity": "head", "importance": "gradient", "importance_batches": 8},
        {"method": "omp", "granularity": "head",
         "params": {"importance": "gradient", "importance_batches": 8}},
        "8b11aea85b1d6155"),
    "probe": ({"method": "dense", "freeze_weights": True},
              {"method": "dense", "params": {"freeze_weights": True}}, "853d4bbe42a12738"),
    "imp": ({"method": "imp", "sparsity": 0.3, "imp": {"prune_fraction": 0.1, "every": 0.1, "rewind": True}},
            {"method": "imp", "sparsity": 0.3,
             "params": {"prune_fraction": 0.1, "every": 0.1, "rewind": True}},
            "f364c4641daa77d4"),
    "mask_train": (
        {"method": "mask_train", "sparsity": 0.5, "init": "soft", "mask_lr": 1e-4, "train_classifier": True,
         "rerank_every": 5},
        {"method": "mask_train", "sparsity": 0.5,
         "params": {"init": "soft", "mask_lr": 1e-4, "train_classifier": True, "rerank_every": 5}},
        "f7760ecdede11473"),
    "l0": ({"method": "l0", "sparsity": 0.3, "scope": "global", "mask_lr": 0.1,
            "l0": {"lambda_": 1.0, "lambda_start": 0.1, "lambda_warmup": 0.3}},
           {"method": "l0", "sparsity": 0.3, "scope": "global",
            "params": {"mask_lr": 0.1, "lambda_": 1.0, "lambda_start": 0.1, "lambda_warmup": 0.3}},
           "936f3670579b4c9a"),
    "fixed": ({"method": "fixed", "sparsity": 0.3, "mask_file": "runs/x/masks.safetensors"},
              {"method": "fixed", "sparsity": 0.3, "params": {"mask_file": "runs/x/masks.safetensors"}},
              "6cb8d4a6efee6cfb"),
}


@pytest.fixture(autouse=True)
def _fresh_notes():
    """Deprecation notes are logged once per process: forget them between tests."""
    compat._NOTES.clear()
    yield
    compat._NOTES.clear()


@pytest.mark.parametrize("name", CASES)
def test_old_and_new_spelling_resolve_alike_and_keep_the_old_fingerprint(name):
    old, new, pinned = CASES[name]
    assert PruningConfig.model_validate(old) == PruningConfig.model_validate(new)
    semantic = PruningConfig.model_validate(new).semantic_dict()
    assert hashlib.sha256(json.dumps(semantic, sort_keys=True).encode()).hexdigest()[:16] == pinned
    old_recipe, new_recipe = recipe_from_dict({"pruning": old}), recipe_from_dict({"pruning": new})
    assert old_recipe == new_recipe and old_recipe.fingerprint() == new_recipe.fingerprint()


def test_the_old_spelling_moves_under_params_with_one_note(caplog):
    with caplog.at_level(logging.WARNING, logger="srnet"):
        cfg = PruningConfig(method="mask_train", init="soft", mask_lr=1e-3)
        again = PruningConfig(method="mask_train", init="soft", mask_lr=1e-3)
    assert cfg == again and isinstance(cfg.params, MaskTrainingParams)
    assert (cfg.params.init, cfg.params.mask_lr) == ("soft", 1e-3)
    notes = [r.getMessage() for r in caplog.records]
    assert notes == ["pruning: init, mask_lr: the old spelling, now under pruning.params"]
    dumped = cfg.model_dump(mode="json")
    assert "init" not in dumped and dumped["params"]["init"] == "soft"  # run folders record params


def test_old_settings_the_method_lacks_are_ignored_as_before(caplog):
    """A method grid over a flat section (mask_train's settings on imp) loaded; they are dropped."""
    with caplog.at_level(logging.WARNING, logger="srnet"):
        cfg = PruningConfig(method="imp", init="soft", mask_lr=5e-4, phi=0.01, imp={"rewind": True})
    assert cfg.params == ImpParams(rewind=True)
    assert caplog.records[0].getMessage() == (
        "pruning: imp.rewind: the old spelling, now under pruning.params; method 'imp' has no "
        "init='soft', mask_lr=0.0005 (ignored)")  # phi at its old default goes unmentioned


@pytest.mark.parametrize(("pruning", "message"), [
    ({"method": "imp", "params": {"phi": 0.02}},
     "pruning.params.phi: not a parameter of method 'imp' (a parameter of mask_train); its parameters: "
     "prune_fraction, every, rewind"),
    ({"method": "omp", "params": {"lambda": 1.0}},
     "pruning.params.lambda: not a parameter of method 'omp'; its parameters: freeze_weights, importance, "
     "importance_batches, importance_normalize"),
    ({"method": "mask_train", "params": {"init": "warm"}}, "pruning.params.init: Input should be"),
    ({"method": "l0", "params": {"lambda_start": 0.8, "lambda_warmup": 0.3}},
     "pruning.params: lambda_start 0.8 + lambda_warmup 0.3 exceeds 1"),
    ({"method": "omp", "params": {"importance": "gradient"}},
     "importance 'gradient' scores heads and neurons: it needs granularity head"),
    ({"method": "snip", "params": {"x": 1}}, "pruning.method: unknown method 'snip'"),
    ({"method": "imp", "params": [1]}, "params of method 'imp' must be a mapping"),
    # what the flat config refused still fails, now naming the method's own parameters
    ({"method": "imp", "freeze_weights": True},
     "pruning.params.freeze_weights: not a parameter of method 'imp' (a parameter of dense, fixed, omp, "
     "random)"),
    ({"method": "l0", "freeze_weights": True, "l0": {"train_weights": True}},
     "pruning.params.freeze_weights: not a parameter of method 'l0'"),
    ({"method": "mask_train", "granularity": "head", "importance": "gradient"},
     "pruning.params.importance: not a parameter of method 'mask_train' (a parameter of omp)"),
    ({"method": "imp", "imp": {"evry": 0.2}}, "pruning.params.evry: not a parameter of method 'imp'"),
    ({"method": "imp", "imp": 0.2}, "imp must be a mapping of imp settings"),
    ({"method": "imp", "imp": {"every": 0.2}, "params": {"every": 0.3}},
     "imp.every (the old spelling of params.every) = 0.2 contradicts params.every = 0.3"),
])
def test_bad_params_give_one_line_errors(pruning, message):
    with pytest.raises(SrnetError) as info:
        recipe_from_dict({"pruning": pruning}, "r.yaml")
    assert message in str(info.value) and "\n" not in str(info.value)


def test_params_take_a_model_or_nothing():
    assert PruningConfig(method="l0").params == L0Params()
    assert PruningConfig(method="l0", params=None).params == L0Params()
    assert PruningConfig(method="l0", params=L0Params(lambda_=2.0)).params.lambda_ == 2.0
    with pytest.raises(ValidationError, match="not a parameter of method 'imp'"):
        PruningConfig(method="imp", params=L0Params())  # another method's model


def test_overrides_and_grid_keys_reach_params(tmp_path):
    recipe = load_recipe(None, ["pruning.method=imp", "pruning.params.rewind=true"])
    assert recipe.pruning.params.rewind is True
    old = load_recipe(None, ["pruning.method=imp", "pruning.imp.rewind=true"])  # the old spelling
    assert old == recipe
    known = PruningConfig.known_key
    assert all(known(key.split(".")) for key in
               ("params", "params.rewind", "params.mask_file", "mask_lr", "imp", "imp.rewind", "l0.lambda_",
                "schedule.kind", "sparsity", "roles.0"))
    assert not any(known(key.split(".")) for key in
                   ("params.nope", "imp.nope", "init.x", "nope", "sparsity.x", "schedule.nope", "roles.x"))
    sweep = {"name": "s", "output_dir": str(tmp_path), "base": {"pruning": {"method": "mask_train"}},
             "stages": {"mask": {"kind": "train"}},
             "grid": {"mask.pruning.params.init": ["hard", "soft"], "mask.pruning.mask_lr": [1e-4]}}
    jobs = plan_sweep(sweep, "sweep.yaml")
    assert sorted(job.recipe["pruning"]["params"]["init"] for job in jobs) == ["hard", "soft"]
    with pytest.raises(SrnetError, match=r"grid key 'mask\.pruning\.params\.nope' is not a recipe key"):
        plan_sweep({**sweep, "grid": {"mask.pruning.params.nope": [1]}}, "sweep.yaml")


def test_a_study_in_the_old_spelling_plans_the_same_stages_as_in_the_new():
    """recipes/studies/rmc_easy_hard_cpu.yaml keeps the old spelling (a running study reads it)."""
    path = ROOT / "recipes" / "studies" / "rmc_easy_hard_cpu.yaml"
    old = load_sweep(path)
    assert old["stages"]["mask_poe50"]["set"]["pruning"]["mask_lr"] == 1.0e-4  # still the old spelling
    new = yaml.safe_load(path.read_text().replace("init: hard, mask_lr: 1.0e-4}",
                                                  "params: {init: hard, mask_lr: 1.0e-4}}"))
    assert new != old
    old_jobs, new_jobs = plan_sweep(old, str(path)), plan_sweep(new, str(path))
    assert [(j.key, j.recipe) for j in old_jobs] == [(j.key, j.recipe) for j in new_jobs]
    mask = next(j for j in new_jobs if j.name == "mask_poe50")
    assert mask.recipe["pruning"]["params"] == {"mask_lr": 1e-4, "train_classifier": False, "init": "hard",
                                                "phi": 0.01, "alpha": 2.0, "rerank_every": 10,
                                                "mask_reach": None, "importance_batches": 32}


def test_recorded_configs_in_either_spelling():
    """Reports read settings of recorded run configs (config.yaml as a dict) in both spellings."""
    old = {"method": "fixed", "mask_file": "a.safetensors", "imp": {"rewind": False}}
    new = {"method": "fixed", "params": {"mask_file": "b.safetensors"}}
    assert recorded_param(old, "mask_file") == "a.safetensors"
    assert recorded_param(new, "mask_file") == "b.safetensors"
    assert recorded_param(old, "rewind") is False and recorded_param(new, "rewind", "none") == "none"
    assert recorded_param(None, "mask_file") is None


def test_committed_run_configs_still_load():
    """Run folders recorded before per-method params (results/, docs/results/) load as they are."""
    configs = sorted((ROOT / "results").glob("**/config.yaml"))[:20]
    assert configs
    for path in configs:
        recipe = load_recipe(path)
        recorded = yaml.safe_load(path.read_text())["pruning"] or {"method": "dense"}
        assert recipe.pruning.method == recorded["method"]
        assert recipe.pruning.params.model_dump().items() >= {
            k: v for k, v in recorded.items() if k in recipe.pruning.params.model_fields}.items()


def test_method_help_comes_from_the_registry():
    text = method_help()
    assert all(f"{name} (" in text for name in available_methods())
    schema = PruningConfig.model_json_schema()["properties"]["method"]
    assert schema["description"] == f"Registered method: {text}."
    with METHODS.scoped():

        @register_method("zz_probe")
        class Probe(Dense):
            """A method registered for this test.  Masks nothing."""

        assert "zz_probe (A method registered for this test)" in method_help()
        assert PruningConfig(method="zz_probe").params == OneShotParams()
    assert "zz_probe" not in method_help() and "zz_probe" not in available_methods()
