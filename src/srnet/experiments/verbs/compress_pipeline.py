"""``srnet compress``: a fine-tuned model -> a shrunk, faster model whose robustness is measured,
gated and written on its card.

The verb sizes the cut to this machine (head+neuron levels shrunk and timed against the dense
model, no training), then runs the sparse-and-fast study's structured recipe as a resumable sweep
in ``<out>/stages``:

======================= =========================================================================
stage                   what it does
======================= =========================================================================
``bias_fit``            fits the bias model out-of-fold (when ``--bias`` names a feature)
``dense``               evaluates the user's model as given (the card's "original" row)
``teacher``             dense PoE, one epoch from the user's model (only with a bias)
``teacher_pred``        the teacher's training-split predictions (the distillation target; not with
                        ``--recovery-distill none``)
``student``             OMP-gradient head+neuron cut at the chosen level on the teacher's weights,
                        then a recovery twice the recipe's epochs (``--recovery-factor``) or of
                        ``--recovery-epochs`` (PoE, CE without bias; + KD at T 2 or
                        ``--recovery-distill``; lr 5e-5)
``export``              the student baked and shrunk; ONNX (and INT8) graphs for those runtimes
``shipped``             the exported file re-scored as shipped, under ``--runtime``
``attack``              ``charswap`` on a fixed sample of the dev split: dense, teacher, student
``bench``               dense vs the export, interleaved, at ``--batch`` x ``--length``
======================= =========================================================================

Then the gates (:mod:`srnet.experiments.verbs.compress_gates`) and the card (``<out>/model``).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import Field

from srnet.config import Recipe
from srnet.errors import NeedsOption, SrnetError
from srnet.experiments.sweep.stages import Stage, get_stage, register_stage
from srnet.experiments.verbs.compress_config import (
    DISTILLATION,
    LOCK,
    RESULT_FILE,
    SIZING_FILE,
    CompressConfig,
    CompressResult,
    Source,
)
from srnet.export.runtimes import auto_runtime, bench_runtime, runtime_quantize


def resolve_source(model: str, recipe: Any, overrides: list[str] | None) -> Source:
    """The user's model (a run folder, whose recorded recipe supplies the data, or any Hugging Face
    folder or id with ``recipe``) and its base recipe: evaluation only, last checkpoint."""
    from srnet.config import as_recipe, load_run_recipe
    from srnet.models.loading import check_model_source, resolve_model_name
    from srnet.rundir.layout import RunDir

    run = RunDir(Path(model))
    if run.model.is_dir():
        base = as_recipe(recipe, overrides) if recipe is not None else load_run_recipe(run.config, overrides)
        start, weights = {"model.init_from": str(model)}, run.model
    else:
        if recipe is None:
            raise SrnetError(f"{model}: not an srnet run folder; give --recipe (or data flags) for its data")
        check_model_source(model)
        base = as_recipe(recipe, overrides)
        start, weights = {"model.name": model, "model.init_from": None}, Path(resolve_model_name(model))
    data = base.model_dump(mode="json")
    if data["data"].get("train") is None:
        raise SrnetError(f"{model}: the recipe has no data.train; compress trains a teacher and a student")
    for key in ("pruning", "objective", "bias_dir", "dense_reference", "tags"):
        data.pop(key, None)
    data["loss"] = {"name": "ce"}
    data["training"] = {**data["training"], "select": "last", "eval_every": None}
    data.pop("name", None)
    data.pop("output_dir", None)
    return Source(model, data, start, weights)


def check_family(source: Source) -> str:
    """The model's family, when ``--shrink`` supports it; one line naming what is possible instead."""
    from transformers import AutoConfig

    from srnet.models.families import shrinkable

    try:
        family = AutoConfig.from_pretrained(source.weights, local_files_only=True).model_type
    except (OSError, ValueError):
        family = "unknown"
    if family not in shrinkable():
        raise SrnetError(
            f"{source.model}: srnet cannot shrink a '{family}' model (shrinkable: "
            f"{', '.join(shrinkable())}); instead: INT8 of the dense or an unstructured "
            "model (srnet export --onnx --quantize int8)"
        )
    return family


