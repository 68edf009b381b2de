"""Typed recipes: one YAML file = one experiment, validated, with dotted CLI overrides.

A recipe is a :class:`Recipe`.  ``load_recipe(path, overrides)`` reads YAML, applies
``key.sub=value`` overrides (values parsed as YAML scalars) and validates.  Every error is a
single line naming the file and the dotted key at fault.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Literal, get_origin

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializeAsAny,
    ValidationError,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from srnet.bias.model import BiasConfig
from srnet.compat import RECIPE_KEYS_ADDED_LATER, SPLIT_KEYS_ADDED_LATER, drop_defaults
from srnet.errors import SrnetError
from srnet.io import load_yaml, read_yaml
from srnet.loss_inputs import BUILT_IN_SOURCES, check_plugin_sources
from srnet.losses import LOSSES
from srnet.plugins import load_entry_points, load_plugins, missing_plugins
from srnet.pruning.config import DENSE, PruningConfig
from srnet.registry import Registry
from srnet.tasks.registry import TASKS
from srnet.tasks.spec import DataSpec
from srnet.training.config import TrainingConfig
from srnet.training.objectives import OBJECTIVES, text_objectives


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelConfig(_Strict):
    name: str = Field(
        "default", description="'default' (bundled all-MiniLM-L6-v2), a hub id or a path"
    )
    init_from: str | None = Field(
        None, description="run directory whose exported model is the starting point (e.g. fine-tuned)"
    )
    max_length: int = Field(128, gt=8, description="max tokens per example (pairs truncated longest-first)")
    drop_layers: list[int] = Field(
        default_factory=list,
        description="transformer layers (0-based) removed from the model when it loads, before any "
        "training: whole-layer removal (the rest keep their weights; the model saves with fewer layers)",
    )

    @field_validator("drop_layers")
    @classmethod
    def _distinct_layers(cls, value: list[int]) -> list[int]:
        if any(i < 0 for i in value) or len(set(value)) != len(value):
            raise ValueError(f"{value}: give distinct layer indices from 0")
        return sorted(value)


class DataConfig(_Strict):
    train: DataSpec | None = Field(None, description="training split (omit for evaluation-only runs)")
    dev: DataSpec | None = Field(None, description="ID dev split: evaluation cadence, best-checkpoint choice")
    eval: list[DataSpec] = Field(default_factory=list, description="further ID evaluation splits")
    challenge: list[DataSpec] = Field(default_factory=list, description="OOD challenge splits")
    ood_train: DataSpec | None = Field(
        None, description="OOD examples mixed into the training data (OOD-informed mask search)"
    )
    ood_label_map: dict[str, str] = Field(
        default_factory=lambda: {"non-entailment": "contradiction"},
        description="OOD label -> task label for ood_train (HANS is 2-way, NLI 3-way)",
    )
    dev_fraction: float = Field(
        0.05, gt=0, lt=1,
        description="text task without data.dev: fraction of the packed training blocks held out as dev",
    )
    base_dir: str | None = Field(
        None, description="folder relative data paths are read from (default: $SRNET_DATA_DIR or cwd)"
    )


@contextmanager
def _as_value_error() -> Iterator[None]:
    """An ``SrnetError`` of the block as the ``ValueError`` a pydantic validator reports."""
    try:
        yield
    except SrnetError as exc:
        raise ValueError(str(exc)) from None


class _PluginSection(_Strict):
    """A section that names a registered plug-in (a loss, an objective) and its ``params``: the
    params are validated into the plug-in's ``params_model`` when the recipe loads, and dumped (so
    recorded and fingerprinted) exactly as the recipe gave them."""

    registry: ClassVar[Registry[Any]]
    _given: dict[str, Any] = PrivateAttr(default_factory=dict)

    @field_validator("name", check_fields=False)
    @classmethod
    def _registered(cls, name: str) -> str:
        with _as_value_error():
            cls.registry.get(name)  # one line naming the known ones
        return name

    @field_validator("params", mode="before", check_fields=False)
    @classmethod
    def _typed(cls, value: Any, info: ValidationInfo) -> Any:
        """``params`` validated by the plug-in's model; one line naming the plug-in and its
        parameters."""
        name = info.data.get("name")
        if name is None:
            return value  # the name's own error is the one to report
        if not isinstance(value, dict | BaseModel):
            raise ValueError(f"params of {cls.registry.kind} '{name}' must be a mapping, got {value!r}")
        with _as_value_error():
            return cls.registry.params(name, value)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_given(cls, data: Any, handler: ModelWrapValidatorHandler[_PluginSection]) -> _PluginSection:
        section = handler(data)
        given = data.get("params") if isinstance(data, dict) else None
        if given is not None:
            section._given = given.model_dump(mode="json", exclude_unset=True) \
                if isinstance(given, BaseModel) else dict(given)
        return section

    @field_serializer("params", check_fields=False)
    def _as_given(self, params: BaseModel) -> dict[str, Any]:
        return self._given

    def build(self) -> Any:
        """The plug-in this section names, built with the params validated at load (the recipe's
        one lookup of the name: the run does not look it up again)."""
        return self.registry.get(self.name)(self.params)

    @classmethod
    def known_key(cls, parts: list[str]) -> bool:
        """Whether dotted key ``parts`` (below the section) can be set, e.g. by a sweep's grid:
        ``params.<a parameter of some registered plug-in>``, a field, or a key of a mapping field."""
        head, rest = parts[0], parts[1:]
        if head == "params":
            return not rest or (len(rest) == 1 and cls.registry.has_param(rest[0]))
        field = cls.model_fields.get(head)
        return field is not None and (not rest or (len(rest) == 1 and get_origin(field.annotation) is dict))


class LossConfig(_PluginSection):
    registry = LOSSES

    name: str = Field("ce", description=f"loss registry name: {LOSSES.listing()}")
    params: SerializeAsAny[BaseModel] = Field(
        default_factory=dict,  # type: ignore[arg-type]  (validated into the loss's params model)
        validate_default=True,
        description="the loss's own parameters, validated by its params model "
        "(srnet.losses.LOSSES.get(name).params_model); an unknown key is an error naming them",
    )
    bias_predictions: str | None = Field(
        None, description="bias-prediction file of the training split (default <bias_dir>/train.jsonl)"
    )
    teacher: str | None = Field(
        None, description="teacher run directory or predictions file for the training split"
    )
    difficulty: str | None = Field(None, description="RMC difficulty file for the training split")
    inputs: dict[str, str] = Field(
        default_factory=dict,
        description="files of plug-in loss inputs, by the input's source key (srnet.loss_inputs)",
    )

    @model_validator(mode="after")
    def _check(self) -> LossConfig:
        """The inputs' sources, checked when the recipe loads (a sweep: when it is planned), not
        when a late stage starts."""
        with _as_value_error():
            check_plugin_sources(self.inputs, BUILT_IN_SOURCES, self.spell)
        return self

    def input_files(self, bias_dir: str | None = None) -> dict[str, str | None]:
        """Every input source's file as this section gives it (the bias file defaults to
        ``<bias_dir>/train.jsonl``)."""
        files = {**self.inputs, **{source: getattr(self, source) for source in BUILT_IN_SOURCES}}
        if files["bias_predictions"] is None and bias_dir:
            files["bias_predictions"] = str(Path(bias_dir) / "train.jsonl")
        return files

    @staticmethod
    def spell(source: str) -> str:
        """How a recipe gives the file of the input read from ``source``."""
        if source == "bias_predictions":
            return "loss.bias_predictions or bias_dir"
        return f"loss.{source}" if source in BUILT_IN_SOURCES else f"loss.inputs.{source}"


def _objectives_by_use() -> dict[str, list[str]]:
    """The registered objectives for labelled tasks, and those of task text (pre-training)."""
    text = text_objectives()
    return {"labelled tasks": [n for n in OBJECTIVES.names() if n not in text], "task text": text}


class ObjectiveConfig(_PluginSection):
    registry = OBJECTIVES

    name: str = Field(
        "standard",
        description="training objective registry name: "
        + "; ".join(f"{', '.join(names)} ({use})" for use, names in _objectives_by_use().items()),
    )
    params: SerializeAsAny[BaseModel] = Field(
        default_factory=dict,  # type: ignore[arg-type]  (validated into the objective's params model)
        validate_default=True,
        description="the objective's own parameters, validated by its params model "
        "(e.g. freelb {steps: 3, step_size: 0.03}); an unknown key is an error naming them",
    )


class EvaluationConfig(_Strict):
    easy_hard: bool = Field(
        False,
        description="require the easy/hard split of every ID split (easy = the bias model predicts "
        "the gold label; Gururangan et al. 2018): bias_dir must hold <split>.jsonl for each, as a "
        "`srnet bias fit` folder or a sweep's '@<bias_fit stage>' does. Without it, a split gets "
        "easy/hard whenever bias_dir has its file",
    )
    collapse: Literal["sum", "argmax"] = Field(
        "sum",
        description="primary rule where a challenge set merges model classes (HANS: neutral + "
        "contradiction -> non-entailment): 'sum' adds the merged classes' probabilities before "
        "deciding (p(entailment) >= 0.5), 'argmax' maps the model's 3-way argmax; metrics.json "
        "holds both",
    )
    runtime: Literal["torch", "onnx", "onnx-int8", "onnx-int8-per-channel"] = Field(
        "torch",
        description="what evaluates the final model: PyTorch, its ONNX graph under ONNX Runtime "
        "(checked against PyTorch's logits), or that graph with dynamic INT8 quantization, one weight "
        "scale per tensor or per output channel (compared with the FP32 graph); metrics.json records "
        "it under 'runtime'. Needs srnet[onnx]",
    )


class Recipe(_Strict):
    name: str = Field("run", description="run name; the run directory is <output_dir>/<name>")
    task: str = Field("nli", description=f"task registry name: {TASKS.listing()}")
    seed: int = Field(42, ge=0, lt=2**32,
                      description="seed of model init, data order and masks (0 to 2^32 - 1)")
    output_dir: str = Field("runs", description="folder that holds run directories")
    model: ModelConfig = Field(default_factory=ModelConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    training: TrainingConfig = Field(default_factory=TrainingConfig)
    loss: LossConfig = Field(default_factory=LossConfig)
    objective: ObjectiveConfig = Field(default_factory=ObjectiveConfig, description="training objective")
    pruning: PruningConfig = Field(
        default_factory=lambda: PruningConfig(**DENSE),
        description="subnetwork search (default: method dense; null is accepted for dense)",
    )
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    bias: BiasConfig = Field(default_factory=BiasConfig, description="bias model for `srnet bias fit`")
    bias_dir: str | None = Field(
        None,
        description="folder written by `srnet bias fit`: <split>.jsonl bias predictions; train.jsonl "
        "feeds bias losses, ID splits get an easy/hard breakdown",
    )
    dense_reference: str | None = Field(
        None, description="run directory of the dense model, for the F_bias relative-robustness metric"
    )
    tags: dict[str, str] = Field(
        default_factory=dict,
        description="labels that group runs in `srnet report` (e.g. paradigm: a, method: imp); "
        "they do not change what a run computes",
    )
    plugins: list[str] = Field(
        default_factory=list,
        description="modules (names on sys.path, or .py paths; one may be given as a string) imported "
        "before the recipe is read, in every process: each registers its plug-ins (a pruning method, "
        "loss, task, ...). A run folder's recorded list is checked, never imported",
    )

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        """A run name is one folder name: never empty, '.', '..' or a path."""
        if not name.strip() or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
            raise ValueError("a run name must be a plain folder name (not empty, '.', '..' or a path)")
        return name

    @field_validator("plugins", mode="before")
    @classmethod
    def _one_plugin(cls, value: Any) -> Any:
        return plugin_list(value)

    @field_validator("pruning", mode="before")
    @classmethod
    def _null_is_dense(cls, value: Any) -> Any:
        return dict(DENSE) if value is None else value

    def semantic_dict(self) -> dict[str, Any]:
        """The resolved recipe without the keys that cannot change a result (:data:`NON_SEMANTIC`)."""
        data = self.model_dump(mode="json")
        data["pruning"] = self.pruning.semantic_dict()  # the layout before per-method params
        splits = data["data"]
        for spec in [splits.get("train"), splits.get("dev"), splits.get("ood_train"),
                     *splits.get("eval", []), *splits.get("challenge", [])]:
            drop_defaults(spec, SPLIT_KEYS_ADDED_LATER)  # a split that does not use it keeps its key
        drop_defaults(data, RECIPE_KEYS_ADDED_LATER)
        for dotted in NON_SEMANTIC:
            *parents, leaf = dotted.split(".")
            node = data
            for part in parents:
                node = node.get(part) or {}
            node.pop(leaf, None)
        return data

    def fingerprint(self) -> str:
        """A short hash of the *semantic* recipe: runs with equal fingerprints compute the same thing
        (recorded in mask files; keys stage folders and checks ``--resume``)."""
        blob = json.dumps(self.semantic_dict(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


NON_SEMANTIC: tuple[str, ...] = (
    "name",
    "plugins",
    "output_dir",
    "tags",
    "training.log_every",
    "training.tensorboard",
    "training.eval_batch_size",
    "training.checkpoint_every",
    "evaluation.easy_hard",
)
"""Recipe keys that name, place or log a run, load the code its names refer to, or only check its
inputs early, but do not change what it computes."""

def apply_overrides(data: dict[str, Any], overrides: list[str], source: str = "--set") -> dict[str, Any]:
    """Apply ``a.b.c=value`` overrides (YAML-parsed values) to a nested dict, in place."""
    for item in overrides:
        key, value = parse_override(item, source)
        set_dotted(data, key, value, source)
    return data


def parse_override(item: str, source: str = "--set") -> tuple[str, Any]:
    """``'a.b.c=value'`` -> ``('a.b.c', value)`` with the value YAML-parsed (empty -> None)."""
    if "=" not in item:
        raise SrnetError(f"{source}: override '{item}' is not of the form key.sub=value")
    key, raw = item.split("=", 1)
    if not all(key.strip().split(".")):
        raise SrnetError(f"{source}: override key '{key}' is empty or has an empty part")
    try:
        value = load_yaml(raw, f"{source} {key.strip()}") if raw.strip() else None
    except yaml.YAMLError:
        value = raw
    return key.strip(), value


def set_dotted(data: dict[str, Any], key: str, value: Any, source: str) -> None:
    """Set ``data[a][b][c] = value`` for ``key`` 'a.b.c' (list items by index; sections created)."""
    parts = key.split(".")
    node: Any = data
    for part in parts[:-1]:
        node = _child(node, part, key, source)
    if isinstance(node, list):
        node[_list_index(node, parts[-1], key, source)] = value
    else:
        node[parts[-1]] = value


def _child(node: Any, part: str, key: str, source: str) -> Any:
    """Step into ``node[part]`` (a section, or a list item by index), creating missing sections."""
    if isinstance(node, list):
        return node[_list_index(node, part, key, source)]
    child = node.get(part)
    if child is None:
        child = node[part] = {}
    if not isinstance(child, dict | list):
        raise SrnetError(f"{source}: '{key}' goes through '{part}', which is not a section")
    return child


def _list_index(node: list, part: str, key: str, source: str) -> int:
    if not part.isdigit() or int(part) >= len(node):
        raise SrnetError(f"{source}: '{key}': '{part}' is not an index of a list of {len(node)}")
    return int(part)


def recipe_from_dict(data: dict[str, Any], source: str = "recipe") -> Recipe:
    """Validate a recipe dict the user gave (after importing its plug-ins); one-line error naming the
    first bad key."""
    load_plugins(plugin_names(data))
    return _validate(data, source)


def recorded_recipe(data: dict[str, Any], source: str) -> Recipe:
    """Validate a recipe a run folder recorded (its ``config.yaml``), importing nothing it names:
    each plug-in it records must already be loaded (``--plugins``, the recipe the user passed or an
    installed entry point), or it is one line naming the plug-in."""
    load_entry_points()
    absent = missing_plugins(plugin_names(data))
    if absent:
        raise SrnetError(f"{source}: the run was made with plug-in '{absent[0]}', which is not loaded; "
                         f"pass it with --plugins {absent[0]} (srnet never imports a plug-in a run "
                         "folder names)")
    return _validate(data, source)


def plugin_list(value: Any) -> Any:
    """A recipe's ``plugins`` value with a single name (``--set plugins=my_method.py``) as a list."""
    return [value] if isinstance(value, str) else value


