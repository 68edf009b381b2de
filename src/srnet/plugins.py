"""Plug-ins outside the package, loaded in every process that reads a recipe.

A plug-in is a module that registers something when imported (a pruning method with
``@register_method``, a loss, a task, an attack, ...): ``tests/toy_method.py`` is one.  Two ways to
load one, both honoured by ``srnet run``, ``srnet sweep`` and every sweep worker (each worker
validates its stage's recipe, which loads them first):

* the recipe's ``plugins:`` list: module names (importable on ``sys.path``) or paths to ``.py``
  files (relative to the working directory);
* the ``srnet.plugins`` entry-point group of installed packages (``[project.entry-points.
  "srnet.plugins"] mine = "my_package.my_method"``), loaded once per process (``SrnetTrainer``
  loads them too).

Commands that read a finished run (``srnet predict``, ``attack``, ``report``) take ``--plugins``;
the ``plugins:`` a run folder's ``config.yaml`` records are never imported from it, only checked
against what is loaded (:func:`missing_plugins`).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Iterable
from importlib.metadata import entry_points
from pathlib import Path

from srnet.errors import SrnetError
from srnet.io import first_line

ENTRY_POINT_GROUP = "srnet.plugins"
FILE_MODULE_PREFIX = "srnet_plugin_"
"""A ``.py`` plug-in is imported as ``srnet_plugin_<stem>_<digest of its resolved path>``."""
_entry_points_loaded = False


def load_plugins(names: Iterable[str] = ()) -> None:
    """Import the installed ``srnet.plugins`` entry points (once) and the modules ``names`` (one
    name as a plain string is one module, never its characters)."""
    load_entry_points()
    for name in [names] if isinstance(names, str | Path) else names:
        load_plugin(name)


def load_entry_points() -> None:
    """Import every module of the ``srnet.plugins`` entry-point group, once per process."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            point.load()
        except (Exception, SystemExit) as exc:  # anything the plug-in raises while importing
            raise SrnetError(f"plug-in entry point '{point.name}' ({point.value}) failed to load: "
                             f"{type(exc).__name__}: {first_line(exc, 200)}") from None


def load_plugin(name: str) -> None:
    """Import one plug-in: a module name, or a path to a ``.py`` file (imported once, by path)."""
    try:
        if name.endswith(".py"):
            _import_file(Path(name))
        else:
            importlib.import_module(name)
    except SrnetError:
        raise
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise SrnetError(f"plugins: '{name}' needs a module that is not installed ({exc.name})") from None
        raise SrnetError(f"plugins: no module '{name}' on the Python path (set PYTHONPATH, or give the "
                         ".py file's path)") from None
    except SystemExit as exc:  # a plug-in must not end the process that imports it
        raise SrnetError(f"plugins: '{name}' called sys.exit({exc.code!r}) while being imported") from None
    except Exception as exc:
        raise SrnetError(f"plugins: cannot import '{name}' ({type(exc).__name__}: "
                         f"{first_line(exc, 200)})") from None


def missing_plugins(names: Iterable[str]) -> list[str]:
    """The plug-ins of ``names`` (as a run folder records them) that this process has not loaded: a
    module that is not imported, a ``.py`` file whose name no loaded file plug-in has (the recorded
    path is relative to where the run ran)."""
    files = {Path(module.__file__).name for key, module in list(sys.modules.items())
             if key.startswith(FILE_MODULE_PREFIX) and getattr(module, "__file__", None)}
    return [name for name in names
            if (Path(name).name not in files if name.endswith(".py") else name not in sys.modules)]


def _import_file(path: Path) -> None:
    resolved = path.resolve()
    if not resolved.is_file():
        raise SrnetError(f"plugins: {path} not found")
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:12]
    module_name = f"{FILE_MODULE_PREFIX}{resolved.stem}_{digest}"  # same-named files in two folders
    if module_name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
