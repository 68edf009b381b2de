"""A run killed mid-training resumes from its last checkpoint and ends exactly where an
uninterrupted run ends; a foreign, partial or lost checkpoint is refused in one line."""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from conftest import synthetic_split as synthetic
from srnet import api
from srnet.errors import SrnetError
from srnet.training.loop import Trainer


def recipe(root, model_dir, pruning=None) -> dict:
    return {
        "name": "r", "task": "synthetic_nli", "seed": 1, "output_dir": str(root),
        "model": {"name": str(model_dir), "max_length": 48},
        "data": {"train": synthetic("train", 64), "dev": synthetic("dev", 24),
                 "challenge": [synthetic("challenge", 24)]},
        "training": {"max_steps": 8, "batch_size": 8, "eval_every": 2, "checkpoint_every": 4,
                     "lr": 1e-3, "log_every": 2},
        "pruning": pruning,
    }


@pytest.mark.parametrize("pruning", [None, {"method": "mask_train", "sparsity": 0.5,
                                             "schedule": {"kind": "cubic", "initial": 0.1, "end": 0.5}},
                                     {"method": "omp", "granularity": "head+neuron", "sparsity": 0.5,
                                      "params": {"importance": "gradient", "importance_batches": 2}},
                                     {"method": "omp", "granularity": "head+neuron", "sparsity": 0.5,
                                      "params": {"importance": "gradient", "importance_batches": 2,
                                                 "gradual": 0.9}}])  # cuts after steps 2, 4 and 5
def test_interrupted_run_resumes_to_the_same_result(pruning, tmp_path, tiny_model_dir, monkeypatch):
    reference = api.run(recipe(tmp_path / "ref", tiny_model_dir, pruning))

    original = Trainer._evaluate

    def crash_at_step_6(self):
        original(self)
        if self.state.step == 6:
            raise KeyboardInterrupt

    monkeypatch.setattr(Trainer, "_evaluate", crash_at_step_6)
    with pytest.raises(KeyboardInterrupt):
        api.run(recipe(tmp_path / "cut", tiny_model_dir, pruning))
    run_dir = tmp_path / "cut" / "r"
    assert (run_dir / "checkpoints" / "last" / "trainer.pt").exists()
    assert not (run_dir / "metrics.json").exists()
    with pytest.raises(SrnetError, match="resume=True"):
        api.run(recipe(tmp_path / "cut", tiny_model_dir, pruning))

    monkeypatch.setattr(Trainer, "_evaluate", original)
    changed = recipe(tmp_path / "cut", tiny_model_dir, pruning)
    changed["training"]["lr"] = 5e-4
    with pytest.raises(SrnetError, match="different recipe"):
        api.run(changed, resume=True)
    resumed = api.run(recipe(tmp_path / "cut", tiny_model_dir, pruning), resume=True)

    strip = lambda m: {k: v for k, v in m.items() if k != "time_s"}  # noqa: E731
    assert strip(resumed.metrics.as_json()) == strip(reference.metrics.as_json())
    a = load_file(reference.run_dir / "model" / "model.safetensors")
    b = load_file(resumed.run_dir / "model" / "model.safetensors")
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    log = (resumed.run_dir / "log.jsonl").read_text()
    assert '"event": "resume", "step": 4' in log


def test_gradient_accumulation_windows_end_with_each_epoch(tmp_path, tiny_model_dir):
    """64 examples, batch 8, accumulation 3: 8 micro-batches per epoch -> 3 optimizer steps per
    epoch (3 + 3 + 2 micro-batches), so 2 epochs are exactly 6 steps."""
    spec = recipe(tmp_path, tiny_model_dir)
    spec["training"] = {"epochs": 2, "batch_size": 8, "grad_accum": 3, "lr": 1e-3, "log_every": 1,
                        "eval_every": 100}
    result = api.run(spec)
    log = [json.loads(line) for line in (result.run_dir / "log.jsonl").open()]
    steps = [(e["step"], e["epoch"]) for e in log if e["event"] == "train"]
    assert steps == [(1, 0), (2, 0), (3, 0), (4, 1), (5, 1), (6, 1)]


def crash_at(step: int):
    """A ``Trainer._evaluate`` that stops the run (Ctrl-C) after evaluating ``step``."""
    original = Trainer._evaluate

    def evaluate(self):
        original(self)
        if self.state.step == step:
            raise KeyboardInterrupt

    return evaluate


@pytest.fixture(scope="module")
def cut_run(tmp_path_factory, tiny_model_dir):
    """A run stopped at step 6 whose last checkpoint is step 4: (its recipe, its folder)."""
    root = tmp_path_factory.mktemp("cut")
    spec = recipe(root, tiny_model_dir)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Trainer, "_evaluate", crash_at(6))
        with pytest.raises(KeyboardInterrupt):
            api.run(spec)
    return spec, root / "r"


def copy_of(cut_run, tmp_path) -> tuple[dict, Path]:
    spec, folder = cut_run
    shutil.copytree(folder, tmp_path / "r")
    return {**spec, "output_dir": str(tmp_path)}, tmp_path / "r"


def drop(key: str):
    return lambda saved: {k: v for k, v in saved.items() if k != key}


