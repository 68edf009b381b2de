"""``accelerate launch --multi_gpu --num_processes 2`` (no GPU: MULTI_CPU, gloo) runs mask training.

Checks: the two ranks hold identical masks at every evaluation (the trainer gathers a digest of
each rank's masks and fails on a mismatch); rank 1 writes nothing in the run directory (an audit
hook in rank 1 records every file-system write there); metrics match a single-process run with the
same global batch (2 x 8 = 16).

Tolerance: the two runs see the same examples in the same optimizer steps (length grouping off,
so global batch k of the 2-process run is the union of its ranks' batches, which is the
single-process run's batch k), with dropout off and the same schedule.  They differ only in
float rounding: DDP averages the two ranks' mean gradients (same value, other summation order)
and each rank pads its half on its own.  Train losses agree to 1e-4 relative; accuracies to 1e-9
(the same predictions), and the masks are identical, unless a score lands within rounding of the
threshold (not at these settings).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from transformers import AutoConfig

from conftest import synthetic_split as synthetic
from srnet import api
from srnet.sparsity.mask_io import load_masks

pytestmark = pytest.mark.slow  # processes launched by accelerate (make test ARGS='-m "not slow"' skips)
REPO = Path(__file__).resolve().parents[2]

AUDIT = '''
import os, sys
if os.environ.get("RANK", "0") != "0":
    root, out = os.environ["SRNET_AUDIT_ROOT"], os.environ["SRNET_AUDIT_OUT"]
    WRITES = ("os.mkdir", "os.rename", "os.remove", "os.rmdir", "shutil.rmtree", "shutil.move")
    def hook(event, args):
        if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
            mode, flags = args[1], args[2] if len(args) > 2 else 0
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
        else:
            writing = event in WRITES
        if writing and args and os.fspath(args[0]).__str__().startswith(root):
            with open(out, "a") as fh:
                fh.write(f"{event} {args[0]}\\n")
    sys.addaudithook(hook)
'''


def recipe(root: Path, model_dir: Path, batch_size: int) -> dict:
    return {
        "name": "mp", "task": "synthetic_nli", "seed": 2, "output_dir": str(root),
        "model": {"name": str(model_dir), "max_length": 32},
        "data": {"train": synthetic("train", 64), "dev": synthetic("dev", 32),
                 "challenge": [synthetic("challenge", 32)]},
        "training": {"max_steps": 8, "batch_size": batch_size, "eval_every": 4, "lr": 1e-3,
                     "log_every": 1, "warmup_ratio": 0.0, "group_by_length": False,
                     "mixed_precision": "no"},  # bit-level comparisons: fp32 in both runs
        "pruning": {"method": "mask_train", "sparsity": 0.5, "params": {"mask_lr": 0.05, "rerank_every": 2}},
    }


@pytest.mark.skipif(shutil.which("accelerate", path=str(Path(sys.executable).parent)) is None,
                    reason="accelerate launcher not installed")
def test_two_processes_match_one_with_the_same_global_batch(tmp_path, tiny_model_dir):
    model_dir = tmp_path / "no_dropout"
    shutil.copytree(tiny_model_dir, model_dir)
    config = AutoConfig.from_pretrained(model_dir)
    config.hidden_dropout_prob = config.attention_probs_dropout_prob = 0.0
    config.save_pretrained(model_dir)

    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(recipe(tmp_path / "two", model_dir, batch_size=8)))
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(AUDIT)
    audit_out = tmp_path / "rank1_writes.txt"
    env = {**os.environ, "PYTHONPATH": f"{hooks}{os.pathsep}{REPO / 'src'}", "OMP_NUM_THREADS": "1",
           "SRNET_AUDIT_ROOT": str(tmp_path / "two"), "SRNET_AUDIT_OUT": str(audit_out)}
    launcher = Path(sys.executable).parent / "accelerate"
    # on a machine without GPUs, --multi_gpu gives MULTI_CPU (gloo); --cpu would force one process
    cmd = [str(launcher), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
           "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "srnet.cli", "run", str(path)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not audit_out.exists(), audit_out.read_text()

    single = api.run(recipe(tmp_path / "one", model_dir, batch_size=16))
    run_dir = tmp_path / "two" / "mp"
    log = [json.loads(line) for line in (run_dir / "log.jsonl").open()]
    evals = [e for e in log if e["event"] == "eval"]
    assert len(evals) == 2
    digests = [e["mask_digest_per_rank"] for e in evals]
    assert all(len(d) == 2 and d[0] == d[1] for d in digests), digests

    two_masks, _ = load_masks(run_dir / "masks.safetensors")
    one_masks, _ = load_masks(single.run_dir / "masks.safetensors")
    assert all(torch.equal(two_masks[k], one_masks[k]) for k in one_masks)
    one_log = [json.loads(line) for line in (single.run_dir / "log.jsonl").open()]
    losses = lambda entries: [e["loss"] for e in entries if e["event"] == "train"]  # noqa: E731
    assert losses(log) == pytest.approx(losses(one_log), rel=1e-4)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    for kind in ("id", "ood"):
        for name, block in getattr(single.metrics, kind).items():
            assert metrics[kind][name]["accuracy"] == pytest.approx(block["accuracy"], abs=1e-9)


SCRIPT = """
import sys
from srnet import api
{call}
"""


def test_api_sweep_from_a_script_needs_the_main_guard_and_says_so(tmp_path, tiny_model_dir):
    """Spawned workers import the script that started the sweep: an unguarded ``api.sweep`` call
    stops each worker with one line and the sweep with one line naming the guard (no traceback,
    finished stages kept); the guarded script runs, and resumes the same folder."""
    import subprocess
    import sys

    import yaml

    from conftest import synthetic_split

    data = {"name": "s", "output_dir": str(tmp_path / "out"),
            "base": {"task": "synthetic_nli", "model": {"name": str(tiny_model_dir), "max_length": 48},
                     "data": {"train": synthetic_split("train", 16), "dev": synthetic_split("dev", 8)},
                     "training": {"max_steps": 2, "batch_size": 8}},
            "stages": {"ft": {"kind": "train"}}, "grid": {"seed": [1, 2]}}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(data))
    call = "api.sweep('sweep.yaml', workers=2, resume=True)"
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}

    def run(body: str) -> subprocess.CompletedProcess:
        (tmp_path / "script.py").write_text(SCRIPT.format(call=body))
        return subprocess.run([sys.executable, "script.py"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)

    unguarded = run(call)
    assert unguarded.returncode != 0
    assert 'put the call under `if __name__ == "__main__":`' in unguarded.stderr
    assert "SrnetError: a sweep worker process ended abruptly" in unguarded.stderr
    assert "BrokenProcessPool" not in unguarded.stderr.split("SrnetError")[-1]
    guarded = run(f"if __name__ == '__main__':\n    result = {call}\n    sys.exit(0 if result.ok else 1)")
    assert guarded.returncode == 0, guarded.stderr[-2000:]
    assert len(list((tmp_path / "out").rglob("metrics.json"))) == 2