def bias_setting(bias: str | None, source: Source) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(recipe keys, the bias_fit stage or None) for ``--bias``; a bias file is checked against the
    training split's ids before anything runs."""
    from srnet.bias.features import FEATURES

    if bias is None:
        return {}, None
    if bias in FEATURES:
        return {"bias.feature": bias, "bias_dir": "@bias_fit"}, {"kind": "bias_fit"}
    path = Path(bias)
    if path.is_dir():
        file, keys = path / "train.jsonl", {"bias_dir": str(path)}
    elif path.is_file():
        file, keys = path, {"loss.bias_predictions": str(path)}
    else:
        raise SrnetError(
            f"--bias {bias}: neither a bias feature ({', '.join(FEATURES)}) nor a bias folder or file"
        )
    _check_bias_ids(file, source)
    return keys, None


def _check_bias_ids(file: Path, source: Source) -> None:
    from srnet.bias.predictions import load_bias_log_probs
    from srnet.config import recipe_from_dict
    from srnet.experiments.run.data import data_base_dir
    from srnet.tasks import get_task
    from srnet.tasks.loading import load_examples

    recipe = recipe_from_dict({**source.recipe, "name": "compress"})
    task = get_task(recipe.task)
    examples = load_examples(task, recipe.data.train, base_dir=data_base_dir(recipe))
    try:
        load_bias_log_probs(file, [ex.id for ex in examples], len(task.labels), task.labels)
    except SrnetError as exc:
        raise SrnetError(f"--bias {file}: does not match the training data ({exc})") from None


def size_to_machine(
    source: Source, config: CompressConfig, progress: Callable[[str], None] = print
) -> dict[str, Any]:
    """Time the dense model and each level's shrunk model (OMP masks: the shape is what counts) on
    this machine, and pick the smallest level whose speed-up beats the target by the margin."""
    import torch

    from srnet.experiments.verbs.bench import BenchConfig
    from srnet.experiments.verbs.bench_timing import load_candidate, omp_variants, run_bench

    started, before = time.perf_counter(), torch.get_num_threads()
    bench_config = BenchConfig(
        batch_sizes=[config.batch],
        lengths=[config.length],
        rounds=config.rounds,
        warmup=1,
        threads=config.threads,
        onnx=config.runtime != "torch",
        quantize=runtime_quantize(config.runtime),
        runtimes=[config.runtime],
    )
    progress(
        f"sizing: timing the dense model and {len(config.levels)} shrunk levels "
        f"(batch {config.batch} x {config.length}, {config.threads} thread(s), {config.runtime})"
    )
    try:
        torch.set_num_threads(config.threads)
        dense = load_candidate(str(source.weights))
        variants = omp_variants(dense, config.levels, granularities=("head+neuron",))
        baseline = replace(dense, onnx=False)  # dense PyTorch FP32: its graphs would go unused
        result = run_bench([baseline, *variants], bench_config)
    finally:
        torch.set_num_threads(before)
    wanted = bench_runtime(config.runtime)
    curve = [
        {"level": level, "speedup": row["speedup"], "latency_ms": row["latency_ms"]}
        for level, variant in zip(config.levels, variants, strict=True)
        for row in result["rows"]
        if row["model"] == variant.label and row["runtime"] == wanted
    ]
    needed = None if config.speedup is None else config.speedup * (1 + config.margin)
    level = config.sparsity
    if needed is not None:
        level = next((p["level"] for p in curve if p["speedup"] >= needed), None)
        if level is None:
            best = max(curve, key=lambda p: p["speedup"])
            raise SrnetError(
                f"--speedup {config.speedup:g}: not reachable on this machine ({config.runtime}, "
                f"batch {config.batch} x {config.length}, {config.threads} thread(s)): the "
                f"fastest level timed ({best['level']:.0%}) gives {best['speedup']:.2f}x"
            )
    return {
        "curve": curve,
        "level": level,
        "needed": needed,
        "runtime": config.runtime,
        "environment": result["environment"],
        "warnings": result["warnings"],
        "elapsed_s": round(time.perf_counter() - started, 1),
    }


