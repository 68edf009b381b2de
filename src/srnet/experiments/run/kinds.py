"""Run kinds: how a recipe of a given task family becomes a run.

A task names its kind (``Task.run_kind``): ``task`` (a classifier on labelled splits, the
default) or ``text`` (task-agnostic mask search on raw text).  A kind first *prepares* (checks
every input and loads the model before the run folder is touched), then *executes* (trains or
prunes, evaluates, and ends with :func:`srnet.experiments.run.finish.finish_run`, shared by all).
Adding a kind is one module with a registered :class:`RunKind`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from srnet.config import Recipe
from srnet.registry import Registry
from srnet.rundir.layout import RunDir
from srnet.rundir.record import RunMetrics
from srnet.tasks import Task


class RunKind(ABC):
    """One way of running a recipe."""

    name: ClassVar[str] = ""

    @abstractmethod
    def prepare(self, recipe: Recipe, task: Task) -> Any:
        """Check the recipe's inputs and load what the run needs; no file is written."""

    @abstractmethod
    def execute(self, recipe: Recipe, prepared: Any, run: RunDir, *, resume: bool, main: bool) -> RunMetrics:
        """Train (or only prune), evaluate and finish ``run``; return its record (empty on a
        process other than the main one of a multi-process run)."""


RUN_KINDS: Registry[type[RunKind]] = Registry("run kind")
register_run_kind = RUN_KINDS.register
"""Class decorator that registers a :class:`RunKind` under a unique name."""
