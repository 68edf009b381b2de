"""Issue 30's security items: nothing srnet reads runs code from a file (a crafted pickle in a bias
file or a resume checkpoint), and a YAML alias bomb fails fast in one short line."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch

from conftest import tiny_recipe
from srnet import api
from srnet.bias import load_bias_log_probs
from srnet.errors import SrnetError
from srnet.io import MAX_YAML_NODES, load_yaml


class Exploit:
    """Unpickling this runs ``touch <marker>``."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_bias_pickle_that_would_run_code_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "bias.pkl"
    path.write_bytes(pickle.dumps({"a": Exploit(str(marker))}))
    with pytest.raises(SrnetError, match=r"bias.pkl: not a readable pickle of predictions \(it names "
                                         r"(posix|os)\.system"):
        load_bias_log_probs(path, ["a"], 2)
    assert not marker.exists()


def test_a_plain_bias_pickle_still_reads(tmp_path):
    path = tmp_path / "bias.pkl"
    path.write_bytes(pickle.dumps({"a": np.array([0.25, 0.75]), "b": [0.5, 0.5]}))
    log_probs = load_bias_log_probs(path, ["a", "b"], 2)
    assert np.allclose(np.exp(log_probs), [[0.25, 0.75], [0.5, 0.5]])


def test_a_crafted_resume_checkpoint_runs_no_code(tmp_path, tiny_model_dir):
    recipe = tiny_recipe(tmp_path, tiny_model_dir, "victim", training={"mixed_precision": "no"})
    api.run(recipe)
    last = tmp_path / "victim" / "checkpoints" / "last"
    last.mkdir(parents=True, exist_ok=True)
    (tmp_path / "victim" / "metrics.json").unlink()  # unfinished again: --resume reads the checkpoint
    marker = tmp_path / "pwned"
    torch.save({"state": Exploit(str(marker))}, last / "trainer.pt")
    with pytest.raises(SrnetError, match=r"trainer.pt: unreadable resume checkpoint .*--overwrite"):
        api.run(recipe, resume=True)
    assert not marker.exists()


def test_a_yaml_alias_bomb_fails_fast_in_one_short_line(tmp_path):
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    bomb = "\n".join(lines) + "\n"
    assert len(bomb) < 600
    with pytest.raises(SrnetError, match=f"more than {MAX_YAML_NODES:,} values"):
        load_yaml(bomb, "bomb.yaml")
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb + "task: nli\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "srnet.cli", "run", str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and len(done.stderr) < 700
    assert "bomb.yaml: YAML expands to more than" in done.stderr