def compress_sweep(source: Source, level: float, config: CompressConfig, out: Path) -> dict[str, Any]:
    """The pipeline as a sweep dict (output in ``<out>/stages``)."""
    bias_keys, bias_stage = bias_setting(config.bias, source)
    base = {**source.recipe}
    base_set = {k: v for k, v in bias_keys.items() if k == "bias.feature"}
    shared = {k: v for k, v in bias_keys.items() if k != "bias.feature"}
    stages: dict[str, Any] = {}
    if bias_stage is not None:
        stages["bias_fit"] = bias_stage
    stages["dense"] = {"kind": "evaluate", "set": {**shared, **source.start, "tags.paradigm": "dense"}}
    teacher = "@dense"
    debias = config.bias is not None
    if debias:
        stages["teacher"] = {
            "kind": "train",
            "set": {
                **shared,
                "model.init_from": "@dense",
                "dense_reference": "@dense",
                "loss.name": "poe",
                "tags.paradigm": "dense",
            },
        }
        teacher = "@teacher"
    distil = config.recovery_distill != "none"  # without distillation nothing reads the predictions
    if distil:
        stages["teacher_pred"] = {"kind": "predict", "with": {"run": teacher, "split": "train"}}
    loss = {
        "name": "poe" if debias else "ce",
        **({"teacher": "@teacher_pred"} if distil else {}),
        **(
            {"bias_predictions": shared.pop("loss.bias_predictions")}
            if "loss.bias_predictions" in shared
            else {}
        ),
    }
    stages["student"] = {
        "kind": "train",
        "set": {
            **shared,
            "model.init_from": teacher,
            "dense_reference": "@dense",
            "loss": loss,
            "objective": DISTILLATION[config.recovery_distill],
            "training.lr": 5.0e-5,
            "training.warmup_ratio": 0.0,
            **recovery_length(config, source.recipe["training"]),
            "pruning": {
                "method": "omp",
                "sparsity": level,
                "granularity": "head+neuron",
                "params": {"importance": "gradient"},
            },
            "tags.paradigm": "structured",
        },
    }
    onnx = config.runtime != "torch"
    quantize = runtime_quantize(config.runtime)
    stages["export"] = {
        "kind": "export",
        "with": {"run": "@student", "shrink": True, "onnx": onnx, "quantize": quantize},
    }
    stages["shipped"] = {
        "kind": "evaluate",
        "set": {
            **shared,
            "model.name": "@export",
            "model.init_from": None,
            "evaluation.runtime": config.runtime,
            "tags.paradigm": "structured",
        },
    }
    attack_split = id_split(source)
    if config.attack_n and attack_split is not None:
        runs = ["@dense", *(["@teacher"] if debias else []), "@student"]
        stages["attack"] = {
            "kind": "attack",
            "with": {
                "runs": runs,
                "attacks": ["charswap"],
                "split": attack_split,
                "n": config.attack_n,
                "seed": 0,
            },
        }
    stages["bench"] = {
        "kind": "bench",
        "with": {
            "models": [str(source.weights), "@export"],
            "batch_sizes": [config.batch],
            "lengths": [config.length],
            "threads": config.threads,
            "rounds": config.rounds,
            "onnx": onnx,
            "quantize": quantize,
            "runtimes": [config.runtime],
        },
    }
    base.update({"output_dir": str(out / "stages")})
    if "bias.feature" in base_set:
        base["bias"] = {**(base.get("bias") or {}), "feature": base_set["bias.feature"]}
    return {"name": "compress", "output_dir": str(out / "stages"), "base": base, "stages": stages, "grid": {}}


