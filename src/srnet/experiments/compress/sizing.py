"""The cut sized to this machine: the dense model and each candidate level timed side by side
(:func:`size_to_machine`), recorded in ``<out>/sizing.json`` (:class:`Sizing`) and, on
``--resume``, read back only when it was sized for the same settings (:func:`recorded_sizing`)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from srnet.errors import SrnetError
from srnet.experiments.compress.config import SIZING_FILE, CompressConfig
from srnet.experiments.compress.source import Source
from srnet.export.runtimes import get_runtime


class CurvePoint(BaseModel):
    """One timed level: its measured speed-up over dense PyTorch FP32 and its latency."""

    level: float = Field(ge=0, lt=1)
    speedup: float = Field(gt=0)
    latency_ms: float | None = None
    speedup_batch1: float | None = None
    """The same level at batch 1 (timed with ``--length auto``)."""


class Sizing(BaseModel):
    """``sizing.json``: the timed curve, the chosen level and what it was sized for."""

    model_config = ConfigDict(extra="ignore")

    curve: list[CurvePoint] = []
    level: float = Field(ge=0, lt=1)
    needed: float | None = None
    """The speed-up the chosen level had to reach (target x (1 + margin)); None for --sparsity."""
    runtime: str
    environment: dict[str, Any] = {}
    warnings: list[str] = []
    elapsed_s: float = 0.0
    inputs: list[dict[str, Any]] = []
    """What was timed: each cell's batch and, at ``--length auto``, the split and its lengths."""
    settings: dict[str, Any] | None = None
    """The sizing settings it ran with (speedup, sparsity, levels, margin, batch, length, threads);
    absent in records older than this field."""
    source_sha256: str | None = None
    """The SHA-256 of the compressed model's files (:func:`~srnet.experiments.compress.source.source_digest`):
    a resume of a model changed since is refused, and ``--reuse`` pairs stages by it; absent in
    records older than this field."""

    @field_validator("needed", "elapsed_s")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("not a finite number")
        return value


SIZING_KEYS = ("speedup", "sparsity", "levels", "refine", "margin", "runtime", "batch", "length", "threads",
               "drop_layers")
"""The settings a sizing depends on: a resume with another value of one is refused."""


def sizing_settings(config: CompressConfig) -> dict[str, Any]:
    return {key: getattr(config, key) for key in SIZING_KEYS}


def recorded_sizing(out: Path, config: CompressConfig) -> Sizing:
    """The sizing in ``out``, validated, and refused when it was sized for other settings."""
    path = out / SIZING_FILE
    try:
        sizing = Sizing.model_validate_json(path.read_bytes())
    except (ValidationError, ValueError) as exc:
        first = exc.errors()[0] if isinstance(exc, ValidationError) else {"loc": (), "msg": str(exc)}
        where = ".".join(map(str, first["loc"])) or "file"
        raise SrnetError(
            f"{path}: not a sizing record ({where}: {first['msg']}); --overwrite starts over"
        ) from None
    for key, value in _recorded_values(sizing).items():
        wanted = getattr(config, key)
        if value is not None and not _same(value, wanted):
            flag = f"--{key.replace('_', '-')}"
            raise SrnetError(
                f"--resume: {flag} {_shown(wanted)} differs from the recorded sizing's "
                f"{_shown(value)} ({path}); resume with it or give --overwrite"
            )
    return sizing


def _recorded_values(sizing: Sizing) -> dict[str, Any]:
    """What the record says of each sizing setting (older records: what their curve and level imply)."""
    if sizing.settings is not None:
        return {key: sizing.settings.get(key) for key in SIZING_KEYS}
    implied: dict[str, Any] = {"runtime": sizing.runtime}
    if sizing.needed is None:
        implied["sparsity"] = sizing.level
    else:
        implied["levels"] = [p.level for p in sizing.curve]
    return implied


def _same(recorded: Any, wanted: Any) -> bool:
    if isinstance(recorded, list) and isinstance(wanted, list):
        return sorted(recorded) == sorted(wanted)
    if isinstance(recorded, float) or isinstance(wanted, float):
        return wanted is not None and math.isclose(float(recorded), float(wanted), rel_tol=1e-9)
    return recorded == wanted


def _shown(value: Any) -> str:
    return " ".join(f"{v:g}" for v in value) if isinstance(value, list) else str(value)


