"""What the sub-commands share: help texts that name registry entries, the recipe flags and the
run summary."""

from __future__ import annotations

import argparse


def _attack_names() -> str:
    from srnet.evaluation.attacks import available_attacks

    return ", ".join(available_attacks())


def _task_names() -> str:
    from srnet.tasks.registry import TASKS

    return TASKS.listing()


def _feature_names() -> str:
    from srnet.bias.features import FEATURES

    return FEATURES.listing()


REGISTRY_NAMES = {"{attacks}": _attack_names, "{tasks}": _task_names, "{features}": _feature_names}
"""Placeholders of help texts -> the registry names they stand for (filled in when help is shown)."""

class HelpFormatter(argparse.HelpFormatter):
    """Fills the names of a registry into a help text (``{attacks}``, ``{tasks}``) only when that
    help is shown, so building the parser imports no plug-in module (the attacks import torch)."""

    def _expand_help(self, action: argparse.Action) -> str:
        text = super()._expand_help(action)
        for placeholder, names in REGISTRY_NAMES.items():
            if placeholder in text:
                text = text.replace(placeholder, names())
        return text


class Parser(argparse.ArgumentParser):
    """An argument parser (and its sub-command parsers) with :class:`HelpFormatter`."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def run_flags(p: argparse.ArgumentParser) -> None:
    """--set, --resume and --overwrite of a command that runs a recipe."""
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a recipe key, e.g. --set training.lr=3e-5 (repeatable)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run")
    p.add_argument("--overwrite", action="store_true", help="replace an existing run directory")


def plugins_flag(p: argparse.ArgumentParser) -> None:
    """--plugins of a command that reads finished runs (their recorded plug-ins are never imported)."""
    p.add_argument("--plugins", action="append", default=[], metavar="MODULE",
                   help="plug-in to import first: a module name or a .py path (repeatable); the "
                   "plug-ins a run folder records must be given so, never imported from the folder")


def data_flags(p: argparse.ArgumentParser, train: bool = True) -> None:
    """The flags that build a recipe's task, model and data without a file."""
    p.add_argument("--task", help="task name: {tasks}")
    if train:
        p.add_argument("--model", help="'default', a hub id or a local path")
        p.add_argument("--train", help="training data file")
    p.add_argument("--dev", help="ID dev data file")
    p.add_argument("--challenge", action="append", help="challenge data file (repeatable)")
    p.add_argument("--name", help="run name (run directory is OUTPUT_DIR/NAME)")
    p.add_argument("--output-dir", help="folder of run directories (default runs)")


def flag_recipe(args) -> dict:
    """The recipe (as a dict) of the command's optional recipe file and its data flags."""
    from srnet.api import as_recipe, with_flags

    recipe = getattr(args, "recipe", None)
    base = as_recipe(recipe).model_dump(mode="json") if recipe else {}
    return with_flags(
        base, task=args.task, model=getattr(args, "model", None), train=getattr(args, "train", None),
        dev=args.dev, challenge=args.challenge, name=args.name, output_dir=args.output_dir,
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

