"""Plug-ins work in every process: a recipe's ``plugins:`` (a module name or a ``.py`` path) and
the ``srnet.plugins`` entry-point group reach ``srnet run``, the spawned workers of
``srnet sweep --workers 2`` and ``SrnetTrainer``, which never import the plug-in otherwise; a
finished run's recorded plug-ins are given with ``--plugins``, never imported from its folder; a
plug-in that cannot be imported (or exits) is one line, exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import entry_point_site, srnet
from conftest import synthetic_split as synthetic
from srnet.cli import main
from srnet.config import load_recipe, recipe_from_dict
from srnet.plugins import FILE_MODULE_PREFIX, load_plugins, missing_plugins

REPO = Path(__file__).resolve().parents[2]
TOY = REPO / "tests" / "toy_method.py"
TOY_INPUT = REPO / "tests" / "toy_input.py"


def toy_recipe(model, **extra) -> dict:
    return {"task": "synthetic_nli", "model": {"name": str(model), "max_length": 48},
            "data": {"train": synthetic("train", 24), "dev": synthetic("dev", 16)},
            "training": {"max_steps": 2, "batch_size": 8},
            "pruning": {"method": "toy", "sparsity": 0.5, "params": {"keep": "largest"}}, **extra}


def test_a_recipe_plugin_path_reaches_srnet_run(tmp_path, tiny_model_dir):
    recipe = tmp_path / "toy.yaml"
    recipe.write_text(yaml.safe_dump({**toy_recipe(tiny_model_dir, plugins=[str(TOY)]), "name": "toy",
                                      "output_dir": str(tmp_path / "runs")}))
    done = srnet("run", str(recipe), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-1500:]
    metrics = json.loads((tmp_path / "runs" / "toy" / "metrics.json").read_text())
    assert metrics["sparsity"]["overall"] == 0.5
    refused = srnet("predict", "runs/toy", "--split", "dev", cwd=tmp_path)  # the run's plug-in: not imported
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"made with plug-in '{TOY}', which is not loaded; pass it with --plugins {TOY}" in refused.stderr
    given = srnet("predict", "runs/toy", "--split", "dev", "--plugins", str(TOY), cwd=tmp_path)
    assert given.returncode == 0 and (tmp_path / "runs" / "toy" / "predictions" / "dev.jsonl").is_file()


def test_a_recipe_plugin_module_reaches_spawned_sweep_workers(tmp_path, tiny_model_dir):
    sweep = {"name": "s", "output_dir": str(tmp_path / "out"),
             "base": toy_recipe(tiny_model_dir, plugins=["toy_method"]),
             "stages": {"prune": {"kind": "train"}}, "grid": {"seed": [1, 2]}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    done = srnet("sweep", str(path), "--workers", "2", cwd=tmp_path, pythonpath=[REPO / "tests"])
    assert done.returncode == 0, done.stderr[-1500:]
    finished = list((tmp_path / "out" / "prune").glob("*/metrics.json"))
    assert len(finished) == 2


def test_an_entry_point_plugin_needs_no_recipe_key(tmp_path, tiny_model_dir):
    """An installed package's ``srnet.plugins`` entry point (here a dist-info folder on the path)."""
    site = entry_point_site(tmp_path, "toy_method")
    recipe = tmp_path / "toy.yaml"
    recipe.write_text(yaml.safe_dump({**toy_recipe(tiny_model_dir), "name": "toy",
                                      "output_dir": str(tmp_path / "runs")}))
    done = srnet("run", str(recipe), cwd=tmp_path, pythonpath=[site, REPO / "tests"])
    assert done.returncode == 0, done.stderr[-1500:]
    assert (tmp_path / "runs" / "toy" / "masks.safetensors").is_file()


def test_a_plugin_that_cannot_be_imported_is_one_line(tmp_path, tiny_model_dir):
    recipe = tmp_path / "bad.yaml"
    recipe.write_text(yaml.safe_dump({**toy_recipe(tiny_model_dir, plugins=["no_such_plugin_module"]),
                                      "output_dir": str(tmp_path / "runs")}))
    done = srnet("run", str(recipe), cwd=tmp_path)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines[-1].count("no_such_plugin_module") == 1 and len(lines) == 1, done.stderr
    assert not (tmp_path / "runs").exists()


def test_plugins_do_not_change_a_fingerprint(tiny_model_dir):
    base = toy_recipe(tiny_model_dir, pruning=None)
    assert recipe_from_dict(base).fingerprint() == recipe_from_dict({**base, "plugins": []}).fingerprint()


def test_same_named_plugin_files_in_two_folders_both_load(tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "same.py").write_text(f"FOLDER = {folder!r}\n")
    load_plugins([str(tmp_path / "a" / "same.py"), str(tmp_path / "b" / "same.py")])
    loaded = {module.FOLDER for name, module in sys.modules.items() if name.startswith(FILE_MODULE_PREFIX)
              and Path(module.__file__).parent.parent == tmp_path}
    assert loaded == {"a", "b"}
    recorded = ["elsewhere/same.py", "no_such_module", "other.py"]  # a run records paths as given
    assert missing_plugins(recorded) == ["no_such_module", "other.py"]


def test_a_single_plugin_given_as_a_string_is_a_one_element_list():
    recipe = load_recipe(None, [f"plugins={TOY_INPUT}", "loss.name=weighted_ce"])
    assert recipe.plugins == [str(TOY_INPUT)] and recipe.loss.name == "weighted_ce"


def test_a_plugin_that_exits_is_one_line(capsys, tmp_path):
    exits = tmp_path / "exits.py"
    exits.write_text("import sys\nsys.exit(3)\n")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(yaml.safe_dump({"plugins": [str(exits)], "output_dir": str(tmp_path / "runs")}))
    assert main(["run", str(recipe)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: plugins: '{exits}' called sys.exit(3) while being imported\n"
    assert not any(name.startswith(f"{FILE_MODULE_PREFIX}exits_") for name in sys.modules)


def test_srnet_trainer_loads_entry_point_plugins(tmp_path, tiny_model_dir):
    """An installed entry point's pruning method is known to ``SrnetTrainer`` without a recipe."""
    site = entry_point_site(tmp_path, "toy_method")
    script = ("import sys\n"
              "from transformers import AutoModelForSequenceClassification, TrainingArguments\n"
              "from srnet.integrations.transformers import SrnetTrainer\n"
              "model = AutoModelForSequenceClassification.from_pretrained(sys.argv[1])\n"
              "args = TrainingArguments(output_dir=sys.argv[2], use_cpu=True, report_to=[])\n"
              "trainer = SrnetTrainer(model=model, args=args, pruning={'method': 'toy', 'sparsity': 0.5})\n"
              "print(type(trainer.method).__name__)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in [REPO / "src", site, REPO / "tests"])}
    done = subprocess.run([sys.executable, "-c", script, str(tiny_model_dir), str(tmp_path / "out")], env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ToyMethod", done.stderr[-1500:]
