"""``srnet compress``, the verb: the folder rules, one lock for the compression's whole life
(``--overwrite`` included), the preflight, the sizing, the stages as a resumable sweep in
``<out>/stages``, then :func:`~srnet.experiments.compress.finish.finish`."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from srnet.errors import NeedsOption, SrnetError
from srnet.experiments.compress.config import ARTIFACT_STAGES, LOCK, RESULT_FILE, SIZING_FILE, CompressConfig
from srnet.experiments.compress.record import CompressRecord
from srnet.experiments.compress.source import Source, resolve_source, source_digest
from srnet.experiments.sweep.stages import get_stage
from srnet.export.runtimes import auto_runtime, get_runtime


@dataclass
class CompressResult:
    """A finished (or planned) compression: its folder, the chosen level, the record."""

    out: Path
    level: float | None
    plan: list[str] = field(default_factory=list)
    estimate_s: float | None = None
    record: CompressRecord | None = None

    @property
    def passed(self) -> bool:
        return bool(self.record and self.record.passed)


def compress(
    model: str,
    config: CompressConfig,
    *,
    recipe: Any = None,
    overrides: list[str] | None = None,
    out: str | Path,
    resume: bool = False,
    overwrite: bool = False,
    dry_run: bool = False,
    reuse: str | Path | None = None,
    progress: Callable[[str], None] = print,
) -> CompressResult:
    """The verb behind ``srnet compress``, :func:`srnet.api.compress` and the ``compress`` stage
    (``reuse``: an earlier compression of the same model whose matching stages are copied, see
    :mod:`srnet.experiments.compress.reuse`)."""
    from srnet.experiments.compress.preflight import preflight
    from srnet.experiments.compress.reuse import reuse_folder
    from srnet.io import set_aside
    from srnet.rundir import locks

    out = Path(out)
    source = resolve_source(model, recipe, overrides)
    check_out(out, source, model)
    checked = preflight(source, config)
    digest = source_digest(source)
    earlier = reuse_folder(Path(reuse), out, digest) if reuse is not None else None
    _announce_runtime(config, progress)
    check_folder_state(out, resume, overwrite, dry_run)
    run = Attempt(source, config, out, checked.attack_n, digest, earlier, progress)
    if dry_run:
        return plan_only(run)
    created = not out.exists()
    lock = locks.acquire(out, LOCK)
    if lock.token is None:
        raise SrnetError(f"--out {out}: in use by {lock.note}")
    try:
        fresh = overwrite and ((out / SIZING_FILE).is_file() or (out / RESULT_FILE).is_file())
        with set_aside(out if fresh else None, "the compression", keep=_lock_files(LOCK)):
            return _run(run, resume and not overwrite)
    finally:
        locks.release(out, lock.token, LOCK)
        if created and not any(p for p in out.iterdir() if p.name not in _lock_files(LOCK)):
            _remove_empty(out)


def _lock_files(name: str) -> set[str]:
    return {name, f".{name.lstrip('.')}.guard"}


def _remove_empty(out: Path) -> None:
    """A refused or failed first call leaves no empty ``--out`` folder behind."""
    for entry in out.iterdir():
        entry.unlink()
    out.rmdir()


def check_out(out: Path, source: Source, model: str) -> None:
    from srnet.io import check_creatable

    if not str(out).strip() or out.resolve() == Path.cwd().resolve():
        raise SrnetError(f"--out {str(out)!r}: give a new folder for the compressed model")
    if out.resolve() in [source.weights.resolve(), *source.weights.resolve().parents]:
        raise SrnetError(f"--out {out}: holds the model being compressed ({model}); give another folder")
    check_creatable(out, "--out")


def _announce_runtime(config: CompressConfig, progress: Callable[[str], None]) -> None:
    auto, why = auto_runtime()
    progress(
        f"runtime: {config.runtime}"
        + (f" (what --runtime auto picks here: {why})" if config.runtime == auto else "")
    )
    if get_runtime(config.runtime).needs_onnx:
        from srnet.export.onnx import require_onnx

        require_onnx()


def check_folder_state(out: Path, resume: bool, overwrite: bool, dry_run: bool) -> None:
    """``--out`` is new, empty, or a compression that the flags allow to resume or replace."""
    from srnet.rundir import locks

    if (out / RESULT_FILE).is_file() and not (overwrite or resume or dry_run):
        raise NeedsOption(
            f"{out}: already holds a finished compression ({out / RESULT_FILE}); resume=True scores and "
            "gates it again (attack, bench and gate settings may change), overwrite=True starts over",
            "resume",
            "overwrite",
        )
    if (out / SIZING_FILE).is_file() and not (resume or overwrite or dry_run):
        raise NeedsOption(
            f"{out}: holds an unfinished compression; resume=True continues it, overwrite=True starts over",
            "resume",
            "overwrite",
        )
    ours = {RESULT_FILE, SIZING_FILE, *_lock_files(LOCK), *_lock_files(locks.STAGE_LOCK)}
    foreign = [p.name for p in out.iterdir() if p.name not in ours] if out.is_dir() else []
    if foreign and not ((out / SIZING_FILE).is_file() or (out / RESULT_FILE).is_file()):
        raise SrnetError(
            f"--out {out}: not empty ({foreign[0]}, ...) and not an srnet compress folder; "
            "give a new or empty folder (--overwrite never replaces what srnet did not write)"
        )


@dataclass(frozen=True)
class Attempt:
    """One call's inputs, checked: the model, the settings, the folder, the attack size, the
    model's digest and the earlier compression ``--reuse`` names."""

    source: Source
    config: CompressConfig
    out: Path
    attack_n: int
    digest: str
    earlier: Path | None
    progress: Callable[[str], None]