def plugin_names(data: Any) -> list[str]:
    """The plug-in names of a recipe dict (a malformed ``plugins`` value is validation's to name)."""
    names = plugin_list(data.get("plugins")) if isinstance(data, dict) else None
    return [name for name in names if isinstance(name, str)] if isinstance(names, list) else []


def _validate(data: dict[str, Any], source: str) -> Recipe:
    try:
        return Recipe.model_validate(data)
    except ValidationError as exc:
        raise SrnetError(validation_line(source, exc)) from None


def validation_line(source: str, exc: ValidationError) -> str:
    """One line for a section's first validation error: ``source: where: what (got value)`` (no
    ``where`` for an error of the whole section)."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    where = f"{where}: " if where else ""
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = "unknown key"
    value = err.get("input")
    quiet = (
        err["type"] in ("extra_forbidden", "missing")
        or isinstance(value, dict)
        or any(text in msg for text in (f"got {value!r}", f"got {value}"))  # already named
        or (isinstance(value, str) and repr(value) in msg)  # e.g. unknown loss 'nope'
    )
    shown = "" if quiet else f" (got {value!r})"
    more = f" (+{len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return f"{source}: {where}{msg}{shown}{more}"


def load_recipe(path: str | Path | None, overrides: list[str] | None = None) -> Recipe:
    """Read a YAML recipe (or start from defaults when ``path`` is None) and apply overrides."""
    data = read_recipe_file(Path(path)) if path is not None else {}
    source = str(path) if path is not None else "defaults"
    apply_overrides(data, overrides or [], source)
    return recipe_from_dict(data, source)


def load_run_recipe(path: Path, overrides: list[str] | None = None) -> Recipe:
    """A run folder's recorded recipe (its ``config.yaml``) with ``overrides`` applied: checked like
    any recipe, but nothing it names is imported (:func:`recorded_recipe`)."""
    data = read_recipe_file(path)
    apply_overrides(data, overrides or [], str(path))
    return recorded_recipe(data, str(path))


def read_recipe_file(path: Path) -> dict[str, Any]:
    """The mapping of a YAML recipe file, unvalidated; one line naming the file when it is missing,
    a folder or not a mapping (:func:`~srnet.io.read_yaml`: too large or deep, not UTF-8, not YAML)."""
    if path.is_dir():
        raise SrnetError(f"{path}: is a folder, not a recipe file (give the YAML file inside it)")
    if not path.is_file():
        raise SrnetError(f"{path}: recipe file not found")
    loaded = read_yaml(path)
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise SrnetError(f"{path}: a recipe must be a mapping of sections, got {type(loaded).__name__}")
    return loaded


def dump_recipe(recipe: Recipe) -> str:
    """The resolved recipe as YAML (what a run directory records)."""
    return yaml.safe_dump(recipe.model_dump(mode="json"), sort_keys=False)


def as_recipe(recipe: str | Path | Recipe | dict | None, overrides: list[str] | None = None) -> Recipe:
    """Resolve any accepted recipe form (a YAML path, a dict, a :class:`Recipe`, or None for the
    defaults), applying dotted overrides; one line for anything else (an int, an empty path)."""
    if recipe is not None and not isinstance(recipe, Recipe | dict) and (
            not isinstance(recipe, str | os.PathLike) or not str(recipe).strip()):
        raise SrnetError(f"recipe: expected a file or folder path, got {recipe!r}")
    if isinstance(recipe, Recipe):
        return recipe_from_dict(apply_overrides(recipe.model_dump(mode="json"), overrides or []))
    if isinstance(recipe, dict):
        return recipe_from_dict(apply_overrides(dict(recipe), overrides or []))
    return load_recipe(recipe, overrides)
