"""The ``srnet`` parser's formatting: help texts that name registry entries, filled in when shown."""

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
