"""The ``srnet`` command. Thin: it builds a parser per registered verb
(:data:`srnet.experiments.verbs.base.VERBS`, the built-ins' declarations and a plug-in's, from an
``srnet.plugins`` entry point), and hands each verb's call its :mod:`srnet.api` function."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

from srnet.cli.parser import Parser
from srnet.console import end_progress_bars, quiet_libraries
from srnet.errors import NeedsOption, SrnetError
from srnet.experiments.verbs.base import GROUPS, VERBS, Verb
from srnet.experiments.verbs.flags import add_config_flags


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (2 for bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    quiet_libraries()
    if not getattr(args, "func", None):
        parser.print_help()
        return 1
    try:
        check_input_files(args)
        return args.func(args)
    except SrnetError as exc:
        from srnet.io import short

        end_progress_bars()
        message = exc.with_flags() if isinstance(exc, NeedsOption) else str(exc)
        print(f"error: {short(message)}", file=sys.stderr)
        return 2
    except OSError as exc:  # a write the library did not wrap: read-only folder, full disk...
        from srnet.io import describe_os_error

        end_progress_bars()
        print(f"error: {describe_os_error(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        end_progress_bars()
        print("interrupted: rerun the same command with --resume to continue", file=sys.stderr)
        return 130


def check_input_files(args) -> None:
    """A recipe or sweep file that is not there is named in one line before anything heavy (torch,
    transformers) is imported."""
    for attr, what in (("recipe", "recipe file"), ("sweep", "sweep file")):
        value = getattr(args, attr, None)
        if isinstance(value, str):
            path = Path(value)
            if path.is_dir():
                raise SrnetError(f"{path}: is a folder, not a {what} (give the YAML file inside it)")
            if not path.is_file():
                raise SrnetError(f"{path}: {what} not found")


def build_parser() -> argparse.ArgumentParser:
    """The ``srnet`` parser: every registered sub-command, the installed plug-ins' too."""
    from srnet.plugins import load_entry_points

    load_entry_points()
    parser = Parser(
        prog="srnet",
        description="Find sparse and robust subnetworks inside pre-trained transformer encoders.",
        epilog="Recipes: docs/recipes.md; the metrics.json schema: docs/run-directory.md; "
        "examples: README.md.",
    )
    sub = parser.add_subparsers(metavar="COMMAND")
    groups: dict[str, argparse._SubParsersAction] = {}
    for verb in VERBS.values():
        parent, name = sub, verb.words
        if verb.group is not None:
            if verb.group not in groups:
                group = sub.add_parser(verb.group, help=GROUPS.get(verb.group))
                group.set_defaults(func=lambda args, shown=group: shown.print_help() or 1)  # no ACTION
                groups[verb.group] = group.add_subparsers(metavar="ACTION")
            parent, name = groups[verb.group], verb.words.split(maxsplit=1)[1]
        p = parent.add_parser(name, help=verb.help)
        if verb.arguments is not None:
            verb.arguments(p)
        if verb.config is not None:
            add_config_flags(p, verb.config)
        p.set_defaults(func=partial(call, verb))
    return parser


def call(verb: Verb, args: argparse.Namespace) -> int:
    """Run ``verb`` with the parsed ``args`` and its API function; its exit status."""
    return verb.call(args, api_function(verb.words)) or 0


def api_function(words: str) -> Callable:
    """The Python function behind the command ``words`` ("bench", "bias fit"): a built-in's
    :mod:`srnet.api` function or a plug-in verb's own; one line naming the known verbs otherwise."""
    module, _, attribute = VERBS.get(words).api.rpartition(":")
    return getattr(importlib.import_module(module or "srnet.api"), attribute)