def recovery_length(config: CompressConfig, training: dict[str, Any]) -> dict[str, Any]:
    """The student's ``training.*`` keys that set its recovery's length: ``--recovery-epochs``, else
    ``--recovery-factor`` times the recipe's ``training`` (its max_steps where set, else its epochs)."""
    if config.recovery_epochs:
        return {"training.epochs": config.recovery_epochs, "training.max_steps": None}
    if config.recovery_factor == 1:
        return {}
    if training.get("max_steps"):
        return {"training.max_steps": max(1, round(training["max_steps"] * config.recovery_factor))}
    return {"training.epochs": training["epochs"] * config.recovery_factor, "training.max_steps": None}


def id_split(source: Source) -> str | None:
    """The split the attack runs on: ``dev``, else the first eval split (None without either)."""
    from srnet.config import recipe_from_dict
    from srnet.tasks import split_name

    data = recipe_from_dict({**source.recipe, "name": "compress"}).data
    if data.dev is not None:
        return "dev"
    return split_name(data.eval[0]) if data.eval else None


ATTACK_FORWARDS = 50
"""Model inputs ``charswap`` scores per attacked example (measured: 600 attacked synthetic pairs in
97 s, about 50 inputs each at the probe's per-input cost)."""


def estimate_seconds(source: Source, sweep: dict[str, Any], config: CompressConfig) -> dict[str, float]:
    """The plan's time on this machine, from a short timed probe: training steps and forward passes
    of the user's model on real training batches, four of each, formed as training and evaluation
    form them (length-grouped training batches in the recipe's precision, length-sorted FP32
    evaluation batches of ``training.eval_batch_size``) and taken at the quartile midpoints of
    their padded length (see :func:`probe_batches` and :func:`_timed`), and one forward pass at the
    timing's batch x length; the probe's optimizer has lr 0, so nothing is trained."""
    import numpy as np
    import torch

    from srnet.config import recipe_from_dict
    from srnet.experiments.run.data import data_base_dir
    from srnet.models.loading import load_classifier, load_tokenizer
    from srnet.tasks import get_task
    from srnet.tasks.loading import load_examples
    from srnet.training.data import Collator, EncodedDataset, LengthGroupedBatchSampler, model_inputs
    from srnet.training.loop import total_steps
    from srnet.training.precision import resolve_mixed_precision

    recipe = recipe_from_dict({**source.recipe, "name": "probe"})
    task = get_task(recipe.task)
    base_dir = data_base_dir(recipe)
    train = load_examples(task, recipe.data.train, base_dir=base_dir)
    n_dev = len(load_examples(task, recipe.data.dev, base_dir=base_dir)) if recipe.data.dev is not None else 0
    n_eval = n_dev + sum(
        len(load_examples(task, s, base_dir=base_dir)) for s in [*recipe.data.eval, *recipe.data.challenge]
    )
    batch = recipe.training.batch_size
    model = load_classifier(str(source.weights), task.labels)
    tokenizer = load_tokenizer(str(source.weights), recipe.model.max_length)
    dataset = EncodedDataset(train, tokenizer, recipe.model.max_length)
    collate = Collator(tokenizer)
    grouped = LengthGroupedBatchSampler(dataset.lengths, batch, recipe.seed, recipe.training.group_by_length)
    by_length = np.argsort(-np.asarray(dataset.lengths), kind="stable").tolist()
    eval_batch = recipe.training.eval_batch_size
    sorted_batches = [by_length[i : i + eval_batch] for i in range(0, len(by_length), eval_batch)]
    train_batches, forward_batches = (
        [collate([dataset[i] for i in b]) for b in probe_batches(batches, dataset.lengths)]
        for batches in (list(grouped), sorted_batches)
    )
    bf16 = resolve_mixed_precision(recipe.training.mixed_precision) == "bf16"
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.0)  # lr 0: the probe changes no weight

    def step(inputs: dict) -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(**model_inputs(model, inputs), labels=inputs["labels"]).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    def forward(inputs: dict) -> None:  # in FP32, as evaluation and predictions run
        with torch.inference_mode():
            model(**model_inputs(model, inputs))

    step_s, forward_s = _timed(step, train_batches), _timed(forward, forward_batches)
    vocab = int(model.config.vocab_size)
    timing = {
        "input_ids": torch.randint(min(1000, vocab - 1), vocab, (config.batch, config.length)),
        "attention_mask": torch.ones(config.batch, config.length, dtype=torch.long),
    }
    with torch.inference_mode():
        started = time.perf_counter()
        model(**timing)
        timing_s = time.perf_counter() - started
    stages = sweep["stages"].values()
    trained = [_stage_training(recipe.training, s["set"]) for s in stages if s["kind"] == "train"]
    train_steps = sum(total_steps(cfg, len(train)) * cfg.grad_accum for cfg in trained)
    dev_evaluations = sum(_dev_evaluations(cfg, len(train)) for cfg in trained) if n_dev else 0
    evaluations = sum(1 for s in stages if s["kind"] in ("train", "evaluate"))
    train_s = train_steps * step_s

    def batches_of(n: int) -> int:
        return math.ceil(n / eval_batch)

    predict_s = batches_of(len(train)) * forward_s * sum(1 for s in stages if s["kind"] == "predict")
    eval_s = (evaluations * batches_of(n_eval) + dev_evaluations * batches_of(n_dev)) * forward_s
    attack = sweep["stages"].get("attack")
    per_input_s = forward_s / eval_batch
    attack_s = len(attack["with"]["runs"]) * config.attack_n * ATTACK_FORWARDS * per_input_s if attack else 0
    bench_s = 2 * (config.rounds + 1) * timing_s
    total = train_s + predict_s + eval_s + attack_s + bench_s
    return {
        "train_s": train_s,
        "predict_s": predict_s,
        "eval_s": eval_s,
        "attack_s": attack_s,
        "bench_s": bench_s,
        "total_s": total,
        "step_s": step_s,
        "forward_s": forward_s,
        "train_steps": train_steps,
        "dev_evaluations": dev_evaluations,
    }


