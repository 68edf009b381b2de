"""A user's finished work is never lost: names are checked, every input is resolved before a run
folder is touched, and ``--overwrite`` swaps the new run in only once it completes (the demo's
rerun, resume and overwrite: tests/cli/test_cli.py)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import merge, tiny_recipe
from conftest import synthetic_split as synthetic
from srnet import api
from srnet.cli import main
from srnet.errors import SrnetError
from srnet.tasks import generate_synthetic

REPO = Path(__file__).resolve().parents[2]
LABELS = ["entailment", "neutral", "contradiction"]


SMALL = {"data": {"train": synthetic("train", 24), "dev": synthetic("dev", 16), "challenge": []},
         "training": {"max_steps": 2, "eval_every": None}}
"""This file's runs: conftest's tiny recipe, shorter (2 steps on 24 examples, no challenge split)."""


def short_recipe(root, model, name, **extra) -> dict:
    return tiny_recipe(root, model, name, **merge(SMALL, extra))


def bias_file(path, *, drop: int = 0, nan: bool = False, classes: int = 3):
    ids = [ex.id for ex in generate_synthetic("train", 24, seed=0)][drop:]
    header = {"srnet_bias": 1, "labels": LABELS[:classes], "feature": "t", "split": "train"}
    rows = [{"id": i, "log_probs": [float(np.log(1 / classes))] * classes} for i in ids]
    if nan:
        rows[3]["log_probs"][0] = "NaN"
    path.write_text("".join(json.dumps(r) + "\n" for r in [header, *rows]).replace('"NaN"', "NaN"))
    return str(path)


@pytest.fixture(scope="module")
def finished(tmp_path_factory, tiny_model_dir):
    """A finished run 'ft' in its own output folder (with a bystander file next to it)."""
    root = tmp_path_factory.mktemp("runs")
    (root / "bystander.txt").write_text("keep me")
    api.run(short_recipe(root, tiny_model_dir, "ft"))
    return root


def cli(capsys, *argv) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


@pytest.mark.parametrize("name", ['""', "..", ".", "a/b", "../escape"])
def test_bad_run_names_are_refused_before_anything_is_deleted(capsys, tmp_path, finished, name):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(json.dumps(short_recipe(finished, "unused", "x")))
    code, err = cli(capsys, "run", str(recipe), "--set", f"name={name}", "--overwrite")
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1 and "run name" in err
    assert (finished / "bystander.txt").read_text() == "keep me"
    assert (finished / "ft" / "metrics.json").is_file()


def test_overwrite_with_a_bad_recipe_keeps_the_finished_run(capsys, tmp_path, finished, tiny_model_dir):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(json.dumps(short_recipe(finished, tiny_model_dir, "ft")))
    before = (finished / "ft" / "metrics.json").read_text()
    code, err = cli(capsys, "run", str(recipe), "--set", "loss.name=focal", "--overwrite")
    assert code == 2 and "focal" in err and err.count("\n") == 1
    assert (finished / "ft" / "metrics.json").read_text() == before
    assert sorted(p.name for p in finished.iterdir()) == ["bystander.txt", "ft"]


def test_a_taken_run_folder_names_the_callers_option(capsys, tmp_path, finished, tiny_model_dir):
    """The API's refusal names its keywords, the CLI's its flags."""
    recipe = short_recipe(finished, tiny_model_dir, "ft")
    with pytest.raises(SrnetError, match=r"pass resume=True to continue it or overwrite=True to start again"):
        api.run(recipe)
    path = tmp_path / "r.yaml"
    path.write_text(json.dumps(recipe))
    code, err = cli(capsys, "run", str(path))
    assert code == 2 and "pass --resume to continue it or --overwrite to start again" in err


@pytest.mark.parametrize("extra, message", [
    ({"loss": {"name": "focal"}}, "focal"),
    ({"loss": {"name": "ce", "params": {"gamma": 2}}}, "gamma"),
    ({"loss": {"name": "poe"}}, "bias_predictions"),
    ({"loss": {"name": "conf_reg", "bias_predictions": "BIAS"}}, "teacher"),
    ({"loss": {"name": "conf_reg", "bias_predictions": "BIAS", "teacher": "no_run"}}, "no_run"),
    ({"loss": {"name": "rmc"}}, "teacher|difficulty"),
    ({"pruning": {"method": "fixed", "sparsity": 0.5}}, "mask_file"),
    ({"pruning": {"method": "fixed", "sparsity": 0.5, "params": {"mask_file": "nope.safetensors"}}}, "nope"),
    ({"model": {"name": "unused", "init_from": "no_such_run"}}, "init_from"),
    ({"dense_reference": "no_such_run"}, "dense_reference"),
    ({"bias_dir": "@bias"}, "'@bias' names a sweep stage"),
])
def test_bad_inputs_fail_before_the_run_folder_exists(tmp_path, tiny_model_dir, extra, message):
    out = tmp_path / "runs"
    recipe = short_recipe(out, tiny_model_dir, "debris")
    for key, value in extra.items():
        recipe[key] = {**recipe.get(key, {}), **value} if isinstance(recipe.get(key), dict) else value
    if recipe.get("loss", {}).get("bias_predictions") == "BIAS":
        recipe["loss"]["bias_predictions"] = bias_file(tmp_path / "bias.jsonl")
    with pytest.raises(SrnetError, match=message):
        api.run(recipe)
    assert not out.exists()


@pytest.mark.parametrize("kind, message", [
    ({"drop": 1}, "synthetic-train-0"), ({"nan": True}, "(?i)nan"), ({"classes": 2}, "(?i)class|label"),
])
def test_bad_bias_predictions_fail_before_the_run_folder_exists(tmp_path, tiny_model_dir, kind, message):
    path = bias_file(tmp_path / "bias.jsonl", **kind)
    out = tmp_path / "runs"
    with pytest.raises(SrnetError, match=message):
        api.run(short_recipe(out, tiny_model_dir, "poe", loss={"name": "poe", "bias_predictions": path}))
    assert not out.exists()


def test_mask_file_that_does_not_fit_fails_before_the_run_folder(tmp_path, tiny_model_dir):
    from srnet.sparsity.mask_io import MaskMetadata, save_masks

    masks = tmp_path / "m.safetensors"
    save_masks(masks, {"bert.encoder.layer.0.attention.self.query": torch.ones(4, 4, dtype=torch.bool)},
               MaskMetadata(method="omp", base_model="x", base_model_fingerprint="0"))
    out = tmp_path / "runs"
    with pytest.raises(SrnetError, match=r"shape|fingerprint|mask"):
        api.run(short_recipe(out, tiny_model_dir, "fx", pruning={
            "method": "fixed", "sparsity": 0.5, "params": {"mask_file": str(masks)}}))
    assert not out.exists()


def test_overwrite_swaps_in_only_a_completed_run(tmp_path, tiny_model_dir, monkeypatch):
    first = api.run(short_recipe(tmp_path, tiny_model_dir, "ft"))
    before = (first.run_dir / "metrics.json").read_text()

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    import srnet.experiments.run.task as run_module

    with monkeypatch.context() as patch:
        patch.setattr(run_module, "evaluate_splits", broken)
        with pytest.raises(RuntimeError, match="disk on fire"):
            api.run(short_recipe(tmp_path, tiny_model_dir, "ft", seed=1), overwrite=True)
    assert (first.run_dir / "metrics.json").read_text() == before  # the old run survived the failure
    again = api.run(short_recipe(tmp_path, tiny_model_dir, "ft", seed=1), overwrite=True)
    assert again.run_dir == first.run_dir and again.metrics.seed == 1
    assert json.loads((first.run_dir / "metrics.json").read_text())["seed"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ft"]  # no staging folder left


def _interrupted_overwrite(tmp_path, tiny_model_dir, *, new_complete: bool):
    """A finished run 'r', then the state a kill between --overwrite's two renames leaves."""
    recipe = tiny_recipe(tmp_path, tiny_model_dir, "r", training={"mixed_precision": "no", "max_steps": 2})
    api.run(recipe)
    root = tmp_path / "r"
    staging = tmp_path / ".r.overwrite"
    shutil.copytree(root, staging)
    (staging / "marker").write_text("new")
    if not new_complete:
        (staging / "metrics.json").unlink()
    root.rename(tmp_path / ".r.replaced")
    return recipe, root


