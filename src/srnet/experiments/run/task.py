"""The ``task`` run kind: a classifier on labelled splits.

data + backbone -> (bias extras) -> train/prune -> evaluate on ID and challenge splits -> finish.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from accelerate.utils import set_seed

from srnet.config import Recipe
from srnet.errors import SrnetError
from srnet.evaluation.predict import predict_logits
from srnet.experiments.run.data import RunData, load_run_data
from srnet.experiments.run.evaluate import evaluate_splits, f_bias_block
from srnet.experiments.run.finish import Outcome, finish_run, mask_metadata, sparsity_block
from srnet.experiments.run.kinds import RunKind, register_run_kind
from srnet.export import bake_masks
from srnet.export.onnx import GraphFile, require_onnx, runtime_graphs, runtime_model, verify_export
from srnet.export.runtimes import get_runtime
from srnet.models import check_max_length, default_device, load_classifier, load_tokenizer
from srnet.models.layers import drop_layers
from srnet.pruning import build_method
from srnet.pruning.base import PruningMethod
from srnet.pruning.lifecycle import check_data, prune
from srnet.rundir.layout import RunDir
from srnet.rundir.record import RunMetrics
from srnet.tasks import Task, split_name
from srnet.tasks.base import Example
from srnet.tasks.spec import DataSpec
from srnet.training.data import EncodedDataset
from srnet.training.loop import DevMetric, Trainer
from srnet.training.objectives import Objective
from srnet.training.objectives.pretraining import Pretraining
from srnet.training.precision import resolve_mixed_precision


@dataclass
class Prepared:
    """Everything a task run needs, resolved and checked before its folder is touched."""

    task: Task
    data: RunData
    source: str
    tokenizer: object
    model: torch.nn.Module
    method: PruningMethod
    objective: Objective
    loss: object | None
    extras: dict[str, np.ndarray]
    graphs: dict[str, GraphFile]
    """The ONNX graphs the model ships when it is an srnet export scored as it is (checked)."""


@register_run_kind("task")
class TaskRun(RunKind):
    """Train or prune a classifier on a labelled task; evaluate its ID and challenge splits."""

    def prepare(self, recipe: Recipe, task: Task) -> Prepared:
        """Build the loss and method, read every file they need and load the model: any bad
        input fails here, before the run folder is created."""
        objective = recipe.objective.build()
        if isinstance(objective, Pretraining):
            raise SrnetError(f"objective '{recipe.objective.name}' trains on raw text (task: text), "
                             f"not on task {task.name}")
        data = load_run_data(recipe, task)
        loss = extras = None
        if data.train is not None:
            loss = recipe.loss.build()
            extras = read_training_extras(recipe, task, loss, data.train, objective.requires)
        method = build_method(recipe.pruning, recipe.seed)
        resolve_mixed_precision(recipe.training.mixed_precision)  # e.g. bf16 on a CPU without it
        selection_split(recipe, data)  # training.select_on names a split of the recipe
        check_easy_hard(recipe, data)
        check_data(method, data.train is not None)
        if get_runtime(recipe.evaluation.runtime).needs_onnx:
            require_onnx()  # before any model loads or trains
        set_seed(recipe.seed)
        init_from = recipe.model.init_from
        source = str(RunDir(Path(init_from)).model) if init_from else recipe.model.name
        graphs = scored_graphs(recipe, method, source, data)  # their SHA-256 checked before the model loads
        verify_export(source)  # an export's weights, config and tokenizer, before any is read
        tokenizer = load_tokenizer(source, recipe.model.max_length)
        model = drop_layers(load_classifier(source, task.labels), recipe.model.drop_layers)
        check_max_length(recipe.model.max_length, model)
        method.check(model)  # e.g. fixed: its mask file is readable, fits this model and its granularity
        return Prepared(task, data, source, tokenizer, model, method, objective, loss, extras or {}, graphs)

    def execute(self, recipe: Recipe, prepared: Prepared, run: RunDir, *, resume: bool,
                main: bool) -> RunMetrics:
        started = time.perf_counter()
        ready, task, data = prepared, prepared.task, prepared.data
        tokenizer, model, method = ready.tokenizer, ready.model, ready.method
        masks = best_step = None
        trained: dict = {}
        if data.train is not None:
            train_set = EncodedDataset(data.train, tokenizer, recipe.model.max_length, ready.extras)
            selected_on = selection_split(recipe, data)
            dev_metric = _dev_metric(recipe, task, tokenizer, selected_on) if selected_on else None
            trainer = Trainer(
                model, tokenizer, train_set, recipe.training, ready.loss, run.trainer_files(),
                seed=recipe.seed, method=method, dev_metric=dev_metric,
                objective=ready.objective,
                mask_metadata=lambda m: mask_metadata(recipe, method, ready.source, model, m),
            )
            best_step = trainer.train(resume=resume).best_step
            masks = trainer.load_best()
            model = trainer.trained_model()
            method.freeze()
            trained = {"mixed_precision": trainer.precision,
                       "selection": selection_block(recipe, selected_on, best_step, trainer.steps)}
            if not main:  # the other ranks trained in step with rank 0, which evaluates and writes
                return RunMetrics()
        else:
            model.to(default_device())
            masks = prune(method, model)
        baked = bake_masks(model, masks) if masks else model
        baked.eval()
        if masks:
            probe = (data.dev[1] if data.dev else data.train or [])[:16]
            check_baked_model(model, baked, tokenizer, probe, recipe.model.max_length)
        metrics = {"run": recipe.name, "task": task.name, "model": ready.source, "seed": recipe.seed,
                   "best_step": best_step, **trained}
        id_sets = ([data.dev] if data.dev else []) + data.evals
        evaluated, runtime = runtime_model(baked, recipe.evaluation.runtime, ready.graphs)
        if runtime is not None:
            metrics["runtime"] = runtime
        metrics.update(evaluate_splits(evaluated, tokenizer, task, id_sets, data.challenges, recipe, run))
        for kind in ("id", "ood"):
            for name, block in metrics[kind].items():
                if data.skipped.get(name):
                    block["skipped_no_gold_label"] = data.skipped[name]
        evaluated_only = ready.source if data.train is None else None  # a trained model is its own
        metrics["sparsity"] = sparsity_block(masks, recipe.pruning.sparsity, baked, evaluated_only)
        if recipe.dense_reference:
            metrics["f_bias"] = f_bias_block(metrics, Path(recipe.dense_reference))
        return finish_run(Outcome(recipe, run, method, ready.source, model, baked, masks, tokenizer,
                                  metrics, started))


def scored_graphs(recipe: Recipe, method: PruningMethod, source: str, data: RunData) -> dict[str, GraphFile]:
    """The ONNX graphs ``evaluation.runtime`` scores when ``source`` is an srnet export that ships
    them and the run neither trains nor prunes it (:func:`srnet.export.onnx.shipped_graphs`);
    otherwise none, and the graph is built in memory from the evaluated model."""
    if data.train is not None or method.masks_weights:
        return {}
    return runtime_graphs(source, recipe.evaluation.runtime)


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


def selection_block(recipe: Recipe, selected_on, step: int | None, total: int) -> dict:
    """How the run's result was chosen: the rule, the split, the eligibility bound and the step."""
    cfg = recipe.training
    rule = "best" if selected_on else "last"
    return {"rule": rule, "split": split_name(selected_on[0]) if selected_on else None,
            "after": cfg.select_after if selected_on else None, "step": step, "of": total,
            **({} if rule == cfg.select else {"note": "select: best, but no dev split: the last step"})}


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


def read_training_extras(recipe: Recipe, task: Task, loss, train: list[Example],
                         also: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """Per-example arrays the loss (and, ``also``, the objective) needs (bias log-probs, teacher
    probs, difficulty, a plug-in's inputs), in the order of ``train``."""
    from srnet.loss_inputs import ReadContext, note_unread, read_inputs

    cfg = recipe.loss
    who = {key: f"loss '{cfg.name}'" if key in loss.requires else f"objective '{recipe.objective.name}'"
           for key in set(loss.requires) | set(also)}
    note_unread(who, cfg.input_files(), f"loss '{cfg.name}' with objective '{recipe.objective.name}'",
                cfg.spell)  # the files the recipe gives (bias_dir's default is not one)
    context = ReadContext([ex.id for ex in train], task.labels, len(task.labels), task.name,
                          golds=[task.labels[ex.label] for ex in train])
    return read_inputs(who, cfg.input_files(recipe.bias_dir), context, cfg.spell)
