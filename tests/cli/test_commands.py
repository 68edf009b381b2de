"""The command registry: every built-in command has its API function, and a command added from
outside (``tests/toy_verb.py`` as an installed ``srnet.plugins`` entry point) is in ``srnet --help``,
runs, is reachable from Python and runs as a sweep stage."""

from __future__ import annotations

import argparse
import inspect
import os
import subprocess
import sys

import pytest
import yaml

import srnet.experiments.compress.stage
from conftest import REPO, entry_point_site, srnet
from conftest import synthetic_split as synthetic
from srnet import api
from srnet.cli import api_function, build_parser
from srnet.errors import SrnetError
from srnet.experiments.sweep.stages import STAGES
from srnet.experiments.verbs.base import GROUPS, VERBS, Verb, register_verb


def leaf_words(parser: argparse.ArgumentParser, prefix: str = "") -> set[str]:
    """The words of every command that runs something ("bench", "bias fit")."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {prefix}
    return {words for name, child in subs[0].choices.items()
            for words in leaf_words(child, f"{prefix} {name}".strip())}


def test_every_command_has_its_api_function_and_every_api_verb_a_command():
    verbs = set(VERBS)
    assert verbs == leaf_words(build_parser())
    for words in verbs:
        function = api_function(words)
        assert function is getattr(api, function.__name__), words
    named = {function.__name__ for function in map(api_function, verbs)}
    public = {name for name, f in inspect.getmembers(api, inspect.isfunction)
              if f.__module__ == "srnet.api" and not name.startswith("_")} - set(api.DEPRECATED_NAMES)
    # what the API offers beyond the commands: building blocks, not verbs
    assert public - named == {"prune_", "metrics", "load_model"}


def test_every_declared_stage_is_a_registered_stage_kind():
    declared = {verb.words: verb.stage for verb in VERBS.values() if verb.stage}
    assert set(declared) >= {"run", "evaluate", "predict", "attack", "compress", "export", "bench",
                             "bias fit", "bias difficulty", "masks draw", "masks random-like"}
    assert {words: stage for words, stage in declared.items() if stage not in STAGES} == {}


def test_each_declaration_imports_no_torch_and_reaches_the_library_only_through_its_api_function():
    """A declaration builds its parser before any model code loads, and its call gets the API
    function handed in: nothing but printing helpers and recipe parsing is imported from srnet."""
    import ast
    import importlib

    from srnet.experiments.verbs import BUILT_IN

    allowed = {"srnet.reporting.render", "srnet.config"}
    for name in BUILT_IN:
        module = importlib.import_module(f"srnet.experiments.verbs.{name}")
        tree = ast.parse(inspect.getsource(module))
        heavy = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                 and node.col_offset > 0 and node.module not in allowed}
        assert not heavy, f"{name} imports {sorted(heavy)} inside a function"
    probe = "import sys, srnet.cli; srnet.cli.build_parser(); print('torch' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    ran = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "False"


def test_an_unknown_command_or_a_second_registration_is_one_line():
    with pytest.raises(SrnetError, match=r"unknown command 'nope'; known: .*'bench'"):
        api_function("nope")
    with VERBS.scoped(), pytest.raises(ValueError, match="command 'bench' is already registered"):
        register_verb(Verb("bench", help="", api="bench", call=lambda args, f: 0))
    unknown = r"unknown command group 'nope'; known: \['bias', 'masks'\]"
    with VERBS.scoped(), pytest.raises(SrnetError, match=unknown):
        register_verb(Verb("nope fit", help="", api="bench", call=lambda args, f: 0))
    assert list(GROUPS) == ["bias", "masks"]


def test_a_command_added_from_outside_is_in_the_help_the_api_and_a_sweep(tmp_path, tiny_model_dir):
    path = [entry_point_site(tmp_path, "toy_verb"), REPO / "tests"]
    shown = srnet("--help", cwd=tmp_path, pythonpath=path)
    assert shown.returncode == 0 and "write a word to a file (a plug-in command)" in shown.stdout

    done = srnet("toy", "--out", str(tmp_path / "w.txt"), "--word", "hello", cwd=tmp_path, pythonpath=path)
    assert done.returncode == 0, done.stderr[-1500:]
    assert (tmp_path / "w.txt").read_text() == "hello"

    target = str(tmp_path / "a.txt")
    probe = ("from srnet.cli import api_function, build_parser; "
             f"build_parser(); f = api_function('toy'); print(f.__module__, f({target!r}, 'api'))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, [REPO / "src", *path]))}
    ran = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr[-1500:]
    assert ran.stdout.split()[0] == "toy_verb" and (tmp_path / "a.txt").read_text() == "api"

    sweep = {"name": "t", "output_dir": str(tmp_path / "out"),
             "base": {"task": "synthetic_nli", "model": {"name": str(tiny_model_dir), "max_length": 48},
                      "data": {"train": synthetic("train", 8), "dev": synthetic("dev", 8)}},
             "stages": {"hello": {"kind": "toy", "with": {"word": "from a sweep"}}}}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    done = srnet("sweep", str(tmp_path / "sweep.yaml"), cwd=tmp_path, pythonpath=path)
    assert done.returncode == 0, done.stderr[-1500:]
    [written] = (tmp_path / "out" / "hello").glob("*/toy.txt")
    assert written.read_text() == "from a sweep"


def test_a_group_without_its_action_shows_its_actions(capsys):
    from srnet.cli import main

    assert main(["masks"]) == 1
    shown = capsys.readouterr().out
    assert shown.startswith("usage: srnet masks") and "random-like" in shown