def _stage_training(training: Any, overrides: dict[str, Any]) -> Any:
    """The recipe's training section with a train stage's ``training.*`` keys applied
    (``--recovery-epochs`` on the student)."""
    keys = {k.removeprefix("training."): v for k, v in overrides.items() if k.startswith("training.")}
    return training.model_copy(update=keys)


def _dev_evaluations(training: Any, n_train: int) -> int:
    """Dev-split evaluations during a train stage: every ``eval_every`` optimizer steps (default:
    once per epoch) and at the last step, as the training loop does them."""
    from srnet.training.loop import eval_interval, total_steps

    every = eval_interval(training, math.ceil(n_train / training.batch_size))
    return math.ceil(total_steps(training, n_train) / every)


def probe_batches(batches: list[list[int]], lengths: list[int]) -> list[list[int]]:
    """Four of ``batches`` (lists of example indices), at the midpoints of the quartiles of their
    padded length (the longest example in each): their mean cost stands for the mean batch's."""
    ordered = sorted(batches, key=lambda b: max(lengths[i] for i in b))
    return [ordered[min(int(q * len(ordered)), len(ordered) - 1)] for q in (0.125, 0.375, 0.625, 0.875)]


def _timed(call: Callable[[dict], None], batches: list[dict]) -> float:
    """Mean seconds of ``call`` over ``batches``, timed on a second pass after a first that warms
    each batch's shape up (a shape's first call allocates and builds its kernels)."""
    for inputs in batches:
        call(inputs)
    started = time.perf_counter()
    for inputs in batches:
        call(inputs)
    return (time.perf_counter() - started) / len(batches)


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
    progress: Callable[[str], None] = print,
) -> CompressResult:
    """The verb behind ``srnet compress``, :func:`srnet.api.compress` and the ``compress`` stage."""
    from srnet.experiments.demo import set_aside
    from srnet.experiments.sweep.execute import execute
    from srnet.experiments.sweep.plan import describe_plan, plan_sweep, record_sweep
    from srnet.experiments.verbs.compress_gates import finish
    from srnet.io import atomic_write_json, check_creatable, read_yaml
    from srnet.rundir import locks

    out = Path(out)
    if not str(out).strip() or out.resolve() == Path.cwd().resolve():
        raise SrnetError(f"--out {str(out)!r}: give a new folder for the compressed model")
    source = resolve_source(model, recipe, overrides)
    if out.resolve() in [source.weights.resolve(), *source.weights.resolve().parents]:
        raise SrnetError(f"--out {out}: holds the model being compressed ({model}); give another folder")
    check_family(source)
    auto, why = auto_runtime()
    progress(f"runtime: {config.runtime}" + (f" (what --runtime auto picks here: {why})"
                                              if config.runtime == auto else ""))
    if config.runtime != "torch":
        from srnet.export.onnx import require_onnx

        require_onnx()
    check_creatable(out, "--out")
    if (out / RESULT_FILE).is_file() and not overwrite and not dry_run:
        raise NeedsOption(f"{out}: already holds a finished compression ({out / RESULT_FILE})", "overwrite")
    if (out / SIZING_FILE).is_file() and not (resume or overwrite or dry_run):
        raise NeedsOption(f"{out}: holds an unfinished compression", "resume", "overwrite")
    ours = {RESULT_FILE, SIZING_FILE}.union(*({name, f".{name.lstrip('.')}.guard"}  # a sweep stage's lock too
                                               for name in (LOCK, locks.STAGE_LOCK)))
    foreign = [p.name for p in out.iterdir() if p.name not in ours] if out.is_dir() else []
    if foreign and not ((out / SIZING_FILE).is_file() or (out / RESULT_FILE).is_file()):
        raise SrnetError(f"--out {out}: not empty ({foreign[0]}, ...) and not an srnet compress folder; "
                         "give a new or empty folder (--overwrite never replaces what srnet did not write)")
    lock = None if dry_run else locks.acquire(out, LOCK)
    if lock is not None and lock.token is None:
        raise SrnetError(f"--out {out}: in use by {lock.note}")
    try:
        with set_aside(out if overwrite and not dry_run and (out / SIZING_FILE).is_file() else None):
            sizing = _sizing(source, config, out, resume and not overwrite, dry_run, progress)
            level = sizing["level"]
            sweep = compress_sweep(source, level, config, out)
            jobs = plan_sweep(sweep, "compress")
            if dry_run:
                estimate = estimate_seconds(source, sweep, config)
                sizing_s = sizing.get("elapsed_s", 0.0)  # the run sizes again, as this dry run did
                lines = [
                    f"level: {level:.0%} of the heads and FFN neurons of every layer",
                    *describe_plan(jobs),
                    f"estimate on this machine: {(sizing_s + estimate['total_s']) / 60:.1f} min "
                    f"(sizing {sizing_s / 60:.1f} min, {estimate['train_steps']} training steps at "
                    f"{estimate['step_s']:.2f} s)",
                ]
                for line in lines:
                    progress(line)
                return CompressResult(out, level, lines, sizing_s + estimate["total_s"])
            atomic_write_json(out / SIZING_FILE, sizing)
            record_sweep(sweep, out / "stages", resume=(out / "stages" / "sweep.yaml").is_file())
            result = execute(jobs, out / "stages", progress=progress)
            for job in jobs:
                if job.key in result.failed:
                    raise SrnetError(f"compress stage '{job.label}' failed: {result.failed[job.key]}")
            outputs = {job.name: _output(job) for job in jobs}
            record = finish(
                source,
                config,
                sizing,
                outputs,
                read_yaml(out / "stages" / "sweep.yaml"),
                out,
                elapsed_s=sizing.get("elapsed_s", 0.0) + stage_seconds(out / "stages", {j.key for j in jobs}),
                peak_rss_mb=peak_memory_mb(jobs),
            )
            return CompressResult(out, level, record=record)
    finally:
        if lock is not None and lock.token is not None:
            locks.release(out, lock.token, LOCK)


