"""One safe-write rule for every command that writes: an existing target that srnet
did not create is refused without ``--overwrite``, in one line, and left byte for byte.

The matrix lists every command whose parser has an output flag (``--out``, ``--output``); a new
writing command that is not in it fails :func:`test_every_writing_command_is_in_the_matrix`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conftest import tiny_recipe
from srnet import api
from srnet.cli import build_parser, main

OUTPUT_FLAGS = ("--out", "--output")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_model_dir) -> dict[str, Path]:
    """A finished one-shot OMP run, a finished mask_train run (it saves scores) and its recipe."""
    root = tmp_path_factory.mktemp("safe_writes")
    omp = api.run(tiny_recipe(root, tiny_model_dir, "omp", pruning={"method": "omp", "sparsity": 0.5,
                                                                     "granularity": "head+neuron"}))
    learned = api.run(tiny_recipe(root, tiny_model_dir, "learned",
                                  pruning={"method": "mask_train", "sparsity": 0.5}))
    recipe = root / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(tiny_recipe(root / "bias_runs", tiny_model_dir, "r")))
    return {"omp": omp.run_dir, "learned": learned.run_dir, "recipe": recipe, "model": Path(tiny_model_dir)}


def foreign_file(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("mine\n")
    return path


def foreign_folder(path: Path, inner: str = "notes.txt") -> Path:
    foreign_file(path / inner)
    return path


CASES = {  # command -> (argv given the runs and tmp_path, the foreign target made first)
    "predict": (lambda r, t: ["predict", str(r["omp"]), "--split", "dev", "--output", str(t / "p.jsonl")],
                lambda t: foreign_file(t / "p.jsonl")),
    "report": (lambda r, t: ["report", str(r["omp"]), "--out", str(t / "rep"), "--no-figures"],
               lambda t: foreign_file(t / "rep" / "report.md")),
    "attack": (lambda r, t: ["attack", str(r["omp"]), "--attack", "charswap", "--n", "2",
                             "--out", str(t / "a")],
               lambda t: foreign_file(t / "a" / "charswap.json")),
    "export": (lambda r, t: ["export", "--masks", str(r["omp"] / "masks.safetensors"), "--out", str(t / "e")],
               lambda t: foreign_folder(t / "e")),
    "bench": (lambda r, t: ["bench", str(r["model"]), "--batch-sizes", "1", "--lengths", "8", "--rounds", "1",
                            "--out", str(t / "b.json")],
              lambda t: foreign_file(t / "b.json")),
    "bias fit": (lambda r, t: ["bias", "fit", str(r["recipe"]), "--out", str(t / "bias")],
                 lambda t: foreign_file(t / "bias" / "train.jsonl")),  # a folder of other files is used
    "bias difficulty": (lambda r, t: ["bias", "difficulty", str(r["recipe"]), "--predictions", str(r["omp"]),
                                      str(r["learned"]), "--out", str(t / "d.jsonl")],
                        lambda t: foreign_file(t / "d.jsonl")),
    "masks draw": (lambda r, t: ["masks", "draw", str(r["learned"]), "--sparsity", "0.5", "--out",
                                 str(t / "m.safetensors")],
                   lambda t: foreign_file(t / "m.safetensors")),
    "masks random-like": (lambda r, t: ["masks", "random-like", str(r["omp"] / "masks.safetensors"), "--out",
                                        str(t / "m.safetensors")],
                          lambda t: foreign_file(t / "m.safetensors")),
    "compress": (lambda r, t: ["compress", str(r["omp"]), "--sparsity", "0.5", "--out", str(t / "c")],
                 lambda t: foreign_folder(t / "c")),
}


def writing_commands() -> set[str]:
    """Every command and sub-command whose parser has an output flag."""
    found = set()
    top = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, parser in top.choices.items():
        nested = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
        for sub_name, sub in (nested[0].choices.items() if nested else [(None, parser)]):
            if any(flag in action.option_strings for action in sub._actions for flag in OUTPUT_FLAGS):
                found.add(f"{name} {sub_name}" if sub_name else name)
    return found


def test_every_writing_command_is_in_the_matrix():
    assert writing_commands() == set(CASES)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("command", sorted(CASES))
def test_a_foreign_target_is_refused_without_overwrite_and_kept(command, runs, tmp_path, capsys):
    argv, make = CASES[command]
    target_root = tmp_path / "targets"
    make(target_root)
    before = snapshot(target_root)
    capsys.readouterr()
    assert main(argv(runs, target_root)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "--overwrite" in err or "already exists" in err or "not empty" in err, err
    assert snapshot(target_root) == before  # nothing replaced, nothing added
