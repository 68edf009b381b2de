"""A run killed mid-training resumes from its last checkpoint and ends exactly where an
uninterrupted run ends."""

from __future__ import annotations

import json

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
                                      "params": {"importance": "gradient", "importance_batches": 2}}])
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
    with pytest.raises(SrnetError, match="--resume"):
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
