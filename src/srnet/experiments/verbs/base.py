"""What a verb declares, and the registry of every verb: the CLI builds its parsers from it, the
API is checked against it, and the plug-in docs list it.

A verb is one module of :mod:`srnet.experiments.verbs` (or of a plug-in) that registers its
:class:`Verb`: its words, its settings model, its :mod:`srnet.api` function, its own arguments,
the call that prints its result and, where it has one, its sweep stage::

    register_verb(Verb("toy", help="write a word to a file", api="my_package.verbs:toy",
                       arguments=toy_arguments, call=lambda args, toy: print(toy(args.out)))))

A declaration imports no torch (the parser is built before any model code loads): its heavy body
lives in a module of its own, reached through its API function.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from srnet.registry import Registry
from srnet.settings import VerbConfig

Arguments = Callable[[argparse.ArgumentParser], None]
Call = Callable[[argparse.Namespace, Callable[..., Any]], "int | None"]


@dataclass(frozen=True)
class Verb:
    """A command: ``words`` as typed after ``srnet`` ("bench", "bias fit"); ``api`` its Python
    function, a name in :mod:`srnet.api` or ``"module:function"``; ``arguments`` adds its own
    arguments (paths, ``--overwrite``), ``config`` its settings' flags after them; ``call`` runs it
    with the parsed arguments and the API function, prints the result and returns the exit status
    (None: 0); ``stage`` names its sweep stage kind."""

    words: str
    help: str
    api: str
    call: Call
    arguments: Arguments | None = None
    config: type[VerbConfig] | None = None
    stage: str | None = None

    @property
    def group(self) -> str | None:
        """The command group of a two-word verb ("bias" of "bias fit")."""
        return self.words.split()[0] if " " in self.words else None


VERBS: Registry[Verb] = Registry("command")
"""Every verb by its words, in the order of ``srnet --help`` (registration order)."""

GROUPS: Registry[str] = Registry("command group")
"""The help line of each command group ("bias", "masks")."""


def register_verb(verb: Verb) -> Verb:
    """Add ``verb`` (ValueError when its words are taken); a group's verbs need its help first
    (:func:`register_group`)."""
    if verb.group is not None:
        GROUPS.get(verb.group)  # one line naming the known groups
    return VERBS.add(verb.words, verb)


def register_group(name: str, help: str) -> None:
    """Add the command group ``name`` (``srnet name ACTION``) with its help line."""
    GROUPS.add(name, help)