def plan_only(run: Attempt) -> CompressResult:
    """``--dry-run``: size, plan and estimate (less the stages ``--reuse`` supplies); nothing is
    written."""
    from srnet.experiments.compress.estimate import estimate_seconds
    from srnet.experiments.compress.plan import compress_sweep
    from srnet.experiments.compress.record import cut_words
    from srnet.experiments.compress.reuse import reusable
    from srnet.experiments.compress.sizing import sizing_for
    from srnet.experiments.compress.source import dropped_layers
    from srnet.experiments.sweep.plan import describe_plan, plan_sweep

    source, config, progress = run.source, run.config, run.progress
    sizing = sizing_for(source, config, run.out, False, progress, run.digest)
    sweep = compress_sweep(source, sizing.level, config, run.out, run.attack_n)
    jobs = plan_sweep(sweep, "compress")
    copied = reusable(jobs, run.earlier) if run.earlier else {}
    to_run = {**sweep, "stages": {k: v for k, v in sweep["stages"].items() if k not in copied}}
    estimate = estimate_seconds(source, to_run, config)
    total = sizing.elapsed_s + estimate["total_s"]  # the run sizes again, as this dry run did
    lines = [
        f"level: {cut_words(sizing.level, dropped_layers(source, config.drop_layers))}",
        *describe_plan(jobs),
        *([f"reuse from {run.earlier}: {', '.join(copied)}"] if copied else []),
        f"estimate on this machine: {total / 60:.1f} min (sizing {sizing.elapsed_s / 60:.1f} min, "
        f"{estimate['train_steps']} training steps at {estimate['step_s']:.2f} s)",
    ]
    for line in lines:
        progress(line)
    return CompressResult(run.out, sizing.level, lines, total)


