"""Task-agnostic mask training (TAMT): the ``text`` run kind.

The backbone is loaded with an MLM head (a fresh one when the checkpoint has none), the corpus
is packed into blocks of ``model.max_length`` tokens, and the recipe's pruning method searches
a mask with a pre-training objective (``mlm``, ``distill``, ``mlm+distill``).  One-shot methods
(``omp``, ``random``) with no ``data.train`` only decide their mask.  The run directory holds
the mask (tied to the backbone's fingerprint, not to any task), the exported model and
``metrics.json`` with the subnetwork's MLM and KD losses on the held-out dev blocks.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from accelerate.utils import set_seed

from srnet.config import Recipe
from srnet.errors import SrnetError
from srnet.experiments.run.data import data_base_dir
from srnet.experiments.run.finish import Outcome, finish_run, mask_metadata, sparsity_block
from srnet.experiments.run.kinds import RunKind, register_run_kind
from srnet.export import bake_masks
from srnet.models import default_device, load_masked_lm, load_tokenizer
from srnet.models.layers import drop_layers
from srnet.pruning import build_method
from srnet.pruning.base import PruningMethod
from srnet.pruning.lifecycle import check_data, prune
from srnet.rundir.layout import RunDir
from srnet.rundir.record import RunMetrics, read_metrics
from srnet.tasks import Task
from srnet.tasks.readers import resolve_path
from srnet.tasks.text import load_texts
from srnet.training.loop import Trainer
from srnet.training.objectives import text_objectives
from srnet.training.objectives.pretraining import Pretraining, dev_losses
from srnet.training.packing import TextBlocks, hold_out, pack_blocks

log = logging.getLogger(__name__)

DEV_MASK_SEED = 0
"""Seed of the dev blocks' MLM token masks: every run is scored on the same corrupted text."""


@dataclass
class PreparedText:
    """A text recipe resolved and checked before its run folder is touched."""

    source: str
    tokenizer: object
    model: torch.nn.Module
    method: PruningMethod
    objective: Pretraining
    head: str
    train: torch.Tensor | None
    dev: torch.Tensor


@register_run_kind("text")
class TextMaskSearch(RunKind):
    """Search (or decide once) a mask of the pre-trained backbone on raw text; score it by its
    MLM and distillation losses on held-out blocks."""

    def prepare(self, recipe: Recipe, task: Task) -> PreparedText:
        return prepare_text(recipe)

    def execute(self, recipe: Recipe, prepared: PreparedText, run: RunDir, *, resume: bool,
                main: bool) -> RunMetrics:
        return execute_text(recipe, prepared, run, resume=resume)


def prepare_text(recipe: Recipe) -> PreparedText:
    """Read and pack the corpus, load the MLM model and build the objective and method."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise SrnetError("the text task runs in one process (no accelerate launch)")
    data = recipe.data
    if data.eval or data.challenge or data.ood_train:
        raise SrnetError("the text task has only data.train and data.dev; score tasks with srnet transfer")
    objective = recipe.objective.build()
    if not isinstance(objective, Pretraining):
        raise SrnetError(
            f"the text task trains with objective {' or '.join(text_objectives())}, "
            f"not '{recipe.objective.name}'"
        )
    method = build_method(recipe.pruning, recipe.seed)
    if method.calibrates and not objective.uses_mlm:
        raise SrnetError(
            f"importance 'gradient' needs a loss that changes with the heads/neurons of the unpruned "
            f"model; objective '{recipe.objective.name}' (distillation from it) is at its minimum there: "
            f"use mlm or mlm+distill"
        )
    check_data(method, data.train is not None)
    set_seed(recipe.seed)
    init_from = recipe.model.init_from
    source = str(RunDir(Path(init_from)).model) if init_from else recipe.model.name
    tokenizer = load_tokenizer(source, recipe.model.max_length)
    base = data_base_dir(recipe)
    size = recipe.model.max_length

    def blocks(spec) -> torch.Tensor:
        where = str(resolve_path(spec.path, base)) if spec.path else spec.display_name
        return pack_blocks(load_texts(spec, base_dir=base), tokenizer, size, source=where)

    train = blocks(data.train) if data.train else None
    if data.dev is not None:
        dev = blocks(data.dev)
    elif train is not None:
        train, dev = hold_out(train, data.dev_fraction, recipe.seed)
    else:
        raise SrnetError("the text task needs data.train or data.dev")
    model, fresh = load_masked_lm(source)
    drop_layers(model, recipe.model.drop_layers)
    objective.check(model, tokenizer)
    trained = objective.trains_head(fresh) and train is not None
    head = ("new, trained with the mask" if trained else "new, untrained") if fresh else (
        "loaded, trained with the mask" if trained else "loaded")
    if fresh:
        log.info("new MLM head on top of %s: %s", source,
                 "trained along with the mask" if trained else "not trained (MLM dev loss is not meaningful)")
    method.check(model)  # e.g. fixed: its mask file is readable, fits this model and its granularity
    return PreparedText(source, tokenizer, model, method, objective, head, train, dev)


def execute_text(recipe: Recipe, ready: PreparedText, run: RunDir, *, resume: bool) -> RunMetrics:
    """Search the mask (or decide it once), score it on the dev blocks and finish the run."""
    started = time.perf_counter()
    model, method, objective, tokenizer = ready.model, ready.method, ready.objective, ready.tokenizer
    params = objective.params
    layers = getattr(params, "layers", None)
    distance = getattr(params, "distance", "cosine")

    def score(net: torch.nn.Module) -> dict[str, float]:
        return dev_losses(net, ready.dev, tokenizer, batch_size=recipe.training.eval_batch_size,
                          seed=DEV_MASK_SEED, layers=layers, distance=distance)

    def dev_metric(net: torch.nn.Module) -> float:
        losses = score(net)
        return -sum(losses[k] for k, used in (("mlm_dev_loss", objective.uses_mlm),
                                              ("kd_dev_loss", objective.uses_kd)) if used)

    best_step = None
    if ready.train is not None:
        trainer = Trainer(
            model, tokenizer, TextBlocks(ready.train), recipe.training, None, run.trainer_files(),
            seed=recipe.seed, method=method, objective=objective, dev_metric=dev_metric,
            mask_metadata=lambda m: mask_metadata(recipe, method, ready.source, model, m),
        )
        best_step = trainer.train(resume=resume).best_step
        masks = trainer.load_best() or {}
        model = trainer.trained_model()
    else:
        model.to(default_device())
        masks = prune(method, model)
    method.freeze()
    metrics = {
        "run": recipe.name, "task": "text", "model": ready.source, "seed": recipe.seed,
        "objective": recipe.objective.name, "method": recipe.pruning.method, "best_step": best_step,
        "mlm_head": ready.head,
        "blocks": {"size": recipe.model.max_length, "dev": len(ready.dev),
                   "train": 0 if ready.train is None else len(ready.train)},
        "pretraining": score(model),
    }
    if masks:
        metrics["sparsity"] = sparsity_block(masks, recipe.pruning.sparsity, model)
    baked = bake_masks(model, masks) if masks else model
    return finish_run(Outcome(recipe, run, method, ready.source, model, baked, masks, tokenizer,
                              metrics, started, owns_weights=False))  # a mask to transfer


def read_pretraining(mask_file: str | Path) -> dict | None:
    """The ``pretraining`` block of the run a mask file came from (None when it has none)."""
    path = Path(mask_file)
    folder = path if path.is_dir() else path.parent
    if not RunDir(folder).metrics.is_file():
        return None
    return read_metrics(folder).pretraining
