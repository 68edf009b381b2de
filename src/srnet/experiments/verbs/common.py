"""What the verbs' declarations share: the flags of commands that run recipes or read runs, the
recipe built from data flags, and the run summary."""

from __future__ import annotations

import argparse
from typing import Any


def run_flags(p: argparse.ArgumentParser) -> None:
    """--set, --resume and --overwrite of a command that runs a recipe."""
    overrides_flag(p, "override a recipe key, e.g. --set training.lr=3e-5 (repeatable)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run")
    p.add_argument("--overwrite", action="store_true", help="replace an existing run directory")


def overrides_flag(p: argparse.ArgumentParser, help: str | None = None) -> None:
    """--set KEY=VALUE (repeatable), read as ``args.overrides``."""
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help=help)


def plugins_flag(p: argparse.ArgumentParser) -> None:
    """--plugins of a command that reads finished runs (their recorded plug-ins are never imported)."""
    p.add_argument("--plugins", action="append", default=[], metavar="MODULE",
                   help="plug-in to import first: a module name or a .py path (repeatable); the "
                   "plug-ins a run folder records must be given so, never imported from the folder")


def data_flags(p: argparse.ArgumentParser, *, model: bool = True, train: bool = True,
               run: bool = True) -> None:
    """The flags that build a recipe's task, model and data without a file (``model``: also the
    backbone; ``run``: also the run's name and folder)."""
    p.add_argument("--task", help="task name: {tasks}")
    if model:
        p.add_argument("--model", help="'default', a hub id or a local path")
    if train:
        p.add_argument("--train", help="training data file")
    p.add_argument("--dev", help="ID dev data file")
    p.add_argument("--challenge", action="append", help="challenge data file (repeatable)")
    if run:
        p.add_argument("--name", help="run name (run directory is OUTPUT_DIR/NAME)")
        p.add_argument("--output-dir", help="folder of run directories (default runs)")


def with_flags(
    base: dict[str, Any],
    *,
    task: str | None = None,
    model: str | None = None,
    train: str | None = None,
    dev: str | None = None,
    challenge: list[str] | None = None,
    name: str | None = None,
    output_dir: str | None = None,
) -> dict[str, Any]:
    """``base`` (a recipe dict) with the common command-line flags applied.

    A data flag replaces that split's whole spec (a file path in the task's default format);
    ``challenge`` files use the task's first challenge label space.
    """
    from srnet.tasks import get_task

    out = {**base}
    for key, value in (("task", task), ("name", name), ("output_dir", output_dir)):
        if value:
            out[key] = value
    if model:
        out["model"] = {**out.get("model", {}), "name": model, "init_from": None}
    data = dict(out.get("data") or {})
    if train:
        data["train"] = {"path": train}
    if dev:
        data["dev"] = {"path": dev}
    if challenge:
        default = next(iter(get_task(out.get("task", "nli")).challenge_sets), None)
        data["challenge"] = [{"path": p, "challenge": default} for p in challenge]
    out["data"] = data
    return out


def flag_recipe(args: argparse.Namespace) -> dict[str, Any]:
    """The recipe (as a dict) of the command's optional recipe file and its data flags."""
    from srnet.config import as_recipe

    recipe = getattr(args, "recipe", None)
    base = as_recipe(recipe).model_dump(mode="json") if recipe else {}
    return with_flags(
        base, task=args.task, model=getattr(args, "model", None), train=getattr(args, "train", None),
        dev=args.dev, challenge=args.challenge, name=getattr(args, "name", None),
        output_dir=getattr(args, "output_dir", None),
    )


def print_summary(result) -> None:
    """A finished run's metrics as a table (a text run: its pre-training losses), and its folder."""
    from srnet.reporting.render import collapse_warnings, summary_table

    metrics = result.metrics
    if metrics.is_text_run:  # a text (TAMT) run: dev-block losses, no splits
        losses = ", ".join(f"{k} {v:.4f}" for k, v in (metrics.pretraining or {}).items())
        sparsity = metrics.sparsity.overall if metrics.sparsity else None
        print(f"{metrics.method} + {metrics.objective}: {losses}"
              + (f" at sparsity {sparsity:.3f}" if sparsity is not None else ""))
    else:
        print(summary_table(metrics))
    print(f"\nrun directory: {result.run_dir}")
    for warning in collapse_warnings(metrics):
        print(warning)
