"""Run one recipe end to end: data + backbone -> (bias extras) -> train/prune -> evaluate -> run dir.

``run_recipe`` is what ``srnet run``, ``srnet finetune`` and ``srnet demo`` call.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from accelerate.utils import set_seed

from srnet.config import Recipe, dump_recipe, load_recipe
from srnet.errors import SrnetError
from srnet.evaluation.mask_analysis import mask_movement
from srnet.evaluation.predict import predict_logits
from srnet.experiments.data import RunData, load_run_data
from srnet.experiments.evaluate import evaluate_splits, f_bias_block
from srnet.experiments.rundir import RunDir, environment
from srnet.experiments.sweep import stage_refs
from srnet.export import bake_masks, export_model
from srnet.io import atomic_write_json, atomic_write_text
from srnet.losses import build_loss
from srnet.models import (
    DEFAULT_ROLES,
    classify_weight,
    default_device,
    find_prunable,
    load_classifier,
    load_tokenizer,
)
from srnet.pruning import build_method
from srnet.pruning.base import PruningMethod
from srnet.report import plot_sparsity_heatmap
from srnet.sparsity.mask_io import MaskMetadata, model_fingerprint, save_masks
from srnet.sparsity.tickets import SCORES_FILENAME, save_scores
from srnet.tasks import Task, get_task, split_name
from srnet.tasks.base import Example
from srnet.tasks.spec import DataSpec
from srnet.tasks.text import TASK as TEXT_TASK
from srnet.training.data import EncodedDataset
from srnet.training.loop import DevMetric, Trainer, is_main_process
from srnet.training.objectives import build_objective
from srnet.training.precision import resolve_mixed_precision
from srnet.training.pretraining import Pretraining


@dataclass
class RunResult:
    """What a finished run produced."""

    run_dir: Path
    metrics: dict = field(default_factory=dict)


@dataclass
class Prepared:
    """Everything a run needs, resolved and checked before its folder is touched."""

    source: str
    tokenizer: object
    model: torch.nn.Module
    method: PruningMethod
    loss: object | None
    extras: dict[str, np.ndarray]


def run_recipe(recipe: Recipe, *, resume: bool = False, overwrite: bool = False) -> RunResult:
    """Execute ``recipe`` and write its run directory; returns the directory and metrics.

    Nothing is created or deleted until the recipe is fully checked (:func:`preflight`).  With
    ``overwrite`` the new run is written into a hidden sibling folder and swapped in only once
    it has completed, so a failed or killed new run leaves the old one intact.
    """
    target = RunDir(Path(recipe.output_dir) / recipe.name)
    task = get_task(recipe.task)
    check_runnable(recipe, target, resume=resume, overwrite=overwrite)
    main = is_main_process()  # multi-process runs: only rank 0 writes the run directory
    if task.name == TEXT_TASK.name:  # task-agnostic mask training on raw text
        from srnet.experiments.tamt import execute_text, prepare_text

        text = prepare_text(recipe)

        def execute(run: RunDir, resume: bool) -> dict:
            return execute_text(recipe, text, run, resume=resume)
    else:
        if isinstance(build_objective(recipe.objective.name, recipe.objective.params), Pretraining):
            raise SrnetError(f"objective '{recipe.objective.name}' trains on raw text (task: text), "
                             f"not on task {task.name}")
        data = load_run_data(recipe, task)
        ready = preflight(recipe, task, data)

        def execute(run: RunDir, resume: bool) -> dict:
            return _execute(recipe, task, data, ready, run, resume=resume, main=main)
    run = target.staging() if overwrite else target
    if main:
        if overwrite:
            shutil.rmtree(run.root, ignore_errors=True)
        run.root.mkdir(parents=True, exist_ok=True)
        atomic_write_text(run.config, dump_recipe(recipe))
        atomic_write_json(run.environment, environment())
    metrics = execute(run, resume and not overwrite)
    if overwrite and main:
        run.replace(target)
    return RunResult(target.root, metrics)


def preflight(recipe: Recipe, task: Task, data: RunData) -> Prepared:
    """Build the loss and method, read every file they need and load the model: any bad input
    fails here, before the run folder is created."""
    loss = extras = None
    if data.train is not None:
        loss = build_loss(recipe.loss.name, recipe.loss.params)
        extras = loss_extras(recipe, task, loss, data.train)
    method = build_method(recipe.pruning, recipe.seed)
    resolve_mixed_precision(recipe.training.mixed_precision)  # e.g. bf16 on a CPU without it
    selection_split(recipe, data)  # training.select_on names a split of the recipe
    check_easy_hard(recipe, data)
    if data.train is None and method.needs_data:
        how = " (importance 'gradient')" if method.calibrates else ""
        raise SrnetError(f"pruning method '{recipe.pruning.method}'{how} needs data.train to find its mask")
    set_seed(recipe.seed)
    source = str(RunDir(Path(recipe.model.init_from)).model) if recipe.model.init_from else recipe.model.name
    tokenizer = load_tokenizer(source)
    model = load_classifier(source, task.labels)
    method.check(model)  # e.g. fixed: its mask file is readable, fits this model and its granularity
    return Prepared(source, tokenizer, model, method, loss, extras or {})


def _execute(
    recipe: Recipe, task: Task, data: RunData, ready: Prepared, run: RunDir, *, resume: bool,
    main: bool = True,
) -> dict:
    """Train (or only prune), evaluate and export into ``run``; return the metrics (on a rank
    other than 0 of a multi-process run: train only, and return no metrics)."""
    started = time.perf_counter()
    source, tokenizer, model, method = ready.source, ready.tokenizer, ready.model, ready.method
    masks = None
    best_step = None
    if data.train is not None:
        train_set = EncodedDataset(data.train, tokenizer, recipe.model.max_length, ready.extras)
        selected_on = selection_split(recipe, data)
        dev_metric = _dev_metric(recipe, task, tokenizer, selected_on) if selected_on else None
        trainer = Trainer(
            model, tokenizer, train_set, recipe.training, ready.loss, run,
            seed=recipe.seed, method=method, dev_metric=dev_metric,
            objective=build_objective(recipe.objective.name, recipe.objective.params),
            mask_metadata=lambda m: _mask_metadata(recipe, method, source, model, m),
        )
        state = trainer.train(resume=resume)
        best_step = state.best_step
        masks = trainer.load_best()
        model = trainer.trained_model()
        method.freeze()
        trained = {"mixed_precision": trainer.precision,
                   "selection": _selection_block(recipe, selected_on, best_step, trainer.steps)}
        if not main:  # the other ranks trained in step with rank 0, which evaluates and writes
            return {}
    else:
        model.to(default_device())
        trained = {}
    if data.train is None:
        method.prepare(model, 1)
        method.freeze()
        masks = method.masks()

    final = bake_masks(model, masks) if masks else model
    final.eval()
    if masks:
        probe = (data.dev[1] if data.dev else data.train or [])[:16]
        check_baked_model(model, final, tokenizer, probe, recipe.model.max_length)
    metrics = {
        "run": recipe.name,
        "task": task.name,
        "model": source,
        "seed": recipe.seed,
        "best_step": best_step,
        **trained,
    }
    id_sets = ([data.dev] if data.dev else []) + data.evals
    metrics.update(evaluate_splits(final, tokenizer, task, id_sets, data.challenges, recipe, run))
    for kind in ("id", "ood"):
        for name, block in metrics[kind].items():
            if data.skipped.get(name):
                block["skipped_no_gold_label"] = data.skipped[name]
    metrics["sparsity"] = _sparsity_block(masks, recipe, final)
    record_mask_movement(recipe, run, method, masks, metrics)
    if recipe.dense_reference:
        metrics["f_bias"] = f_bias_block(metrics, Path(recipe.dense_reference))
    metadata = _mask_metadata(recipe, method, source, model, masks) if masks else None
    if masks:
        save_masks(run.masks, masks, metadata)
        scores = method.scores()
        if scores:
            save_scores(run.root / SCORES_FILENAME, scores, metadata)
        if any(layer is not None for _, layer in map(classify_weight, masks)):
            plot_sparsity_heatmap(masks, run.root / "sparsity_heatmap.png", title=f"{recipe.name}: sparsity")
    export_model(model, masks or {}, tokenizer, run.model, metadata=metadata, overwrite=True)
    metrics["time_s"] = round(time.perf_counter() - started, 1)
    atomic_write_json(run.metrics, metrics)  # its presence means 'complete'
    shutil.rmtree(run.checkpoints, ignore_errors=True)
    return metrics


def check_runnable(recipe: Recipe, run: RunDir, *, resume: bool, overwrite: bool) -> None:
    """Refuse, before any work, what would waste or destroy a run."""
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
    check_output_folder(run.root)
    mask_file = recipe.pruning.mask_file
    if mask_file and not Path(mask_file).exists():
        raise SrnetError(f"pruning.mask_file: {mask_file} not found")
    run.check_free(resume=resume, overwrite=overwrite)
    if overwrite:
        return
    if resume and run.complete:
        raise SrnetError(f"{run.root} is already complete (metrics.json exists); nothing to resume")
    if resume and run.config.is_file() and load_recipe(run.config).fingerprint() != recipe.fingerprint():
        raise SrnetError(f"{run.config}: --resume with a different recipe than the one this run started with")


def check_output_folder(folder: Path) -> None:
    """The run folder can be created and written: no file on its path, and the nearest existing
    folder above it writable (checked before any data or model loads)."""
    for parent in [folder, *folder.parents]:
        if parent.exists():
            if not parent.is_dir():
                raise SrnetError(f"output_dir: cannot create {folder}: {parent} is a file")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise SrnetError(f"output_dir: cannot write in {parent} (permission denied)")
            return


def check_baked_model(masked, baked, tokenizer, probe: list[Example], max_length: int) -> None:
    """Refuse to export unless the baked model gives the masked model's logits on a probe batch."""
    if not probe:
        return
    masked.eval()
    a = predict_logits(masked, tokenizer, probe, max_length=max_length)
    b = predict_logits(baked, tokenizer, probe, max_length=max_length)
    gap = float(np.abs(a - b).max())
    if gap > 1e-4:
        raise RuntimeError(f"internal error: baked model differs from the masked model by {gap:.2e}")