def choose_level(curve: list[CurvePoint], config: CompressConfig) -> tuple[float, float | None]:
    """(the smallest level whose speed-up reaches target x (1 + margin), that speed-up needed);
    one line with the measured curve when none does; ``--sparsity``: that level."""
    if config.speedup is None:
        assert config.sparsity is not None
        return config.sparsity, None
    needed = config.speedup * (1 + config.margin)
    for point in curve:
        if point.speedup >= needed:
            return point.level, needed
    measured = ", ".join(f"{p.level:.0%} {p.speedup:.2f}x" for p in curve)
    raise SrnetError(
        f"--speedup {config.speedup:g}: not reachable on this machine ({config.runtime}, batch "
        f"{config.batch} x {config.length}, {config.threads} thread(s)); measured: {measured}"
    )


def size_to_machine(
    source: Source, config: CompressConfig, progress: Callable[[str], None] = print
) -> Sizing:
    """Time the dense model in PyTorch FP32 against each level under ``--runtime`` (level 0: the
    dense model itself; other levels: OMP head+neuron masks shrunk, since the shape is what counts),
    and pick the smallest level over the target."""
    started = time.perf_counter()
    shape = "the dev split's lengths" if config.length == "auto" else f"{config.length} tokens"
    from srnet.experiments.compress.source import dropped_layers

    dropped = dropped_layers(source, config.drop_layers)
    of = f" of the model without layers {_listed(dropped)}" if dropped else ""
    progress(
        f"sizing: timing the dense model and {len(config.levels)} levels{of} (batch {config.batch} at "
        f"{shape}, {config.threads} thread(s), {config.runtime})"
    )
    curve, result = _timed_curve(source, config)
    level, needed = choose_level(curve, config)
    warnings = list(result["warnings"])
    finer = _between(curve, level) if config.refine and config.speedup is not None else []
    if finer:
        progress(
            f"sizing: timing {', '.join(f'{x:.0%}' for x in finer)} (between the levels around the target)"
        )
        extra, more = _timed_curve(source, config.model_copy(update={"levels": finer}))
        curve, warnings = sorted([*curve, *extra], key=lambda p: p.level), [*warnings, *more["warnings"]]
    level, needed = choose_level(curve, config)
    return Sizing(
        curve=curve,
        level=level,
        needed=needed,
        runtime=config.runtime,
        environment=result["environment"],
        warnings=warnings,
        inputs=result.get("inputs", []),
        elapsed_s=round(time.perf_counter() - started, 1),
        settings=sizing_settings(config),
    )


def _timed_curve(source: Source, config: CompressConfig) -> tuple[list[CurvePoint], dict[str, Any]]:
    """Each of ``config.levels`` timed (one bench), and the bench."""
    result, labels = _bench_levels(source, config)
    main, single = (_level_rows(result, labels, config, batch) for batch in (config.batch, 1))
    curve = [
        CurvePoint(
            level=level,
            speedup=main[i][0],
            latency_ms=main[i][1],
            speedup_batch1=single[i][0] if single else None,
        )
        for i, level in enumerate(config.levels)
    ]
    return curve, result


REFINE_STEP = 0.05
"""The step of the levels timed between the two grid levels around the target."""


def _between(curve: list[CurvePoint], level: float) -> list[float]:
    """The 5-point steps above the deepest timed level below ``level`` and below ``level``."""
    below = [p.level for p in curve if p.level < level]
    if not below:
        return []
    steps = []
    candidate = round(max(below) + REFINE_STEP, 4)
    while candidate < level - 1e-9:
        steps.append(candidate)
        candidate = round(candidate + REFINE_STEP, 4)
    return steps


def _level_rows(
    result: dict[str, Any], labels: list[str | None], config: CompressConfig, batch: int
) -> list[tuple[float, float]]:
    """(speed-up, latency) of each level at ``batch`` (none when that batch was not timed)."""
    wanted = get_runtime(config.runtime).bench_label
    rows = [row for row in result["rows"] if row["batch"] == batch]
    if not rows:
        return []
    dense = rows[0]  # the baseline, dense PyTorch FP32, leads each cell
    by_label = {row["model"]: row for row in rows if row["runtime"] == wanted}
    return [
        (1.0, dense["latency_ms"])
        if label is None
        else (by_label[label]["speedup"], by_label[label]["latency_ms"])
        for label in labels
    ]


