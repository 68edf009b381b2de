"""``kill -9`` at five moments of a CLI run, each followed by ``--resume``, ends bit for bit where an
uninterrupted run with the same seed ends: the same metrics.json (but time_s) and masks file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch
import yaml

from conftest import synthetic_split as synthetic
from srnet import api
from srnet.sparsity.mask_io import load_masks

REPO = Path(__file__).resolve().parents[1]

KILL_AFTER_STEPS = (2, 4, 7, 9, 11)
"""The chain is killed as soon as the log shows these train steps (mid-step, mid-eval or mid-save)."""


def recipe(root: Path, model_dir: Path) -> dict:
    return {
        "name": "k", "task": "synthetic_nli", "seed": 5, "output_dir": str(root),
        "model": {"name": str(model_dir), "max_length": 32},
        "data": {"train": synthetic("train", 40), "dev": synthetic("dev", 16),
                 "challenge": [synthetic("challenge", 16)]},
        "training": {"max_steps": 12, "batch_size": 8, "eval_every": 3, "checkpoint_every": 1,
                     "lr": 1e-3, "log_every": 1, "warmup_ratio": 0.0},
        # a large mask lr and a trained head, so one dropout draw off would change masks and model
        "pruning": {"method": "mask_train", "sparsity": 0.5,
                    "params": {"rerank_every": 2, "mask_lr": 0.05, "train_classifier": True},
                    "schedule": {"kind": "cubic", "initial": 0.2, "end": 0.6}},
    }


def launch(path: Path, resume: bool) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "srnet.cli", "run", str(path), *(["--resume"] if resume else [])]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def kill_after(proc: subprocess.Popen, log: Path, step: int) -> None:
    """SIGKILL ``proc`` once ``log`` records train step ``step``."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if log.is_file() and f'"step": {step}, "event": "train"' in log.read_text():
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return
        time.sleep(0.02)
    raise AssertionError(f"run ended before step {step}: {proc.stderr.read().decode()[-2000:]}")


def test_kill_9_five_times_then_resume_is_bit_exact(tmp_path, tiny_model_dir):
    reference = api.run(recipe(tmp_path / "ref", tiny_model_dir))

    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe(tmp_path / "cut", tiny_model_dir)))
    run_dir = tmp_path / "cut" / "k"
    for i, step in enumerate(KILL_AFTER_STEPS):
        kill_after(launch(path, resume=i > 0), run_dir / "log.jsonl", step)
        assert not (run_dir / "metrics.json").exists()
    final = launch(path, resume=True)
    assert final.wait(timeout=300) == 0, final.stderr.read().decode()[-2000:]

    strip = lambda m: {k: v for k, v in m.items() if k != "time_s"}  # noqa: E731
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert strip(metrics) == strip(json.loads((reference.run_dir / "metrics.json").read_text()))
    # the mask tensors and metadata, bit for bit (byte equality of the file also needs the header
    # written in a fixed key order)
    masks, meta = load_masks(run_dir / "masks.safetensors")
    ref_masks, ref_meta = load_masks(reference.run_dir / "masks.safetensors")
    assert meta == ref_meta and masks.keys() == ref_masks.keys()
    assert all(torch.equal(masks[k], ref_masks[k]) for k in masks)
    assert (run_dir / "model" / "model.safetensors").read_bytes() == (
        reference.run_dir / "model" / "model.safetensors").read_bytes()
    resumes = [json.loads(line) for line in (run_dir / "log.jsonl").open()]
    assert sum(e["event"] == "resume" for e in resumes) == len(KILL_AFTER_STEPS)
