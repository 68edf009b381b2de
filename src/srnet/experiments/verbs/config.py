"""Each verb's settings, one typed model per verb: the sweep stage's params model, the config (or
keywords) of the :mod:`srnet.api` call and the CLI's flags (:mod:`srnet.cli.flags`) all come from
it, so a setting, its type, default and help are written once.

A field's ``description`` is its flag's help; ``json_schema_extra`` names the flag (``flag``) or
its ``metavar`` when they are not ``--<field-name>`` (a bool that defaults to True is
``--no-<field-name>``).  Where a verb runs is not a setting: run folders, output paths,
``overwrite`` and plug-ins stay the call's own arguments.  This module imports no torch (the CLI's
parser is built from it).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Self, TypeVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo

from srnet.errors import SrnetError


class VerbConfig(BaseModel):
    """A verb's settings (unknown keys refused)."""

    model_config = ConfigDict(extra="forbid")

    non_semantic: ClassVar[tuple[str, ...]] = ()
    """As a stage's params: settings left out of the stage's key (they change what is written beside
    the results, not the results), so a finished stage keeps its key when one is added or set."""
    added_later: ClassVar[dict[str, Any]] = {}
    """As a stage's params: settings added after studies were recorded -> their default: left out of
    the key while at it, so a recorded stage keeps its key."""

    @classmethod
    def resolve(cls, config: Self | None, settings: Mapping[str, Any]) -> Self:
        """``config`` (default: every field at its default) with the keywords ``settings`` set,
        validated: TypeError for an unknown keyword, one-line SrnetError for a bad value."""
        if config is not None and not isinstance(config, cls):
            raise TypeError(f"config: expected a {cls.__name__}, got {type(config).__name__}")
        for name, value in settings.items():
            if name not in cls.model_fields:
                raise TypeError(f"unexpected keyword argument '{name}' (settings: {list(cls.model_fields)})")
            check_number(flag_name(name, cls.model_fields[name]), cls.model_fields[name].annotation, value)
        try:
            return cls.model_validate({**(config.model_dump() if config else {}), **settings})
        except ValidationError as exc:
            raise SrnetError(setting_error(cls, exc)) from None


def _base_types(annotation: Any) -> set[Any]:
    """The plain types an annotation admits (``int | None`` -> {int, NoneType}; ``Annotated`` and
    list items unwrapped; a list also admits ``list``)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _base_types(args[0])
    if origin in (list, tuple, set) and args:
        return {origin, *_base_types(args[0])}
    if args:
        return set().union(*(_base_types(a) for a in args))
    return {annotation}


def check_number(flag: str, annotation: Any, value: Any) -> None:
    """A numeric setting given from Python takes numbers only: no bool, no text ("5") where an int
    or float is meant (pydantic's lax mode would take both); one line naming the setting."""
    types = _base_types(annotation)
    if not types & {int, float} or str in types:
        return
    items = value if isinstance(value, list | tuple) and types & {list, tuple} else [value]
    for item in items:
        if isinstance(item, bool | str):
            kind = "an integer" if int in types and float not in types else "a number"
            raise SrnetError(f"{flag} {item!r}: expected {kind}, got {type(item).__name__}")


def flag_name(name: str, field: FieldInfo) -> str:
    """The command-line flag of the setting ``name``."""
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    if "flag" in extra:
        return str(extra["flag"])
    return ("--no-" if field.default is True else "--") + name.replace("_", "-")


def setting_error(cls: type[VerbConfig], exc: ValidationError) -> str:
    """One line for the first bad setting, named by its flag: ``--examples -1: <what>``."""
    err = exc.errors()[0]
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "value_error" or not err["loc"]:  # a check's own message names the setting
        return msg
    name = str(err["loc"][0])
    flag = flag_name(name, cls.model_fields[name])
    return f"{flag}: required" if err["type"] == "missing" else f"{flag} {err['input']}: {msg}"


F = TypeVar("F", bound=Callable[..., Any])


def takes(config_type: type[VerbConfig]) -> Callable[[F], F]:
    """Show ``config_type``'s fields, typed and with their defaults, as the keyword-only parameters
    of the decorated API verb in place of its ``**settings`` (``help()``, ``inspect.signature``)."""

    def show(verb: F) -> F:
        signature = inspect.signature(verb)
        own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        fields = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=field.annotation,
                                    default=inspect.Parameter.empty if field.is_required()
                                    else field.get_default(call_default_factory=True))
                  for name, field in config_type.model_fields.items()]
        verb.__signature__ = signature.replace(parameters=[*own, *fields])  # type: ignore[attr-defined]
        return verb

    return show


