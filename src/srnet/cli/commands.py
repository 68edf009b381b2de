"""The registry of ``srnet`` commands: one entry per command (or command group), registered by the
module that builds its parser, so adding a command is that module plus its :mod:`srnet.api` line.

A command from outside the package registers the same way from a plug-in module (an ``srnet.plugins``
entry point is loaded before the parser is built), and its sweep stage with ``register_stage``::

    @register_command("toy", api="my_package.verbs:toy")
    def add_toy(sub):
        p = sub.add_parser("toy", help="...")
        p.set_defaults(func=lambda args: print(toy()) or 0)

This module imports no torch: the parser is built before any model code loads.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass

from srnet.errors import SrnetError
from srnet.registry import Registry

Adder = Callable[[argparse._SubParsersAction], None]


@dataclass(frozen=True)
class Command:
    """A sub-command: ``add`` builds its parser (and, for a group, its actions' parsers) under the
    ``srnet`` parser; ``api`` names the Python function of each verb, ``"module:function"`` or a
    bare name of :mod:`srnet.api`, keyed by the verb's words ("bias fit")."""

    name: str
    add: Adder
    api: dict[str, str]


COMMANDS: Registry[Command] = Registry("command")
"""Every sub-command, in the order of ``srnet --help`` (registration order)."""


def register_command(name: str, api: str | dict[str, str] | None = None) -> Callable[[Adder], Adder]:
    """Decorator of a command's ``add_<name>(sub)``: register it as ``name`` with its API function(s)
    (``api``: one function's name for a single verb, or verb words -> name for a group)."""

    def add(adder: Adder) -> Adder:
        functions = {name: api} if isinstance(api, str) else dict(api or {})
        COMMANDS.add(name, Command(name, adder, functions))
        return adder

    return add


def api_function(verb: str) -> Callable:
    """The Python function behind the command words ``verb`` ("bench", "bias fit"): a built-in's
    :mod:`srnet.api` function or a plug-in command's own; one line naming the known verbs otherwise."""
    functions = {words: target for command in COMMANDS.values() for words, target in command.api.items()}
    if verb not in functions:
        raise SrnetError(f"unknown command '{verb}'; known: {sorted(functions)}")
    module, _, attribute = functions[verb].rpartition(":")
    return getattr(importlib.import_module(module or "srnet.api"), attribute)