def _run(run: Attempt, resume: bool) -> CompressResult:
    """Size (or read the recorded sizing), copy what ``--reuse`` supplies, run the stages, finish."""
    from srnet.experiments.compress.finish import finish
    from srnet.experiments.compress.plan import compress_sweep
    from srnet.experiments.compress.reuse import adopt, reusable, reused_stages
    from srnet.experiments.compress.sizing import sizing_for
    from srnet.experiments.sweep.execute import execute
    from srnet.experiments.sweep.plan import plan_sweep
    from srnet.io import atomic_write_json

    source, config, out, progress = run.source, run.config, run.out, run.progress
    sizing = sizing_for(source, config, out, resume, progress, run.digest)
    sweep = compress_sweep(source, sizing.level, config, out, run.attack_n)
    jobs = plan_sweep(sweep, "compress")
    copied = reusable(jobs, run.earlier) if run.earlier else {}
    atomic_write_json(out / SIZING_FILE, sizing.model_dump(mode="json"))
    record_compress_sweep(sweep, out / "stages")
    adopt(jobs, copied, out / "stages", progress)
    result = execute(jobs, out / "stages", progress=progress)
    for job in jobs:
        if job.key in result.failed:
            raise SrnetError(f"compress stage '{job.label}' failed: {result.failed[job.key]}")
    elapsed = sizing.elapsed_s + stage_seconds(out / "stages", {j.key for j in jobs})
    record = finish(
        source,
        config,
        sizing,
        {job.name: _output(job) for job in jobs},
        out,
        elapsed_s=elapsed,
        peak_rss_mb=peak_memory_mb(jobs),
        reused=reused_stages(out / "stages", jobs),
    )
    return CompressResult(out, sizing.level, record=record)




def record_compress_sweep(sweep: dict[str, Any], stages: Path) -> None:
    """Write ``<stages>/sweep.yaml``; on a resume, refuse a change to what trained (the base recipe,
    the bias, teacher and student stages) in one line, and take the new artifact stages."""
    import yaml

    from srnet.experiments.sweep.plan import RECORD, first_conflict
    from srnet.io import atomic_write_text, read_yaml

    record = stages / RECORD
    if record.is_file():
        recorded = read_yaml(record)
        trained = {k: v for k, v in (recorded.get("stages") or {}).items() if k not in ARTIFACT_STAGES}
        ours = {k: v for k, v in sweep["stages"].items() if k in ARTIFACT_STAGES}
        changed = first_conflict({**recorded, "stages": {**trained, **ours}}, sweep)
        if changed:
            raise SrnetError(
                f"--resume: '{changed}' differs from what this compression trained ({record}); "
                "resume with the recorded settings or give --overwrite"
            )
    stages.mkdir(parents=True, exist_ok=True)
    atomic_write_text(record, yaml.safe_dump(sweep, sort_keys=False))


def _output(job) -> str:

    stage = get_stage(job.kind)
    return str(stage.output(job.folder, stage.params_model.model_validate(job.params)))


def stage_seconds(stages: Path, keys: set[str]) -> float:
    """The wall time of the stages ``keys``, each from its last start to its done in the sweep's
    event log: a resumed compression counts each stage once, however often it was interrupted (a
    stage ``--reuse`` copied counts nothing)."""
    from srnet.experiments.sweep.execute import read_events

    started: dict[str, datetime] = {}
    seconds = 0.0
    for event in read_events(stages):
        if event["key"] not in keys:
            continue
        when = datetime.fromisoformat(event["time"])
        if event["event"] == "start":
            started[event["key"]] = when
        elif event["event"] == "done" and event["key"] in started:
            seconds += (when - started.pop(event["key"])).total_seconds()
    return seconds


def peak_memory_mb(jobs) -> float:
    """The largest resident set of this call or of any stage of ``jobs`` (as its stage record
    has it, so stages of an earlier, interrupted call count too), in MiB."""
    from srnet.experiments.sweep.execute import peak_rss_mb
    from srnet.rundir.layout import COMPLETE

    recorded = [
        json.loads((job.folder / COMPLETE).read_text(encoding="utf-8")).get("peak_rss_mb") or 0.0
        for job in jobs
        if (job.folder / COMPLETE).is_file()
    ]
    return max([peak_rss_mb(), *recorded])
