"""Running a sweep's plan: dependency order, a pool of worker processes or Ray tasks, resume.

Each job runs in a worker (:func:`run_job`) and is complete only when its ``stage.json`` is
written, last and atomically; a killed sweep resumes by running exactly the jobs without one
(a training stage continues from its checkpoint).  A failing job does not stop the sweep: its
dependants are skipped and the failures are returned with their one-line errors.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from srnet.config import recipe_from_dict
from srnet.console import quiet_libraries
from srnet.errors import SrnetError
from srnet.experiments.sweep.plan import Job
from srnet.experiments.sweep.reaper import start_reaper
from srnet.experiments.sweep.stages import get_stage
from srnet.io import atomic_write_json, file_manifest
from srnet.plugins import load_plugins
from srnet.rundir import locks
from srnet.rundir.layout import COMPLETE

EXECUTORS = ("local", "ray")
EVENTS = "events.jsonl"


@dataclass
class SweepResult:
    """What a sweep did: every job of the plan, and which finished, failed or were skipped."""

    output_dir: Path
    jobs: list[Job]
    ran: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    """Job key -> one-line error."""
    skipped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.skipped

    def __repr__(self) -> str:
        """One line of counts (the jobs' recipes are in ``jobs``)."""
        return (f"SweepResult('{self.output_dir}': {len(self.jobs)} stages, {len(self.ran)} ran, "
                f"{len(self.failed)} failed, {len(self.skipped)} skipped)")


NOT_IN_MANIFEST = (COMPLETE, "*.lock", ".*.guard")
"""Files a finished stage's manifest (``stage.json``'s ``files``) leaves out: the marker itself and
the locks of the processes that ran it."""


def run_job(job: Job) -> None:
    """Run one job in this process and mark it complete (the worker's entry point)."""
    quiet_libraries()  # a worker is srnet's own process: no library noise on the sweep's terminal
    load_plugins(job.recipe.get("plugins") or ())  # before the kind is looked up: it may be a plug-in's
    if job.module:
        importlib.import_module(job.module)  # ... or registered by its verb's module (compress)
    stage = get_stage(job.kind)
    job.folder.mkdir(parents=True, exist_ok=True)
    stage.run(recipe_from_dict(job.recipe, str(job.folder)), stage.params_model.model_validate(job.params),
              job.folder)
    atomic_write_json(job.folder / COMPLETE, {"stage": job.name, "kind": job.kind, "key": job.key,
                                              "grid": job.grid, "deps": job.deps,
                                              "peak_rss_mb": peak_rss_mb(),
                                              "files": file_manifest(job.folder, NOT_IN_MANIFEST)})


def peak_rss_mb() -> float:
    """The largest resident set of this process or any finished child so far, in MiB (a worker that
    ran earlier stages counts them too: an upper bound of the last stage's)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return round(max(own, children) / 1024, 1)


def execute(
    jobs: list[Job], output_dir: Path, *, executor: str = "local", workers: int = 1,
    gpus_per_stage: float | None = None, progress: Callable[[str], None] = print,
) -> SweepResult:
    """Run every incomplete job once its dependencies are complete (``gpus_per_stage``: Ray only,
    see :func:`ray_gpus`)."""
    result = SweepResult(output_dir, jobs)
    index = {job.key: i + 1 for i, job in enumerate(jobs)}
    done = {job.key for job in jobs if job.complete}
    todo = [job for job in jobs if job.key not in done]
    running: dict[Future, tuple[Job, float, str]] = {}
    def line(job: Job, verb: str, tail: str = "") -> str:
        return f"[{index[job.key]}/{len(jobs)}] {verb} {job.label}{tail}"

    with _pool(executor, workers, gpus_per_stage) as submit:
        while todo or running:
            for job in todo:  # in plan order, so a skip reaches dependants in the same pass
                if {*result.failed, *result.skipped} & set(job.deps):
                    result.skipped.append(job.key)
                    log_event(output_dir, "skipped", job)
                    progress(line(job, "skipped", " (a stage it needs failed or runs in another sweep)"))
            todo = [job for job in todo if job.key not in result.skipped]
            for job in [j for j in todo if set(j.deps) <= done]:  # a locked or finished job takes no slot
                if len(running) >= workers:
                    break
                todo.remove(job)
                lock = locks.acquire(job.folder)
                if lock.token is None:  # another sweep on this folder is running it
                    result.skipped.append(job.key)
                    log_event(output_dir, "skipped", job, reason=f"locked by {lock.note}")
                    progress(line(job, "skipped", f" (being run by {lock.note})"))
                    continue
                if job.complete:  # another sweep finished it since this one planned
                    locks.release(job.folder, lock.token)
                    done.add(job.key)
                    continue
                if lock.note:
                    progress(line(job, "lock", f": {lock.note}"))
                try:
                    running[submit(job)] = (job, time.perf_counter(), lock.token)
                except BrokenProcessPool:
                    locks.release(job.folder, lock.token)
                    raise SrnetError(WORKER_LOST) from None
                log_event(output_dir, "start", job)
                progress(line(job, "start"))
            if not running:
                if any({*result.failed, *result.skipped} & set(job.deps) for job in todo):
                    continue  # a stage skipped just now (another sweep runs it): skip its dependants
                if any(set(job.deps) <= done for job in todo):
                    continue  # a stage another sweep finished just now: its dependants are ready
                if todo:
                    raise RuntimeError(f"internal error: {len(todo)} stages wait on stages outside the plan")
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                job, started, token = running.pop(future)
                locks.release(job.folder, token)
                progress(line(job, *_settle(future, job, started, result, done, output_dir)))
    return result


def _settle(future: Future, job: Job, started: float, result: SweepResult, done: set[str],
            output_dir: Path) -> tuple[str, str]:
    """Record a finished job's outcome; (verb, tail) of its progress line (a lost worker: raised)."""
    error = future.exception()
    if error is None:
        done.add(job.key)
        result.ran.append(job.key)
        log_event(output_dir, "done", job)
        return "done", f" ({time.perf_counter() - started:.1f}s)"
    if isinstance(error, BrokenProcessPool):
        log_event(output_dir, "failed", job, error="worker process ended abruptly")
        raise SrnetError(WORKER_LOST)
    message = (str(error).strip().splitlines() or [type(error).__name__])[0]
    result.failed[job.key] = message
    log_event(output_dir, "failed", job, error=message)
    return "FAILED", f": {message}"


def refuse_worker_reentry() -> None:
    """Stop a sweep worker that is importing the script which started the sweep (spawned workers
    import the main module; an unguarded ``api.sweep`` call there would start a sweep in each)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__mp_main__":
            raise SystemExit('srnet: a sweep worker imported the script that calls api.sweep; put the '
                             'call under `if __name__ == "__main__":`')
        frame = frame.f_back


def check_executor(executor: str, workers: int, gpus_per_stage: float | None = None) -> None:
    """One line for an executor setting that cannot work (checked before a sweep writes anything)."""
    if executor not in EXECUTORS:
        raise SrnetError(f"--executor must be one of {list(EXECUTORS)}, got '{executor}'")
    if workers < 1:
        raise SrnetError(f"--workers must be at least 1, got {workers}")
    if gpus_per_stage is not None and (executor != "ray" or gpus_per_stage < 0):
        raise SrnetError(f"--gpus-per-stage takes a number >= 0 with --executor ray, got {gpus_per_stage} "
                         f"with --executor {executor} (local workers share this machine's GPUs)")


@contextmanager
def _pool(executor: str, workers: int, gpus_per_stage: float | None = None):
    """A ``submit(job) -> Future`` for the chosen executor."""
    check_executor(executor, workers, gpus_per_stage)
    if executor == "ray":
        try:
            import ray
        except ImportError:
            raise SrnetError("--executor ray needs Ray: pip install 'srnet[ray]'") from None
        if not ray.is_initialized():
            ray.init(include_dashboard=False)  # joins $RAY_ADDRESS when set, else starts a local one
            start_reaper()  # no process of a local instance outlives this driver, even after kill -9
        # a worker that dies mid-stage (killed, node lost) is retried once: a training stage
        # continues from its last checkpoint in the shared run folder
        gpus = ray_gpus(gpus_per_stage, ray.cluster_resources())
        task = ray.remote(max_retries=RAY_RETRIES, num_gpus=gpus)(run_job)
        yield lambda job: task.remote(job).future()
        return
    import multiprocessing

    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
        yield lambda job: pool.submit(run_job, job)


RAY_RETRIES = 1
PARENT_POLL_S = 0.5
WORKER_LOST = ("a sweep worker process ended abruptly (killed, out of memory, or it never started: a "
               "script that calls api.sweep must do so under `if __name__ == \"__main__\":`, since "
               "each worker imports it); finished stages are kept: run again with --resume (resume=True)")


def ray_gpus(requested: float | None, cluster: dict[str, float]) -> float:
    """The GPUs each Ray stage asks for: ``requested`` when given, else one where the cluster has
    GPUs (a stage runs on the GPU its task is given) and none on a CPU-only cluster."""
    if requested is not None:
        return requested
    return 1.0 if cluster.get("GPU", 0) > 0 else 0.0


def die_with_parent(parent: int) -> None:
    """Worker initializer: end this worker as soon as the sweep process that started it is gone,
    however it died (SIGKILL included: the worker is then re-parented and its parent pid changes).
    The stage it was running resumes from its last checkpoint on the next ``--resume``."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="srnet-parent-watch", daemon=True).start()


def log_event(output_dir: Path, event: str, job: Job, **extra) -> None:
    """Append one line to the sweep's event log (start / done / failed / skipped; compress's reused)."""
    entry = {"time": datetime.now(UTC).isoformat(timespec="seconds"), "event": event,
             "stage": job.name, "key": job.key, **extra}
    path = output_dir / EVENTS
    cut = path.is_file() and not path.read_bytes().endswith(b"\n") and path.stat().st_size > 0
    with path.open("a", encoding="utf-8") as fh:
        fh.write(("\n" if cut else "") + json.dumps(entry) + "\n")  # a kill may have cut the last line


def read_events(output_dir: Path) -> list[dict[str, Any]]:
    """The sweep's event log, oldest first (none when absent; a line a kill cut short is skipped)."""
    path = output_dir / EVENTS
    if not path.is_file():
        return []
    events = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict) and "key" in event and "event" in event:
            events.append(event)
    return events