PT, STATE = "trainer.pt", "trainer_state.json"
FOREIGN = [
    (PT, lambda saved: {}, r"\(no optimizer, scheduler, method, rng\)"),
    (PT, drop("optimizer"), r"\(no optimizer\)"),
    (PT, lambda saved: torch.zeros(3), r"\(no optimizer"),
    (PT, lambda saved: {**saved, "optimizer": {"state": {}, "param_groups": []}}, r"parameter groups"),
    (STATE, lambda state: {**state, "stage": 2}, r"keyword argument 'stage'"),
    (STATE, lambda state: {**state, "step": "4"}, r"\(state \{"),
    (STATE, lambda state: [state], r"\(state is a list\)"),
    (STATE, lambda state: '{"step": 4', r"\(unreadable: "),
    (STATE, lambda state: {**state, "step": 99}, r"step 99 is beyond this schedule's \d+ steps"),
    (STATE, lambda state: {**state, "step": 0}, r"step 0 is behind its own scheduler's 4 steps"),
]


def rewrite(path: Path, change) -> None:
    """``path`` (a ``trainer.pt`` or ``trainer_state.json``) with its contents changed by ``change``."""
    if path.suffix == ".pt":
        torch.save(change(torch.load(path, weights_only=True)), path)
        return
    changed = change(json.loads(path.read_text()))
    path.write_text(changed if isinstance(changed, str) else json.dumps(changed))


@pytest.mark.parametrize(("name", "change", "message"), FOREIGN)
def test_a_foreign_or_partial_checkpoint_file_is_one_line(cut_run, tmp_path, name, change, message):
    """These were once KeyError, TypeError and ValueError tracebacks."""
    spec, folder = copy_of(cut_run, tmp_path)
    path = folder / "checkpoints" / "last" / name
    rewrite(path, change)
    with pytest.raises(SrnetError) as caught:
        api.run(spec, resume=True)
    text = str(caught.value)
    assert text.startswith(f"{path}: foreign or partial resume checkpoint (") and "\n" not in text
    assert re.search(message, text) and text.endswith("rerun with overwrite=True to start the run over")


def test_the_train_state_is_json_beside_the_tensors(cut_run):
    _, folder = cut_run
    last = folder / "checkpoints" / "last"
    state = json.loads((last / STATE).read_text())
    assert state.keys() == {"step", "epoch", "batch_in_epoch", "best_metric", "best_step"}
    assert (state["step"], state["epoch"], state["batch_in_epoch"]) == (4, 0, 4)
    assert "state" not in torch.load(last / PT, weights_only=True)


def test_a_trainer_pt_written_before_trainer_state_json_resumes(cut_run, tmp_path, tiny_model_dir):
    """A checkpoint of an earlier srnet holds its train state inside trainer.pt."""
    spec, folder = copy_of(cut_run, tmp_path)
    last = folder / "checkpoints" / "last"
    state = last / STATE
    saved = torch.load(last / PT, weights_only=True)
    torch.save({"state": json.loads(state.read_text()), **saved}, last / PT)
    state.unlink()
    resumed = api.run(spec, resume=True)
    reference = api.run(recipe(tmp_path / "ref", tiny_model_dir))
    strip = lambda m: {k: v for k, v in m.items() if k != "time_s"}  # noqa: E731
    assert strip(resumed.metrics.as_json()) == strip(reference.metrics.as_json())
    assert '"event": "resume", "step": 4' in (resumed.run_dir / "log.jsonl").read_text()


def test_an_older_trainer_pt_without_its_state_is_one_line(cut_run, tmp_path):
    spec, folder = copy_of(cut_run, tmp_path)
    last = folder / "checkpoints" / "last"
    (last / STATE).unlink()
    with pytest.raises(SrnetError, match=rf"^{last / PT}: foreign or partial resume checkpoint "
                                         r"\(no state\)"):
        api.run(spec, resume=True)


@pytest.mark.parametrize("deleted", ["checkpoints/last/trainer.pt", "checkpoints"])
def test_a_lost_checkpoint_is_refused_not_restarted_from_step_0(cut_run, tmp_path, deleted):
    """A deleted trainer.pt once restarted the run from step 0 with a note in log.jsonl only."""
    spec, folder = copy_of(cut_run, tmp_path)
    target = folder / deleted
    if target.is_dir():
        shutil.rmtree(target)
    else:
        target.unlink()
    path = folder / "checkpoints" / "last" / "trainer.pt"
    with pytest.raises(SrnetError, match=f"^{path}: resume checkpoint missing "
                                         r"\(the run saved one at step 4\); rerun with overwrite=True"):
        api.run(spec, resume=True)


def test_a_run_stopped_before_its_first_checkpoint_restarts_and_says_so(tmp_path, tiny_model_dir, monkeypatch,
                                                                        caplog):
    spec = recipe(tmp_path, tiny_model_dir)
    monkeypatch.setattr(Trainer, "_evaluate", crash_at(2))
    with pytest.raises(KeyboardInterrupt):
        api.run(spec)
    assert not (tmp_path / "r" / "checkpoints" / "last").exists()
    monkeypatch.undo()
    with caplog.at_level(logging.WARNING, logger="srnet"):
        api.run(spec, resume=True)
    assert "resume: the run stopped before its first checkpoint; training starts at step 0" in caplog.text


def test_saving_checkpoints_changes_nothing_the_run_computes(tmp_path, tiny_model_dir):
    """``checkpoint_every`` is not in a stage's key (srnet compress sets it): a run that saves a
    checkpoint every step ends with the same weights as one that saves none before its end."""
    every = recipe(tmp_path / "every", tiny_model_dir)
    every["training"].update(checkpoint_every=1, eval_every=None)
    never = recipe(tmp_path / "never", tiny_model_dir)
    never["training"].update(checkpoint_every=None, eval_every=None)
    runs = [api.run(r).run_dir for r in (every, never)]
    saved = [(run / "log.jsonl").read_text().count('"event": "checkpoint"') for run in runs]
    assert saved[0] >= 7 and saved[0] > saved[1]  # the setting did save, at every step
    weights = [load_file(run / "model" / "model.safetensors") for run in runs]
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