def test_a_kill_between_the_overwrite_renames_lets_the_finished_new_run_win(tmp_path, tiny_model_dir):
    recipe, root = _interrupted_overwrite(tmp_path, tiny_model_dir, new_complete=True)
    with pytest.raises(SrnetError, match="already complete"):  # visible again, and complete
        api.run(recipe, resume=True)
    assert (root / "marker").read_text() == "new" and (root / "metrics.json").is_file()
    assert not (tmp_path / ".r.replaced").exists() and not (tmp_path / ".r.overwrite").exists()


def test_a_kill_between_the_overwrite_renames_restores_the_old_run(tmp_path, tiny_model_dir):
    recipe, root = _interrupted_overwrite(tmp_path, tiny_model_dir, new_complete=False)
    with pytest.raises(SrnetError, match="already complete"):
        api.run(recipe, resume=True)
    assert not (root / "marker").exists() and (root / "metrics.json").is_file()  # the old run
    assert not (tmp_path / ".r.replaced").exists()


def test_resume_removes_the_debris_of_a_killed_finish(tmp_path, tiny_model_dir, monkeypatch):
    import srnet.experiments.run.finish as finish

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    recipe = tiny_recipe(tmp_path, tiny_model_dir, "d", training={"mixed_precision": "no", "max_steps": 2})
    with monkeypatch.context() as patch:  # killed during its final writes: no metrics.json, checkpoints kept
        patch.setattr(finish, "write_metrics", killed)
        with pytest.raises(KeyboardInterrupt):
            api.run(recipe)
    root = tmp_path / "d"
    (root / ".model.abc.tmp").mkdir()
    (root / ".model.abc.tmp" / "weights").write_bytes(b"x" * 100)
    (root / ".metrics.json.xyz.tmp").write_text("{")
    api.run(recipe, resume=True)
    assert not list(root.rglob(".*.tmp")) and (root / "metrics.json").is_file()


