"""Evaluate a finished model on a recipe's ID and OOD splits and write per-example predictions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from srnet.config import Recipe
from srnet.errors import SrnetError
from srnet.evaluation.challenge import PREDICTION_FILES
from srnet.evaluation.metrics import evaluate_split, f_bias, id_collapse, predict
from srnet.evaluation.predict import hard_examples, predict_logits, write_predictions
from srnet.io import atomic_write_text
from srnet.rundir.layout import RunDir
from srnet.rundir.record import read_metrics
from srnet.tasks import Task, split_name
from srnet.tasks.base import Example
from srnet.tasks.spec import DataSpec

Split = tuple[DataSpec, list[Example]]


def evaluate_splits(
    model: torch.nn.Module,
    tokenizer,
    task: Task,
    id_sets: list[Split],
    ood_sets: list[Split],
    recipe: Recipe,
    run: RunDir,
) -> dict:
    """``{"id": {name: block}, "ood": {name: block}}``; predictions under ``run.predictions``.

    Each split is scored by its label scheme (the task's, or its challenge set's), under the
    recipe's ``evaluation.collapse`` rule where the scheme merges model classes.
    """
    out: dict[str, dict] = {"id": {}, "ood": {}}
    rule = recipe.evaluation.collapse
    for kind, sets in (("id", id_sets), ("ood", ood_sets)):
        for spec, examples in sets:
            name = split_name(spec)
            scheme = task.scheme(spec.challenge)
            logits = predict_logits(
                model, tokenizer, examples, max_length=recipe.model.max_length,
                batch_size=recipe.training.eval_batch_size, desc=f"eval {name}",
            )
            block = evaluate_split(logits, examples, scheme, task.labels, collapse=rule)
            preds = predict(logits, task.labels, scheme.space, rule)
            bias_file = Path(recipe.bias_dir) / f"{name}.jsonl" if recipe.bias_dir else None
            hard = None
            if kind == "id":
                block.update(id_collapse(block))
                if bias_file is not None and bias_file.is_file():
                    hard = hard_examples(bias_file, [ex.id for ex in examples],
                                         [ex.label for ex in examples], task.labels)
                    block["easy_hard"] = easy_hard_split(bias_file, hard, examples, preds)
            out[kind][name] = block
            write_predictions(run.predictions / f"{name}.jsonl", examples, logits, preds, scheme.space,
                              hard=hard)
            if scheme.prediction_file is not None:
                atomic_write_text(
                    run.predictions / f"{name}_{scheme.prediction_file}_predictions.txt",
                    PREDICTION_FILES[scheme.prediction_file](examples, preds, scheme.space),
                )
    return out


def easy_hard_split(bias_file: Path, hard: np.ndarray, examples: list[Example], preds) -> dict:
    """Accuracy on the easy and hard examples of a split (Gururangan et al. 2018; RMC paper §4):
    easy = the bias model (e.g. hypothesis-only) predicts the gold label, hard = it does not
    (``hard``: :func:`~srnet.evaluation.predict.hard_examples` of ``bias_file``)."""
    gold = np.array([ex.label for ex in examples])
    easy = ~np.asarray(hard)
    correct = np.asarray(preds) == gold

    def accuracy(part: np.ndarray) -> float | None:
        return float(correct[part].mean()) if part.any() else None

    acc_easy, acc_hard = accuracy(easy), accuracy(~easy)
    gap = acc_easy - acc_hard if acc_easy is not None and acc_hard is not None else None
    return {"easy": acc_easy, "hard": acc_hard, "gap": gap, "n_easy": int(easy.sum()),
            "n_hard": int((~easy).sum()), "rule": "bias model predicts the gold label",
            "bias_file": str(bias_file)}


def f_bias_block(metrics: dict, dense_run: Path) -> dict:
    """F_bias of each OOD split against the first ID split (``metrics``: the record being written),
    relative to a dense reference run."""
    dense_path = RunDir(dense_run).metrics
    if not dense_path.is_file():
        raise SrnetError(f"dense_reference: {dense_path} not found (run the dense model first)")
    dense = read_metrics(dense_path)
    if not metrics["id"]:
        raise SrnetError("F_bias needs an ID evaluation split (data.dev)")
    id_name = next(iter(metrics["id"]))
    if id_name not in dense.id:
        raise SrnetError(f"dense_reference {dense_run} has no ID split '{id_name}'")
    block = {"reference": str(dense_run), "id_split": id_name}
    for name, ood in metrics["ood"].items():
        if name not in dense.ood:
            raise SrnetError(f"dense_reference {dense_run} has no OOD split '{name}'")
        block[name] = f_bias(
            metrics["id"][id_name]["primary"], ood["primary"],
            dense.id[id_name]["primary"], dense.ood[name]["primary"],
        )
    return block
