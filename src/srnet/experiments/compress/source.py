"""The user's model and the recipe that supplies its data (:class:`Source`), and what is checked of
them before anything is timed or trained: the model's family, the bias, the split the attack reads."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from srnet.errors import SrnetError

CHECKPOINT_STEPS = 200
"""A compression's training stages save a resumable checkpoint this often (unless the recipe sets
``training.checkpoint_every``): they evaluate only at their end, so a kill would otherwise lose a
whole one-epoch stage (on MNLI, 940 steps and about 13 minutes). Not part of any stage key."""


@dataclass
class Source:
    """The user's model and the recipe that supplies its data."""

    model: str
    recipe: dict[str, Any]
    start: dict[str, Any]
    """The recipe keys that load the user's model (``model.name`` or ``model.init_from``)."""
    weights: Path
    """The folder holding the model's weights and config."""


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
        check_model_source(model)  # a missing path is "not found", before anything else
        if recipe is None:
            raise SrnetError(f"{model}: not an srnet run folder; give --recipe (or data flags) for its data")
        base = as_recipe(recipe, overrides)
        start, weights = {"model.name": model, "model.init_from": None}, Path(resolve_model_name(model))
    data = base.model_dump(mode="json")
    if data["data"].get("train") is None:
        raise SrnetError(f"{model}: the recipe has no data.train; compress trains a teacher and a student")
    for key in ("pruning", "objective", "bias_dir", "dense_reference", "tags"):
        data.pop(key, None)
    data["loss"] = {"name": "ce"}
    training = data["training"]
    data["training"] = {**training, "select": "last", "eval_every": None,
                        "checkpoint_every": training.get("checkpoint_every") or CHECKPOINT_STEPS}
    data.pop("name", None)
    data.pop("output_dir", None)
    return Source(model, data, start, weights)


def source_digest(source: Source) -> str:
    """The SHA-256 of the model folder's files (weights, config, tokenizer), names included."""
    from srnet.io import folder_sha256

    return folder_sha256(source.weights)


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


def dropped_layers(source: Source, drop: int) -> list[int]:
    """The ``--drop-layers`` blocks (0-based): the ``drop`` nearest the output; one line when the
    model's family cannot lose whole layers or would have none left."""
    from transformers import AutoConfig

    from srnet.models.families import family_of
    from srnet.models.layers import top_layers

    if not drop:
        return []
    config = AutoConfig.from_pretrained(source.weights, local_files_only=True)
    family = family_of(config.model_type)
    if family is None or family.depth_key is None:
        raise SrnetError(f"--drop-layers {drop}: a {config.model_type} model's layers cannot be removed "
                         "(its blocks depend on their index or are shared); give 0")
    depth = getattr(config, family.depth_key)
    if drop >= depth:
        raise SrnetError(f"--drop-layers {drop}: the model has {depth} layers; give at most {depth - 1}")
    return top_layers(depth, drop)


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


def id_split(source: Source) -> str | None:
    """The split the attack runs on: ``dev``, else the first eval split (None without either)."""
    from srnet.config import recipe_from_dict
    from srnet.tasks import split_name

    data = recipe_from_dict({**source.recipe, "name": "compress"}).data
    if data.dev is not None:
        return "dev"
    return split_name(data.eval[0]) if data.eval else None