@pytest.mark.parametrize("seed", [-1, 2**64])
def test_a_seed_out_of_range_is_one_line(tmp_path, tiny_model_dir, seed):
    with pytest.raises(SrnetError, match="seed") as info:
        api.run(tiny_recipe(tmp_path, tiny_model_dir, "s", seed=seed))
    assert "\n" not in str(info.value) and not (tmp_path / "s").exists()


def test_max_length_beyond_the_position_embeddings_is_refused_before_training(tmp_path, tiny_model_dir):
    recipe = tiny_recipe(tmp_path, tiny_model_dir, "long")
    recipe["model"]["max_length"] = 4096
    with pytest.raises(SrnetError, match=r"model.max_length 4096 is longer than this bert model's 128 "):
        api.run(recipe)
    assert not (tmp_path / "long").exists()


def test_a_truncated_weights_file_is_one_line(tmp_path, tiny_model_dir):
    broken = tmp_path / "broken"
    shutil.copytree(tiny_model_dir, broken)
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(SrnetError, match=r"cannot load model") as info:
        api.run(tiny_recipe(tmp_path, broken, "t"))
    assert "\n" not in str(info.value)


def test_a_second_run_of_a_live_runs_folder_is_refused_before_its_model_loads(
        capsys, caplog, tmp_path, tiny_model_dir, monkeypatch):
    """Two runs never share a folder.  While ``srnet run`` A holds ``.r.lock`` beside
    its folder, a second run and an ``--overwrite`` of it are refused in one line naming A, before
    any model loads; once A is killed, its stale lock is taken over and a run leaves no lock behind."""
    runs = tmp_path / "runs"
    recipe = tmp_path / "r.yaml"
    recipe.write_text(json.dumps(short_recipe(runs, tiny_model_dir, "r", training={"max_steps": 100000})))
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "OMP_NUM_THREADS": "1"}
    first = subprocess.Popen([sys.executable, "-m", "srnet.cli", "run", str(recipe)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (runs / ".r.lock").is_file() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert first.poll() is None and (runs / ".r.lock").is_file()
        import srnet.experiments.run.task as run_module

        with monkeypatch.context() as patch:
            patch.setattr(run_module, "load_classifier", lambda *a, **k: pytest.fail("a model loaded"))
            for extra in ([], ["--overwrite"], ["--resume"]):
                code, err = cli(capsys, "run", str(recipe), "--set", "training.max_steps=2", *extra)
                assert code == 2 and err.count("\n") == 1, err
                assert f"{runs / 'r'} is in use by another srnet run (pid {first.pid} on " in err
    finally:
        first.kill()
        first.wait(timeout=60)
    assert (runs / ".r.lock").is_file()  # a killed run's lock stays: its pid is gone
    with caplog.at_level(logging.WARNING, logger="srnet"):
        api.run(short_recipe(runs, tiny_model_dir, "r"), overwrite=True)
    assert f"took over the stale lock of pid {first.pid}" in caplog.text
    assert sorted(p.name for p in runs.iterdir()) == ["r"]  # the lock and its guard are gone


def test_a_run_refused_before_it_starts_leaves_no_lock_or_folder(tmp_path, tiny_model_dir):
    recipe = short_recipe(tmp_path / "new" / "runs", tiny_model_dir, "x", loss={"name": "poe"})
    with pytest.raises(SrnetError, match="poe"):  # no bias predictions: refused in prepare
        api.run(recipe)
    assert not (tmp_path / "new").exists()


def test_an_unfinished_demo_names_the_api_keywords_from_the_api(tmp_path):
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "sweep.yaml").write_text("stages: {}\n", encoding="utf-8")  # as if killed
    with pytest.raises(SrnetError, match=r"unfinished demo; pass resume=True to continue it or "
                                         r"overwrite=True to start over") as info:
        api.demo(output_dir=tmp_path, progress=lambda _: None)
    assert "\n" not in str(info.value)