def _sizing(
    source: Source,
    config: CompressConfig,
    out: Path,
    resume: bool,
    dry_run: bool,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """The recorded sizing on resume (a resumed run keeps its level), else a fresh one."""
    recorded = out / SIZING_FILE
    if resume and recorded.is_file():
        sizing = json.loads(recorded.read_text(encoding="utf-8"))
        progress(f"sizing: {recorded} (level {sizing['level']:.0%})")
        return sizing
    if config.speedup is None:
        return {"curve": [], "level": config.sparsity, "needed": None, "runtime": config.runtime}
    sizing = size_to_machine(source, config, progress)
    for point in sizing["curve"]:
        progress(f"  {point['level']:.0%}: {point['speedup']:.2f}x")
    progress(f"sizing: {sizing['level']:.0%} is the smallest level at >= {sizing['needed']:.2f}x")
    return sizing


def _output(job) -> str:

    stage = get_stage(job.kind)
    return str(stage.output(job.folder, stage.params_model.model_validate(job.params)))


def stage_seconds(stages: Path, keys: set[str]) -> float:
    """The wall time of the stages ``keys``, each from its last start to its done in the sweep's
    event log: a resumed compression counts each stage once, however often it was interrupted (a
    line a kill cut short is skipped)."""
    from srnet.experiments.sweep.execute import EVENTS

    started: dict[str, datetime] = {}
    seconds = 0.0
    for line in (stages / EVENTS).read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(event, dict) or event.get("key") not in keys:
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

    recorded = [json.loads((job.folder / COMPLETE).read_text(encoding="utf-8")).get("peak_rss_mb") or 0.0
                for job in jobs if (job.folder / COMPLETE).is_file()]
    return max([peak_rss_mb(), *recorded])


class CompressParams(CompressConfig):
    model: str = Field(description="the fine-tuned model: a run folder or '@stage', or a Hugging Face "
                       "folder or id")


@register_stage("compress")
class CompressStage(Stage):
    """``srnet compress`` of ``model`` with the stage's recipe as its data (a run folder's own recipe
    is not used): sized, trained, exported, gated and carded in ``<folder>``; a failed gate is
    recorded in ``compress.json`` (``passed``), not a failed stage."""

    params_model = CompressParams

    def output(self, folder: Path, params: CompressParams) -> Path:
        return folder / "model"

    def run(self, recipe: Recipe, params: CompressParams, folder: Path) -> None:
        """Compress (unless killed after the result was written), then print what ``srnet
        compress`` prints: every model's figures, the speed and each gate."""
        from srnet.experiments.verbs.compress import compress_summary

        if not (folder / RESULT_FILE).is_file():
            config = CompressConfig(**params.model_dump(exclude={"model"}))
            compress(params.model, config, recipe=recipe, out=folder, resume=True)
        print(f"{folder}:\n{compress_summary(read_result(folder))}")


def read_result(folder: Path) -> dict[str, Any]:
    """The ``compress.json`` of a finished compression in ``folder``; a file that is not one is a
    one-line error naming it (deleting it and resuming rescores and regates the kept stages)."""
    path = folder / RESULT_FILE
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise SrnetError(f"{path}: unreadable compression record ({type(exc).__name__}); delete it and "
                         "resume to rescore the kept stages") from None
    needed = ("figures", "speed", "level", "elapsed_s", "peak_rss_mb", "gates", "passed")
    if not isinstance(record, dict) or any(key not in record for key in needed):
        raise SrnetError(f"{path}: not a compression record (needs {', '.join(needed)}); delete it and "
                         "resume to rescore the kept stages")
    return record
