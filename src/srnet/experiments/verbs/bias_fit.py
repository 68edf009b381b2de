"""`srnet bias fit`: fit a recipe's bias model and write bias predictions for each of its splits."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np

from srnet.bias import compute_difficulty, write_difficulty
from srnet.config import Recipe
from srnet.errors import SrnetError
from srnet.evaluation.metrics import evaluate_split, predictions_collapse
from srnet.experiments.run.data import load_run_data, load_training_examples
from srnet.io import atomic_write_json
from srnet.tasks import get_task, split_name


def fit_bias(recipe: Recipe, out_dir: str | Path, *, overwrite: bool = False) -> dict:
    """Fit ``recipe.bias`` on the training split; write ``<split>.jsonl`` files and ``bias_metrics.json``.

    The training split's predictions are out-of-fold. Every split is scored like a model run
    (accuracy, and for HANS-like splits the heuristic x label table), so the bias model's own
    ID and challenge accuracy are on record.
    """
    out = Path(out_dir)
    held = sorted(p.name for p in [out / "bias_metrics.json", *out.glob("*.jsonl")] if p.is_file())
    if held and not overwrite:
        raise SrnetError(f"{out}: already holds bias predictions ({', '.join(held[:3])}); pass "
                         "--overwrite to replace them")
    task = get_task(recipe.task)
    data = load_run_data(recipe, task)
    if data.train is None:
        raise SrnetError("srnet bias fit needs data.train in the recipe")
    model = recipe.bias.fit(data.train, task.labels, recipe.model.name)
    model.write(out / "train.jsonl", model.train)
    report: dict = {"feature": recipe.bias.feature, "k_folds": recipe.bias.k_folds,
                    "train_oof_accuracy": model.train.accuracy, "id": {}, "ood": {}}
    sets = [("id", s) for s in ([data.dev] if data.dev else []) + data.evals]
    sets += [("ood", s) for s in data.challenges]
    for kind, (spec, examples) in sets:
        name = split_name(spec)
        scheme = task.scheme(spec.challenge)
        preds = model.predict_split(examples, name, scheme.space)
        model.write(out / f"{name}.jsonl", preds)
        report[kind][name] = evaluate_split(
            preds.log_probs, examples, scheme, task.labels, collapse=recipe.evaluation.collapse
        )
    atomic_write_json(out / "bias_metrics.json", report)
    return report


def write_training_difficulty(
    recipe: Recipe, predictions: list[str], alpha: float, out: str | Path, *, allow_collapsed: bool = False,
    overwrite: bool = False,
) -> Path:
    """RMC difficulty of each training example from several models' training-split predictions; a
    member whose training predictions collapsed is refused unless ``allow_collapsed``; an existing
    ``out`` is replaced only with ``overwrite`` (checked first)."""
    from srnet.io import check_new_file

    check_new_file(out, overwrite, "--out")
    train = load_training_examples(recipe, get_task(recipe.task))
    if train is None:
        raise SrnetError("srnet bias difficulty needs data.train in the recipe")
    files = [Path(p) / "predictions" / "train.jsonl" if Path(p).is_dir() else Path(p) for p in predictions]
    ids = [ex.id for ex in train]
    gold = np.array([ex.label for ex in train])
    check = None if allow_collapsed else partial(refuse_collapsed_member, gold=gold)
    return write_difficulty(out, ids, compute_difficulty(files, ids, gold, alpha, check))


def refuse_collapsed_member(path: Path, probs: np.ndarray, gold: np.ndarray) -> None:
    """One line when a member's training predictions (``probs``: what the variance reads, from a run
    folder or a sweep's ``predict`` file alike) collapsed: one class, or near chance (the rules of
    the run records' ID flags). Its losses would dominate the variance, and the examples the working
    members fit best would look hardest."""
    flags = predictions_collapse(probs.argmax(axis=1), gold, probs.shape[1])
    if flags["collapsed"]:
        raise SrnetError(
            f"srnet bias difficulty: member {path} collapsed (accuracy {flags['accuracy']:.4f} against "
            f"chance {flags['chance']:.4f}, {flags['majority']:.0%} of its predictions in one class); "
            "replace it with a working model of that sparsity or leave it out (--allow-collapsed uses it "
            "anyway)"
        )

