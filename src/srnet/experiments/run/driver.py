"""Run one recipe end to end: check it, prepare its run kind, write the run directory.

``run_recipe`` is what ``srnet run``, ``srnet finetune`` and ``srnet demo`` call.  What happens
in between is the task's run kind's (:mod:`srnet.experiments.run.kinds`): ``task``
(:mod:`~srnet.experiments.run.task`) or ``text`` (:mod:`~srnet.experiments.run.tamt`).
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from srnet.config import Recipe, dump_recipe, plugin_list, read_recipe_file, recorded_recipe
from srnet.errors import SrnetError
from srnet.experiments.refs import stage_refs
from srnet.experiments.run import tamt as _text_kind  # noqa: F401  (registers the run kind)
from srnet.experiments.run import task as _task_kind  # noqa: F401  (registers the run kind)
from srnet.experiments.run.kinds import RUN_KINDS
from srnet.io import atomic_write_json, atomic_write_text, check_creatable
from srnet.rundir import locks
from srnet.rundir.layout import RunDir, environment
from srnet.rundir.record import RunMetrics
from srnet.tasks import get_task
from srnet.training.loop import is_main_process

log = logging.getLogger("srnet.run")


@dataclass
class RunResult:
    """What a finished run produced."""

    run_dir: Path
    metrics: RunMetrics = field(default_factory=RunMetrics)
    """The run record (empty on a process of a multi-process run that writes nothing)."""


def run_recipe(recipe: Recipe, *, resume: bool = False, overwrite: bool = False) -> RunResult:
    """Execute ``recipe`` and write its run directory; returns the directory and metrics.

    Nothing is created or deleted until the recipe is fully checked (the run kind's
    ``prepare``), except the run folder's lock, which is taken first (:func:`holding`).  With
    ``overwrite`` the new run is written into a hidden sibling folder and swapped in only once it
    has completed, so a failed or killed new run leaves the old one intact.
    """
    target = RunDir(Path(recipe.output_dir) / recipe.name)
    task = get_task(recipe.task)
    check_recipe(recipe, target)
    main = is_main_process()  # multi-process runs: only rank 0 locks and writes the run directory
    with holding(target) if main else nullcontext():
        if main and (note := target.recover()):
            log.warning("%s", note)
        check_state(recipe, target, resume=resume, overwrite=overwrite)
        kind = RUN_KINDS.get(task.run_kind)()
        prepared = kind.prepare(recipe, task)
        run = target.staging() if overwrite else target
        if main:
            if overwrite:
                shutil.rmtree(run.root, ignore_errors=True)
            run.root.mkdir(parents=True, exist_ok=True)
            atomic_write_text(run.config, dump_recipe(recipe))
            atomic_write_json(run.environment, environment())
        metrics = kind.execute(recipe, prepared, run, resume=resume and not overwrite, main=main)
        if overwrite and main:
            run.replace(target)
    return RunResult(target.root, metrics)


@contextmanager
def holding(run: RunDir) -> Iterator[None]:
    """Hold ``run``'s lock while the block runs: a live process's lock (another run of the folder,
    or its ``--overwrite``) is refused in one line; a dead one's is taken over.  Folders created only
    to hold the lock are removed again if the block leaves nothing in them."""
    folder, name = run.lock.parent, run.lock.name
    created = [path for path in [folder, *folder.parents] if not path.exists()]
    lock = locks.acquire(folder, name)
    if lock.token is None:
        raise SrnetError(f"{run.root} is in use by another srnet run ({lock.note}); wait for it to end "
                         "(or stop it), then run again")
    if lock.note:
        log.warning("%s: %s", run.root, lock.note)
    try:
        yield
    finally:
        locks.release(folder, lock.token, name)
        _remove_empty(created)


def _remove_empty(folders: list[Path]) -> None:
    """Remove each of ``folders`` (innermost first) while it is empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def check_recipe(recipe: Recipe, run: RunDir) -> None:
    """Refuse, before any work, a recipe that cannot run into ``run`` (its folder's state aside)."""
    data = recipe.data
    if not (data.train or data.dev or data.eval or data.challenge):
        raise SrnetError("nothing to do: the recipe names no data.train, dev, eval or challenge split")
    refs = stage_refs(recipe.model_dump(mode="json"))
    if refs:
        raise SrnetError(f"'@{sorted(refs)[0]}' names a sweep stage: stage references work in sweep "
                         "files (srnet sweep); a plain run needs a path")
    init_from = recipe.model.init_from
    if init_from and Path(init_from).resolve() == run.root.resolve():
        raise SrnetError(f"run '{recipe.name}' would overwrite {run.root}, the run it starts from")
    if init_from and not RunDir(Path(init_from)).model.is_dir():
        raise SrnetError(f"model.init_from: {init_from} is not a finished srnet run (no model/ folder)")
    dense_metrics = RunDir(Path(recipe.dense_reference)).metrics if recipe.dense_reference else None
    if dense_metrics is not None and not dense_metrics.is_file():
        raise SrnetError(f"dense_reference: {dense_metrics} not found")
    check_creatable(run.root, "output_dir")
    recipe.pruning.check_inputs()  # e.g. fixed: its mask file exists


def check_state(recipe: Recipe, run: RunDir, *, resume: bool, overwrite: bool) -> None:
    """Refuse what would waste or destroy the run already in ``run`` (checked under its lock)."""
    run.check_free(resume=resume, overwrite=overwrite)
    if overwrite:
        return
    if resume and run.complete:
        raise SrnetError(f"{run.root} is already complete (metrics.json exists); nothing to resume")
    if resume and run.config.is_file():
        check_same_recipe(recipe, run.config)


def check_same_recipe(recipe: Recipe, config: Path) -> None:
    """``--resume``: the run's recorded recipe (``config.yaml``) computes what ``recipe`` does and
    names the same plug-ins (compared first, so nothing the file names is imported)."""
    recorded = read_recipe_file(config)
    plugins = plugin_list(recorded.get("plugins")) or []
    if plugins != recipe.plugins:
        raise SrnetError(f"{config}: --resume with other plug-ins than this run started with (plugins "
                         f"{plugins!r} there, {recipe.plugins!r} now)")
    if recorded_recipe(recorded, str(config)).fingerprint() != recipe.fingerprint():
        raise SrnetError(f"{config}: --resume with a different recipe than the one this run started with")

