"""``kill -9`` at five moments of a CLI run, each followed by ``--resume``, ends bit for bit where an
uninterrupted run with the same seed ends: the same metrics.json (but time_s) and masks file.

Each of the six CLI runs is its own process, started from a fork server: a fresh interpreter that
has imported srnet, torch and transformers once (nothing of this test process), so the runs do not
each spend most of their time importing."""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.forkserver
import os
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from conftest import synthetic_split as synthetic
from srnet import api
from srnet.sparsity.mask_io import load_masks

pytestmark = pytest.mark.slow  # subprocesses killed and resumed (make test ARGS='-m "not slow"' skips)

REPO = Path(__file__).resolve().parents[2]

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


PRELOAD = ["srnet.cli", "srnet.api", "srnet.experiments.run.driver", "transformers.models.bert.modeling_bert",
           "transformers.models.bert.tokenization_bert", __name__]
"""What the fork server imports once (the CLI, the run path, the tiny BERT's classes, this module for
:func:`srnet_cli`); a run forked from it imports only what is left."""


def srnet_cli(argv: list[str], stderr: str) -> None:
    """``srnet <argv>`` in this (forked) process: stdout discarded, stderr to the file ``stderr``, the
    exit status the command's."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.dup2(os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
    from srnet.cli import main

    sys.exit(main(argv))


@pytest.fixture
def fork_server(monkeypatch):
    """A ``multiprocessing`` fork-server context that preloads :data:`PRELOAD`, stopped afterwards."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the server's environment is the runs'
    paths = [str(REPO / "src"), os.environ.get("PYTHONPATH")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, paths)))
    server = multiprocessing.forkserver._forkserver
    server._stop()  # a server started earlier in this process would lack the preload
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    try:
        yield ctx
    finally:
        ctx.set_forkserver_preload([])
        server._stop()


def launch(ctx, path: Path, resume: bool, stderr: Path) -> multiprocessing.Process:
    argv = ["run", str(path), *(["--resume"] if resume else [])]
    proc = ctx.Process(target=srnet_cli, args=(argv, str(stderr)))
    proc.start()
    return proc


def kill_after(proc: multiprocessing.Process, log: Path, step: int, stderr: Path) -> None:
    """SIGKILL ``proc`` once ``log`` records train step ``step``."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.is_alive():
        if log.is_file() and f'"step": {step}, "event": "train"' in log.read_text():
            proc.kill()
            proc.join()
            return
        time.sleep(0.02)
    raise AssertionError(f"run ended before step {step}: {stderr.read_text()[-2000:]}")


def test_kill_9_five_times_then_resume_is_bit_exact(tmp_path, tiny_model_dir, fork_server):
    reference = api.run(recipe(tmp_path / "ref", tiny_model_dir))

    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe(tmp_path / "cut", tiny_model_dir)))
    run_dir = tmp_path / "cut" / "k"
    stderr = tmp_path / "stderr.txt"
    for i, step in enumerate(KILL_AFTER_STEPS):
        proc = launch(fork_server, path, resume=i > 0, stderr=stderr)
        kill_after(proc, run_dir / "log.jsonl", step, stderr)
        assert proc.exitcode == -9  # killed, not ended
        assert not (run_dir / "metrics.json").exists()
    final = launch(fork_server, path, resume=True, stderr=stderr)
    final.join(timeout=300)
    assert final.exitcode == 0, stderr.read_text()[-2000:]

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