def _bench_levels(source: Source, config: CompressConfig) -> tuple[dict[str, Any], list[str | None]]:
    """The bench of dense PyTorch FP32 and every level, and each level's row label (None: the
    dense model in PyTorch, which is the baseline itself)."""
    import copy
    from dataclasses import replace

    import torch

    from srnet.experiments.compress.source import dropped_layers
    from srnet.experiments.timing import Candidate, load_candidate, omp_variants, run_bench
    from srnet.experiments.verbs.bench import BenchConfig
    from srnet.models.layers import drop_layers

    runtime = get_runtime(config.runtime)
    length = 128 if config.length == "auto" else config.length  # auto: the inputs replace the grid
    bench_config = BenchConfig(
        batch_sizes=[config.batch],
        lengths=[length],
        rounds=config.rounds,
        warmup=1,
        threads=config.threads,
        runtimes=[runtime.name],
        **runtime.export_flags,
    )
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(config.threads)
        dense = load_candidate(str(source.weights))
        dropped = dropped_layers(source, config.drop_layers)
        base = dense
        if dropped:  # the levels cut the layers left
            shallower = drop_layers(copy.deepcopy(dense.model), dropped)
            base = Candidate(f"layers {_listed(dropped)} removed", shallower)
        cut = [level for level in config.levels if level > 0]
        variants = omp_variants(base, cut, granularities=("head+neuron",))
        # in torch, the dense model uncut is the baseline itself
        timed_uncut = (runtime.needs_onnx or bool(dropped)) and 0 in config.levels
        uncut_label = base.label if dropped else "no cut (dense graph)"
        uncut = [Candidate(uncut_label, base.model)] if timed_uncut else []
        inputs = timing_inputs(source, config)
        result = run_bench([replace(dense, onnx=False), *uncut, *variants], bench_config, inputs)
    finally:
        torch.set_num_threads(before)
    by_level: dict[float, str | None] = dict(zip(cut, [v.label for v in variants], strict=True))
    by_level[0.0] = uncut[0].label if uncut else None
    labels = [by_level[level] for level in config.levels]
    return result, labels


def _listed(indices: list[int]) -> str:
    return ", ".join(map(str, indices))


def timing_inputs(source: Source, config: CompressConfig) -> list[Any] | None:
    """At ``--length auto``: batches of ``--batch`` and of 1 drawn from the dev split (the split
    the attack reads), tokenized as the model sees them; else None (random ids at ``--length``)."""
    from srnet.evaluation.timing_inputs import recipe_inputs
    from srnet.experiments.compress.source import id_split

    if config.length != "auto":
        return None
    split = id_split(source)
    assert split is not None  # the preflight refuses --length auto without an evaluation split
    recipe = {**source.recipe, "name": "timing"}
    return recipe_inputs(recipe, source.weights, sorted({config.batch, 1}, reverse=True), split=split)


def sizing_for(
    source: Source,
    config: CompressConfig,
    out: Path,
    resume: bool,
    progress: Callable[[str], None],
    digest: str,
) -> Sizing:
    """The recorded sizing on ``resume`` (checked against the settings and the model's ``digest``),
    else a fresh one recording ``digest``."""
    if resume and (out / SIZING_FILE).is_file():
        sizing = recorded_sizing(out, config)
        if sizing.source_sha256 not in (None, digest):
            raise SrnetError(
                f"--resume: {source.model} changed since this compression started (SHA-256 "
                f"{sizing.source_sha256[:12]}…, now {digest[:12]}…); give --overwrite to start over"
            )
        progress(f"sizing: {out / SIZING_FILE} (level {sizing.level:.0%})")
        return sizing
    if config.speedup is None:
        assert config.sparsity is not None
        return Sizing(level=config.sparsity, runtime=config.runtime, settings=sizing_settings(config),
                      source_sha256=digest)
    sizing = size_to_machine(source, config, progress)
    sizing.source_sha256 = digest
    for point in sizing.curve:
        progress(f"  {point.level:.0%}: {point.speedup:.2f}x")
    if sizing.level == 0:
        progress(f"sizing: no cut needed: the dense model in {config.runtime} reaches {sizing.needed:.2f}x")
    else:
        progress(f"sizing: {sizing.level:.0%} is the smallest level at >= {sizing.needed:.2f}x")
    for warning in sizing.warnings:
        progress(f"  timing warning: {warning}")
    return sizing