def selection_split(recipe: Recipe, data: RunData) -> tuple[DataSpec, list[Example]] | None:
    """The split whose primary metric picks the best checkpoint (``training.select_on``, default
    data.dev); None when nothing is selected on (``select: last`` or no dev split)."""
    if recipe.training.select == "last" or data.train is None:
        return None
    wanted = recipe.training.select_on
    if wanted is None:
        return data.dev
    splits = ([data.dev] if data.dev else []) + data.evals + data.challenges
    for spec, examples in splits:
        if split_name(spec) == wanted:
            return spec, examples
    names = ", ".join(split_name(spec) for spec, _ in splits) or "none"
    raise SrnetError(f"training.select_on: no split named '{wanted}' in the recipe (splits: {names})")


def check_easy_hard(recipe: Recipe, data: RunData) -> None:
    """``evaluation.easy_hard``: a bias-prediction file for every ID split, before any model loads."""
    if not recipe.evaluation.easy_hard:
        return
    if not recipe.bias_dir:
        raise SrnetError("evaluation.easy_hard: needs bias_dir (a `srnet bias fit` folder, or "
                         "'@<bias_fit stage>' in a sweep)")
    for spec, _ in ([data.dev] if data.dev else []) + data.evals:
        path = Path(recipe.bias_dir) / f"{split_name(spec)}.jsonl"
        if not path.is_file():
            raise SrnetError(f"evaluation.easy_hard: {path} not found (no bias predictions for ID split "
                             f"'{split_name(spec)}'; fit the bias model on a recipe that names it)")


