"""The ``srnet`` command. Thin: it parses arguments and calls :mod:`srnet.api`.

Each sub-command is an ``add_<command>`` function (its parser, registered in
:data:`~srnet.cli.commands.COMMANDS` with its API function) beside its ``cmd_<command>`` handler, in
the module of its group: :mod:`.runs`, :mod:`.results`, :mod:`.models`, :mod:`.bias`, :mod:`.masks`;
:mod:`.common` holds what they share. A plug-in (an ``srnet.plugins`` entry point) may register more."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from srnet.cli.commands import COMMANDS
from srnet.cli.common import Parser
from srnet.console import end_progress_bars, quiet_libraries
from srnet.errors import NeedsOption, SrnetError

COMMAND_MODULES = ("runs", "results", "models", "bias", "masks")
"""The built-in commands' modules, in the order of ``srnet --help`` (importing one registers its
commands)."""
for _module in COMMAND_MODULES:
    importlib.import_module(f"srnet.cli.{_module}")


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
        return args.func(args) or 0
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
    for command in COMMANDS.values():
        command.add(sub)
    return parser

