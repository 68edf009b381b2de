"""The compression as a sweep: its stages (see :mod:`srnet.experiments.compress`) with their
parameters built from each stage kind's typed params, output in ``<out>/stages``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from srnet.experiments.compress.config import ATTACK_DEFAULT, DISTILLATION, CompressConfig
from srnet.experiments.compress.source import Source, bias_setting, dropped_layers, id_split
from srnet.export.runtimes import get_runtime

RECOVERY_LR = 5.0e-5
"""The student's learning rate after the cut."""


def stage_params(kind: str, **values: Any) -> dict[str, Any]:
    """``values`` validated by the ``kind`` stage's params model (a typo or bad value fails here,
    not when the stage runs), as the sweep file writes them."""
    from srnet.experiments.sweep.stages import get_stage

    return get_stage(kind).params_model.model_validate(values).model_dump(mode="json", exclude_unset=True)


def compress_sweep(
    source: Source, level: float, config: CompressConfig, out: Path, attack_n: int | None = None
) -> dict[str, Any]:
    """The pipeline as a sweep dict (output in ``<out>/stages``); at level 0 the student is the
    teacher given the same recovery without a cut (the dense graph ships); ``attack_n`` examples
    attacked (0: none; the run passes the preflight's resolved size, default ``--attack-n`` or
    :data:`ATTACK_DEFAULT`)."""
    if attack_n is None:
        attack_n = ATTACK_DEFAULT if config.attack_n is None else config.attack_n
    bias_keys, bias_stage = bias_setting(config.bias, source)
    shared = {k: v for k, v in bias_keys.items() if k != "bias.feature"}
    bias_file = shared.pop("loss.bias_predictions", None)
    stages: dict[str, Any] = {} if bias_stage is None else {"bias_fit": bias_stage}
    stages["dense"] = {"kind": "evaluate", "set": {**shared, **source.start, "tags.paradigm": "dense"}}
    teacher = "@dense"
    if config.bias is not None:
        loss = {"name": "poe", **({"bias_predictions": bias_file} if bias_file else {})}
        stages["teacher"] = {
            "kind": "train",
            "set": {
                **shared,
                "model.init_from": "@dense",
                "dense_reference": "@dense",
                "loss": loss,
                "tags.paradigm": "dense",
            },
        }
        teacher = "@teacher"
    if config.recovery_distill != "none":  # without distillation nothing reads the predictions
        stages["teacher_pred"] = {
            "kind": "predict",
            "with": stage_params("predict", run=teacher, split="train"),
        }
    student = student_keys(config, source, level, teacher, shared, bias_file)
    stages["student"] = {"kind": "train", "set": student}
    stages.update(artifact_stages(config, source, level, shared, attack_n))
    stages.update(control_stage(config, source, shared))
    base = {**source.recipe, "output_dir": str(out / "stages")}
    if "bias.feature" in bias_keys:
        base["bias"] = {**(base.get("bias") or {}), "feature": bias_keys["bias.feature"]}
    return {"name": "compress", "output_dir": str(out / "stages"), "base": base, "stages": stages, "grid": {}}


def student_keys(
    config: CompressConfig,
    source: Source,
    level: float,
    teacher: str,
    shared: dict[str, Any],
    bias_file: str | None,
) -> dict[str, Any]:
    """The student's recipe keys: ``--drop-layers``, the cut at ``level`` (none at 0) and the recovery."""
    dropped = dropped_layers(source, config.drop_layers)
    loss = {
        "name": "poe" if config.bias is not None else "ce",
        **({"teacher": "@teacher_pred"} if config.recovery_distill != "none" else {}),
        **({"bias_predictions": bias_file} if bias_file else {}),
    }
    keys = {
        **shared,
        "model.init_from": teacher,
        "dense_reference": "@dense",
        "loss": loss,
        "objective": DISTILLATION[config.recovery_distill],
        "training.lr": RECOVERY_LR,
        "training.warmup_ratio": 0.0,
        **recovery_length(config, source.recipe["training"], level),
        "tags.paradigm": "structured" if level or dropped else "dense",
    }
    if dropped:
        keys["model.drop_layers"] = dropped
    if level:
        gradual = {"gradual": config.gradual_cut} if config.gradual_cut else {}
        keys["pruning"] = {
            "method": "omp",
            "sparsity": level,
            "granularity": "head+neuron",
            "params": {"importance": "gradient", **gradual},
        }
    return keys


def artifact_stages(
    config: CompressConfig, source: Source, level: float, shared: dict[str, Any], attack_n: int
) -> dict[str, Any]:
    """export, shipped, attack and bench: the artifact written, re-scored, attacked and timed as
    shipped under ``--runtime``."""
    runtime = get_runtime(config.runtime)
    stages: dict[str, Any] = {
        "export": {
            "kind": "export",
            "with": stage_params("export", run="@student", shrink=bool(level), **runtime.export_flags),
        },
        "shipped": {
            "kind": "evaluate",
            "set": {
                **shared,
                "model.name": "@export",
                "model.init_from": None,
                "evaluation.runtime": runtime.name,
                "tags.paradigm": "structured" if level or config.drop_layers else "dense",
            },
        },
    }
    split = id_split(source)
    if attack_n and split is not None:
        runs = ["@dense", *(["@teacher"] if config.bias is not None else []), "@shipped"]
        stages["attack"] = {
            "kind": "attack",
            "with": stage_params("attack", runs=runs, attacks=["charswap"], split=split, n=attack_n, seed=0),
        }
    if config.length == "auto":  # the dev split's batches at --batch and at 1, as sizing timed them
        shape: dict[str, Any] = {"batch_sizes": sorted({config.batch, 1}, reverse=True), "data_split": split}
    else:
        shape = {"batch_sizes": [config.batch], "lengths": [config.length]}
    stages["bench"] = {
        "kind": "bench",
        "with": stage_params(
            "bench",
            models=[str(source.weights), "@export"],
            threads=config.threads,
            rounds=config.rounds,
            runtimes=[runtime.name],
            **shape,
            **runtime.export_flags,
        ),
    }
    return stages


def control_stage(config: CompressConfig, source: Source, shared: dict[str, Any]) -> dict[str, Any]:
    """Under an INT8 runtime, the reference itself in that runtime with no cut ("debias +
    quantize"): the control every cut must beat to be worth its training (a point of the card's
    frontier; the bench times its shape as the dense model under the runtime)."""
    runtime = get_runtime(config.runtime)
    if not runtime.int8:
        return {}
    model = {"model.init_from": "@teacher"} if config.bias is not None else dict(source.start)
    keys = {**shared, **model, "evaluation.runtime": runtime.name, "tags.paradigm": "dense"}
    return {"reference_runtime": {"kind": "evaluate", "set": keys}}


def recovery_length(config: CompressConfig, training: dict[str, Any], level: float) -> dict[str, Any]:
    """The student's ``training.*`` keys that set its recovery's length after a cut of ``level``:
    ``--recovery-epochs``, else the recovery factor (:meth:`CompressConfig.recovery_factor_at`) times
    the recipe's ``training`` (its max_steps where set, else its epochs)."""
    if config.recovery_epochs:
        return {"training.epochs": config.recovery_epochs, "training.max_steps": None}
    factor = config.recovery_factor_at(level)
    if factor == 1:
        return {}
    if training.get("max_steps"):
        return {"training.max_steps": max(1, round(training["max_steps"] * factor))}
    return {"training.epochs": training["epochs"] * factor, "training.max_steps": None}
