"""The end of every run, whatever its kind: mask movement, masks and scores, the exported model,
``metrics.json`` (written last: its presence means 'complete') and the checkpoints' removal."""

from __future__ import annotations

import json
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from srnet.config import Recipe
from srnet.evaluation.mask_analysis import mask_movement, sparsity_table, unmoved_warning
from srnet.export import export_model
from srnet.models import DEFAULT_ROLES, classify_weight, find_prunable
from srnet.pruning.base import PruningMethod
from srnet.reporting.render import plot_sparsity_heatmap
from srnet.rundir.layout import RunDir
from srnet.rundir.record import RunMetrics, write_metrics
from srnet.sparsity.fingerprint import model_fingerprint, weights_digest
from srnet.sparsity.mask_io import MaskMetadata, save_masks
from srnet.sparsity.tickets import SCORES_FILENAME, save_scores

Masks = dict[str, torch.Tensor]


@dataclass
class Outcome:
    """What a run kind hands to :func:`finish_run` once it has trained and evaluated."""

    recipe: Recipe
    run: RunDir
    method: PruningMethod
    source: str
    """The model the run started from (a name or path)."""
    masked: nn.Module
    """The trained model with its masks attached (fp32)."""
    baked: nn.Module
    """``masked`` with its masks multiplied into the weights (``masked`` itself when unmasked)."""
    masks: Masks | None
    tokenizer: object
    metrics: dict
    started: float
    """``time.perf_counter()`` when the run began."""
    owns_weights: bool = True
    """Whether the masks belong to this run's trained weights (``trained_digest`` recorded, so
    ``srnet export`` refuses another model); false for masks meant to move to other models (TAMT)."""


def finish_run(outcome: Outcome) -> RunMetrics:
    """Record the mask's movement, save the masks (and scores), export the baked model, write
    ``metrics.json`` (checked against the run record) and remove the checkpoints; returns the record."""
    recipe, run, method, masks, metrics = (outcome.recipe, outcome.run, outcome.method,
                                           outcome.masks, outcome.metrics)
    budget = method.mask_budget()
    if budget is not None:
        metrics["mask_budget"] = budget
    record_mask_movement(recipe, run, method, masks, metrics)
    record = RunMetrics.model_validate(metrics)  # a writer that breaks the record fails before export
    metadata = mask_metadata(recipe, method, outcome.source, outcome.masked, masks) if masks else None
    if metadata is not None and outcome.owns_weights:
        metadata.trained_digest = weights_digest(outcome.baked)
    if masks:
        save_masks(run.masks, masks, metadata)
        scores = method.scores()
        if scores:
            save_scores(run.root / SCORES_FILENAME, scores, metadata)
        if any(layer is not None for _, layer in map(classify_weight, masks)):
            plot_sparsity_heatmap(masks, run.root / "sparsity_heatmap.png", title=f"{recipe.name}: sparsity")
    export_model(outcome.masked, masks or {}, outcome.tokenizer, run.model, metadata=metadata,
                 overwrite=True, baked=outcome.baked, metrics=record.as_json(),
                 recipe=recipe.model_dump(mode="json"))
    record.time_s = round(time.perf_counter() - outcome.started, 1)
    write_metrics(run.root, record)
    shutil.rmtree(run.checkpoints, ignore_errors=True)
    return record


def mask_metadata(recipe: Recipe, method: PruningMethod, source: str, model: nn.Module,
                  masks: Masks) -> MaskMetadata:
    """What a mask file of this run records: method, base model and its fingerprint over the
    masked weights, the recipe's fingerprint, granularity and target sparsity."""
    cfg = recipe.pruning
    return MaskMetadata(
        method=cfg.method,
        base_model=source,
        base_model_fingerprint=model_fingerprint(model, list(masks)),
        recipe_hash=recipe.fingerprint(),
        granularity=method.granularity,  # fixed: its mask's
        target_sparsity=cfg.sparsity,
    )


def sparsity_block(masks: Masks | None, target: float, model: nn.Module, source: str | None = None) -> dict:
    """Sparsity of the applied masks; without masks, an srnet export's own record (``source``: a
    shrunk export has no zeros left to count) with what it was trained with, else the measured
    zeros of the prunable weights (so evaluating a pruned model reports its real sparsity)."""
    if masks:
        return {**sparsity_table(masks).as_dict(), "target": target, "measured_from": "masks"}
    recorded = export_record(source)
    if recorded is not None:
        return recorded
    zeros = {w.name: w.module.weight.detach() != 0 for w in find_prunable(model, DEFAULT_ROLES)}
    return {**sparsity_table(zeros).as_dict(), "target": None, "measured_from": "weights"}


def record_mask_movement(recipe: Recipe, run: RunDir, method: PruningMethod, masks: Masks | None,
                         metrics: dict) -> None:
    """``metrics["mask_movement"]`` for a method that learns its mask, and a log entry; one
    warning line when the mask did not move from its start."""
    start = method.start_masks() if masks else None
    if start is None:
        return
    movement = metrics["mask_movement"] = mask_movement(start, masks)
    entry = {"event": "mask_movement", "flipped": movement["flipped"], "jaccard": movement["jaccard"]}
    auto = getattr(recipe.pruning.params, "mask_lr", None) == "auto"
    fix = ("pruning.params.mask_reach or the number of steps (mask_lr: auto is already in use, and on "
           "a short schedule its cap keeps the mask near its start)" if auto
           else "pruning.params.mask_lr (or use mask_lr: auto)")
    warning = unmoved_warning(recipe.name, method.start_name, movement, fix)
    if warning is not None:
        entry["warning"] = warning
        logging.getLogger("srnet.run").warning(warning)
    with run.log.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")


def export_record(source: str | None) -> dict | None:
    """The sparsity block of an evaluated srnet export, from its ``srnet_export.json``: the masked
    weights' sparsity it records, its method, granularity, whether it was shrunk, and the loss it
    was trained with; None when ``source`` is not an export that records a sparsity."""
    from srnet.export import EXPORT_INFO_FILENAME

    path = Path(source) / EXPORT_INFO_FILENAME if source else None
    if path is None or not path.is_file():
        return None
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("sparsity"), int | float):
        return None
    masks = info.get("masks") if isinstance(info.get("masks"), dict) else {}
    trained = info.get("trained") if isinstance(info.get("trained"), dict) else {}
    per_matrix = info.get("per_matrix") if isinstance(info.get("per_matrix"), dict) else None
    return {"overall": float(info["sparsity"]), "per_matrix": per_matrix,
            "target": masks.get("target_sparsity"), "measured_from": "export",
            "export": {"method": masks.get("method") or trained.get("method"), "loss": trained.get("loss"),
                       "granularity": masks.get("granularity"), "shrunk": bool(info.get("shrunk"))}}
