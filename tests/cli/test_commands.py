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

from conftest import REPO, entry_point_site, srnet
from conftest import synthetic_split as synthetic
from srnet import api
from srnet.cli import build_parser
from srnet.cli.commands import COMMANDS, api_function, register_command
from srnet.errors import SrnetError


def leaf_words(parser: argparse.ArgumentParser, prefix: str = "") -> set[str]:
    """The words of every command that runs something ("bench", "bias fit")."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {prefix}
    return {words for name, child in subs[0].choices.items()
            for words in leaf_words(child, f"{prefix} {name}".strip())}


def test_every_command_has_its_api_function_and_every_api_verb_a_command():
    verbs = {words for command in COMMANDS.values() for words in command.api}
    assert verbs == leaf_words(build_parser())
    for words in verbs:
        function = api_function(words)
        assert function is getattr(api, function.__name__), words
    named = {function.__name__ for function in map(api_function, verbs)}
    public = {name for name, f in inspect.getmembers(api, inspect.isfunction)
              if f.__module__ == "srnet.api" and not name.startswith("_")} - set(api.DEPRECATED_NAMES)
    # what the API offers beyond the commands: building blocks, not verbs
    assert public - named == {"with_flags", "prune_", "metrics", "load_model"}


def test_an_unknown_command_or_a_second_registration_is_one_line():
    with pytest.raises(SrnetError, match=r"unknown command 'nope'; known: .*'bench'"):
        api_function("nope")
    with COMMANDS.scoped(), pytest.raises(ValueError, match="command 'bench' is already registered"):
        register_command("bench", api="bench")(lambda sub: None)


def test_a_command_added_from_outside_is_in_the_help_the_api_and_a_sweep(tmp_path, tiny_model_dir):
    path = [entry_point_site(tmp_path, "toy_verb"), REPO / "tests"]
    shown = srnet("--help", cwd=tmp_path, pythonpath=path)
    assert shown.returncode == 0 and "write a word to a file (a plug-in command)" in shown.stdout

    done = srnet("toy", "--out", str(tmp_path / "w.txt"), "--word", "hello", cwd=tmp_path, pythonpath=path)
    assert done.returncode == 0, done.stderr[-1500:]
    assert (tmp_path / "w.txt").read_text() == "hello"

    target = str(tmp_path / "a.txt")
    probe = ("from srnet.cli import build_parser; from srnet.cli.commands import api_function; "
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
