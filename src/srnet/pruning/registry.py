"""The registry of pruning methods.

A method is one module: its :class:`~srnet.pruning.base.PruningMethod` subclass, whose
``params_model`` (a :class:`~srnet.pruning.config.MethodParams`) is the ``pruning.params``
section of a recipe that names it, registered with ``@register_method("name")``.  Importing
:mod:`srnet.pruning` imports the built-in method modules, which registers them.

This module imports nothing of the package, so the config and the methods can both use it.
"""

from __future__ import annotations

from typing import Any

from srnet.registry import Registry

METHODS: Registry[Any] = Registry("pruning method")
"""Pruning-method classes by name."""
register_method = METHODS.register
"""Class decorator that registers a :class:`~srnet.pruning.base.PruningMethod` under a unique name."""
available_methods = METHODS.names
get_method = METHODS.get


def build_method(cfg: Any, seed: int = 0) -> Any:
    """Instantiate the method that ``cfg.method`` names (``cfg``: a ``PruningConfig``)."""
    return get_method(cfg.method).from_config(cfg, seed)


def method_help() -> str:
    """The registered methods, each with the first sentence of its class docstring (help texts)."""
    return "; ".join(f"{name} ({_first_sentence(METHODS.get(name).__doc__)})" for name in METHODS.names())


def _first_sentence(doc: str | None) -> str:
    text = " ".join((doc or "").split())
    return text.split(". ")[0].rstrip(".")