def _selection_block(recipe: Recipe, selected_on, step: int | None, total: int) -> dict:
    """How the run's result was chosen: the rule, the split, the eligibility bound and the step."""
    cfg = recipe.training
    rule = "best" if selected_on else "last"
    return {"rule": rule, "split": split_name(selected_on[0]) if selected_on else None,
            "after": cfg.select_after if selected_on else None, "step": step, "of": total,
            **({} if rule == cfg.select else {"note": "select: best, but no dev split: the last step"})}


def record_mask_movement(recipe: Recipe, run: RunDir, method: PruningMethod, masks, metrics: dict) -> None:
    """``metrics["mask_movement"]`` for a method that learns its mask, and a log entry; one
    warning line when the mask did not move from its start."""
    start = method.start_masks() if masks else None
    if start is None:
        return
    movement = metrics["mask_movement"] = mask_movement(start, masks)
    entry = {"event": "mask_movement", "flipped": movement["flipped"], "jaccard": movement["jaccard"]}
    if not movement["moved"]:
        warning = (f"{recipe.name}: the mask did not move from {method.start_name} "
                   f"({movement['flipped']:.4%} of entries flipped); raise pruning.mask_lr or the budget")
        entry["warning"] = warning
        logging.getLogger("srnet.run").warning(warning)
    with run.log.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")


