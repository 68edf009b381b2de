"""Predictions of a finished run on any of its splits (e.g. the training split, for a teacher)."""

from __future__ import annotations

from pathlib import Path

from srnet.config import Recipe, load_run_recipe
from srnet.errors import NeedsOption, SrnetError
from srnet.evaluation.metrics import predict
from srnet.evaluation.predict import predict_logits, write_predictions
from srnet.experiments.run.data import data_base_dir
from srnet.export.onnx import verify_export
from srnet.models.loading import default_device, load_classifier, load_tokenizer
from srnet.rundir.layout import RunDir
from srnet.tasks import get_task, label_space, load_examples, split_name
from srnet.tasks.spec import DataSpec


def find_split(recipe, split: str) -> DataSpec:
    """The data spec a run's recipe names ``split`` (train, dev, or an eval/challenge name)."""
    data = recipe.data
    if split in ("train", "dev") and getattr(data, split) is not None:
        return getattr(data, split)
    for spec in [*( [data.dev] if data.dev else []), *data.eval, *data.challenge]:
        if split_name(spec) == split:
            return spec
    known = [name for name in ("train", "dev") if getattr(data, name) is not None]
    known += [split_name(s) for s in [*data.eval, *data.challenge]]
    raise SrnetError(f"split '{split}' is not in this run's recipe; known splits: {known}")


def predict_run_split(run_dir: str | Path, split: str, output: str | Path | None = None,
                      fallback: Recipe | None = None, *, overwrite: bool = False) -> Path:
    """Write ``RUN/predictions/<split>.jsonl`` (or ``output``) from the run's exported model,
    atomically; an existing file is replaced only with ``overwrite`` (refused before any work).

    ``fallback`` supplies the split when the run's own recipe lacks it (an evaluation-only run has
    no training split; a sweep's ``predict`` stage passes its recipe)."""
    run = RunDir(Path(run_dir))
    if not run.model.is_dir():
        raise SrnetError(f"{run.model}: no exported model (is '{run_dir}' a finished srnet run?)")
    recipe = load_run_recipe(run.config)
    if fallback is not None and split == "train" and recipe.data.train is None:
        data = recipe.data.model_copy(update={"train": fallback.data.train})
        recipe = recipe.model_copy(update={"data": data})
    task = get_task(recipe.task)
    spec = find_split(recipe, split)
    path = Path(output) if output else run.predictions / f"{split}.jsonl"
    if path.exists() and not overwrite:
        raise NeedsOption(f"{path}: already exists; pass overwrite=True to replace it", "overwrite")
    verify_export(run.model)  # the files the run wrote, as it recorded them, before any is read
    examples = load_examples(task, spec, base_dir=data_base_dir(recipe))
    tokenizer = load_tokenizer(str(run.model))
    model = load_classifier(str(run.model), task.labels)
    model.to(default_device()).eval()
    logits = predict_logits(
        model, tokenizer, examples, max_length=recipe.model.max_length,
        batch_size=recipe.training.eval_batch_size, desc=f"predict {split}",
    )
    space = label_space(task, spec)
    write_predictions(path, examples, logits, predict(logits, task.labels, space), space)
    return path