def _quantize_checked(config: BenchConfig | ExportConfig) -> BenchConfig | ExportConfig:
    """``config`` once its ``quantize`` is a known mode with ``onnx`` on (the ONNX export's check)."""
    from srnet.export.onnx import check_quantize

    try:
        check_quantize(config.quantize, config.onnx)
    except SrnetError as exc:
        raise ValueError(str(exc)) from None
    return config


class PredictConfig(VerbConfig):
    """``srnet predict``: a finished run's predictions on one split."""

    split: str = Field("train", description="train, dev, or the name of an eval/challenge split")


class DifficultyConfig(VerbConfig):
    """``srnet bias difficulty``: RMC sample difficulty from several runs' training predictions."""

    alpha: float = Field(0.2, ge=0, le=1, description="lowest difficulty")
    allow_collapsed: bool = Field(False, description="use a member run that collapsed on an ID split "
                                  "(refused by default: its losses dominate the variance)")

    added_later: ClassVar[dict[str, Any]] = {"allow_collapsed": False}


class AttackSettings(VerbConfig):
    """What every attack of ``srnet attack`` and of the sweep's ``attack`` stage shares."""

    split: str = Field("dev", description="dev, or the name of an eval/challenge split")
    n: int | None = Field(None, ge=1, strict=True, description="examples to attack, drawn with --seed "
                          "(default: the whole split)")
    seed: int = Field(0, ge=0, strict=True,
                      description="seed of the subset and of the attacks' random choices")
    examples: int = Field(0, ge=0, json_schema_extra={"metavar": "N"},
                          description="also write <out>/<attack>_examples.md: the first N successes, "
                          "changed words marked")

    non_semantic: ClassVar[tuple[str, ...]] = ("examples",)  # a review file: not in the stage key


class AttackConfig(AttackSettings):
    """``srnet attack``: one attack of one model on one split."""

    attack: str = Field(description="attack name: {attacks}")
    params: dict[str, Any] = Field(default_factory=dict, json_schema_extra={"flag": "--param",
                                   "metavar": "KEY=VALUE"},
                                   description="attack setting, e.g. --param max_fraction=0.2 (repeatable)")


class ExportConfig(VerbConfig):
    """``srnet export``: how a model with its masks baked in is written."""

    shrink: bool = Field(False, description="remove pruned heads and neurons (head/neuron masks); reload "
                         "with srnet.load_model or trust_remote_code=True")
    onnx: bool = Field(False, description="also write model.onnx (dynamic batch and length), checked "
                       "against PyTorch's logits with ONNX Runtime; needs pip install 'srnet[onnx]'")
    quantize: str | None = Field(None, json_schema_extra={"metavar": "MODE"},
                                 description="with --onnx: also write model.int8.onnx (int8: ONNX "
                                 "Runtime's dynamic INT8), compared with the FP32 graph in "
                                 "srnet_export.json and the model card")

    added_later: ClassVar[dict[str, Any]] = {"quantize": None}
    _quantize = model_validator(mode="after")(_quantize_checked)


class BenchConfig(VerbConfig):
    """``srnet bench``: what is timed, and how."""

    omp: list[Annotated[float, Field(ge=0, lt=1)]] = Field(
        default_factory=list, json_schema_extra={"metavar": "SPARSITY"},
        description="also time OMP of the first model at these sparsities: head+neuron masks shrunk, "
        "and unstructured masks in dense weights")
    batch_sizes: list[Annotated[int, Field(ge=1)]] = Field([1, 32], min_length=1, description="batch sizes")
    lengths: list[Annotated[int, Field(ge=2)]] = Field([64, 128], min_length=1,
                                                       description="sequence lengths (tokens)")
    rounds: int = Field(10, ge=1, description="timed rounds (median reported)")
    warmup: int = Field(2, ge=0, description="untimed rounds first")
    threads: int | None = Field(None, ge=1, description="torch (and ONNX Runtime) threads (default: "
                                "torch's)")
    onnx: bool = Field(False, description="also time every model under ONNX Runtime (CPU, same threads, "
                       "graph optimisations on), interleaved; needs pip install 'srnet[onnx]'")
    quantize: str | None = Field(None, json_schema_extra={"metavar": "MODE"},
                                 description="with --onnx: also time each model's dynamic INT8 ONNX "
                                 "graph (int8)")

    added_later: ClassVar[dict[str, Any]] = {"quantize": None, "omp": []}
    _quantize = model_validator(mode="after")(_quantize_checked)


class TransferConfig(VerbConfig):
    """``srnet transfer``: where one mask's task runs go."""

    out_dir: Path = Field(Path("runs/transfer"), json_schema_extra={"flag": "--output-dir"},
                          description="folder of the task runs and transfer.json")


class ReportConfig(VerbConfig):
    """``srnet report``: what the report draws."""

    figures: bool = Field(True, description="figures beside report.md (--no-figures: "
                          "report.md with tables only)")

