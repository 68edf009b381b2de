"""Security: nothing srnet reads runs code from a file (a crafted pickle in a bias
file or a resume checkpoint), and a YAML alias bomb fails fast in one short line; YAML
nested a thousand deep (or a chain of aliases that expands so) is one line wherever srnet reads
YAML, and `srnet report` skips such a run."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch

from conftest import tiny_recipe, write_run
from srnet import api
from srnet.bias import load_bias_log_probs
from srnet.cli import main
from srnet.errors import SrnetError
from srnet.io import MAX_YAML_DEPTH, MAX_YAML_NODES, MAX_YAML_SIZE, load_yaml, read_yaml
from srnet.reporting.study import write_report

DEEP = "[" * 1000 + "]" * 1000
"""1 KB of YAML nested a thousand deep: PyYAML's composer recursed once per level (RecursionError)."""


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
    with pytest.raises(SrnetError, match=r"trainer.pt: unreadable resume checkpoint .*overwrite=True"):
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


def test_yaml_nested_too_deep_is_one_line_before_it_is_built(tmp_path):
    chain = ["a0: &a0 " + "[" * 40 + "]" * 40]  # each alias 40 deeper than the last: 200 once expanded
    chain += [f"a{i}: &a{i} " + "[" * 40 + f"*a{i - 1}" + "]" * 40 for i in range(1, 5)]
    for text in (f"x: {DEEP}", "\n".join(chain)):
        with pytest.raises(SrnetError, match=f"^deep.yaml: YAML nested more than {MAX_YAML_DEPTH} levels"):
            load_yaml(text, "deep.yaml")
    depth = MAX_YAML_DEPTH - 1  # the mapping is the first level
    assert isinstance(load_yaml("x: " + "[" * depth + "]" * depth, "ok.yaml")["x"], list)
    huge = tmp_path / "huge.yaml"
    huge.write_text("x: 1\n" + "#" * MAX_YAML_SIZE)
    with pytest.raises(SrnetError, match=r"huge.yaml: 1,000,005 bytes of YAML; refused"):
        read_yaml(huge)


def test_deep_yaml_is_one_line_in_recipes_sweeps_overrides_and_resume(capsys, tmp_path, tiny_model_dir):
    deep = tmp_path / "deep.yaml"
    deep.write_text(f"task: nli\nx: {DEEP}\n")
    recipe = tmp_path / "r.yaml"
    recipe.write_text("task: nli\n")
    for argv in (["run", str(deep)], ["sweep", str(deep)], ["run", str(recipe), "--set", f"tags.x={DEEP}"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "YAML nested more than" in err, (argv, err[-300:])
    started = tiny_recipe(tmp_path / "runs", tiny_model_dir, "r")
    (tmp_path / "runs" / "r").mkdir(parents=True)
    (tmp_path / "runs" / "r" / "config.yaml").write_text(deep.read_text())
    with pytest.raises(SrnetError, match=r"runs/r/config.yaml: YAML nested more than"):
        api.run(started, resume=True)


def test_a_report_skips_a_run_whose_config_nests_too_deep(tmp_path):
    write_run(tmp_path, "good", seed=1, dev=0.5)
    bad = write_run(tmp_path, "bad", seed=2, dev=0.6)
    (bad / "config.yaml").write_text(f"task: nli\nx: {DEEP}\n")
    text = write_report([tmp_path], tmp_path / "rep", figures=False).path.read_text()
    assert "1 complete runs" in text
    assert "1 run(s) skipped, unreadable: " in text and "bad/config.yaml: YAML nested more than" in text


def test_reading_a_run_folder_imports_none_of_its_plugins(capsys, tmp_path, tiny_model_dir, monkeypatch):
    """A ``plugins:`` entry added to a finished run's config.yaml is never imported by
    predict, attack, report or --resume: each names the plug-in (or the edit) in one line."""
    monkeypatch.chdir(tmp_path)
    recipe = tiny_recipe(tmp_path / "runs", tiny_model_dir, "victim",
                         training={"max_steps": 2, "eval_every": None, "mixed_precision": "no"})
    run = api.run(recipe).run_dir
    (tmp_path / "scratch").mkdir()
    (tmp_path / "scratch" / "evil.py").write_text('open("scratch/PWNED", "w")\n')
    with (run / "config.yaml").open("a") as config:
        config.write("plugins: [scratch/evil.py]\n")
    missing = r"the run was made with plug-in 'scratch/evil.py', which is not loaded; pass it with " \
              r"--plugins scratch/evil.py"
    with pytest.raises(SrnetError, match=missing):
        api.predict(run, split="dev")
    with pytest.raises(SrnetError, match=missing):
        api.attack(str(run), attack="charswap", n=2)
    capsys.readouterr()
    assert main(["predict", str(run), "--split", "dev"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--plugins scratch/evil.py" in err
    api.report([run], out=tmp_path / "report", figures=False)  # reads the run; imports nothing of it
    (run / "metrics.json").unlink()  # unfinished again: --resume compares the recorded recipe
    with pytest.raises(SrnetError, match=r"config.yaml: --resume with other plug-ins than this run started "
                                         r"with \(plugins \['scratch/evil.py'\] there, \[\] now\)"):
        api.run(recipe, resume=True)
    assert not (tmp_path / "scratch" / "PWNED").exists()