def _mask_metadata(
    recipe: Recipe, method: PruningMethod, source: str, model: torch.nn.Module, masks
) -> MaskMetadata:
    cfg = recipe.pruning
    return MaskMetadata(
        method=cfg.method,
        base_model=source,
        base_model_fingerprint=model_fingerprint(model, list(masks)),
        recipe_hash=recipe.fingerprint(),
        granularity=method.granularity,  # fixed: its mask's
        target_sparsity=cfg.sparsity,
    )


def _sparsity_block(masks, recipe: Recipe, model: torch.nn.Module) -> dict:
    """Sparsity of the applied masks; without masks, the measured zeros of the prunable weights
    (so evaluating an exported subnetwork reports its real sparsity)."""
    from srnet.evaluation.mask_analysis import sparsity_table

    if masks:
        table = sparsity_table(masks).as_dict()
        table["target"] = recipe.pruning.sparsity
        table["measured_from"] = "masks"
        return table
    zeros = {w.name: w.module.weight.detach() != 0 for w in find_prunable(model, DEFAULT_ROLES)}
    table = sparsity_table(zeros).as_dict()
    table["target"] = None
    table["measured_from"] = "weights"
    return table


def _dev_metric(recipe: Recipe, task: Task, tokenizer, dev: tuple[DataSpec, list[Example]]) -> DevMetric:
    from srnet.evaluation.metrics import evaluate_split

    spec, examples = dev
    scheme = task.scheme(spec.challenge)

    def metric(model: torch.nn.Module) -> float:
        logits = predict_logits(
            model, tokenizer, examples, max_length=recipe.model.max_length,
            batch_size=recipe.training.eval_batch_size,
        )
        return evaluate_split(
            logits, examples, scheme, task.labels, collapse=recipe.evaluation.collapse
        )["primary"]

    return metric


def loss_extras(recipe: Recipe, task: Task, loss, train: list[Example]) -> dict[str, np.ndarray]:
    """Per-example arrays the loss needs (bias log-probs, teacher probs, difficulty), by example id."""
    from srnet.bias import load_bias_log_probs, load_difficulty, load_teacher_probs

    ids = [ex.id for ex in train]
    cfg = recipe.loss
    extras: dict[str, np.ndarray] = {}
    needs = set(loss.requires)
    if "bias_log_probs" in needs:
        path = cfg.bias_predictions
        if path is None and recipe.bias_dir:
            path = str(Path(recipe.bias_dir) / "train.jsonl")
        if not path:
            raise SrnetError(f"loss '{cfg.name}' needs loss.bias_predictions or bias_dir (srnet bias fit)")
        extras["bias_log_probs"] = load_bias_log_probs(path, ids, len(task.labels), labels=task.labels)
    if "teacher_probs" in needs:
        if not cfg.teacher:
            raise SrnetError(f"loss '{cfg.name}' needs loss.teacher (a run directory or predictions file)")
        extras["teacher_probs"] = load_teacher_probs(cfg.teacher, ids, len(task.labels), task=task.name)
    if "difficulty" in needs:
        if not cfg.difficulty:
            raise SrnetError(f"loss '{cfg.name}' needs loss.difficulty (a difficulty file)")
        extras["difficulty"] = load_difficulty(cfg.difficulty, ids)
    return extras
