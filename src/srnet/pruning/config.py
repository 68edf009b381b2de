"""Typed configuration of a pruning method (the ``pruning`` section of a recipe).

The section holds what every method shares (method, sparsity, schedule, granularity, scope,
roles, pattern) and ``params``: the chosen method's own settings, validated by the
``params_model`` of the method class registered under that name (each method module declares
it next to its code)::

    pruning:
      method: mask_train
      sparsity: 0.5
      params: {init: hard, mask_lr: 5.0e-5}

The flat spelling of earlier recipes (``init: hard`` or ``imp: {...}`` next to ``method``) still
loads: :data:`srnet.compat.LEGACY_LAYOUT` names those keys, and a one-line note says where they
go now.

Validators raise ``ValueError`` with one-line messages that name the value, so the recipe
loader can report them with the file and field.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from srnet.compat import LEGACY_LAYOUT, legacy_pruning_key, pruning_fingerprint_layout, upgrade_pruning
from srnet.models import ALL_ROLES, DEFAULT_ROLES, GRANULARITIES
from srnet.pruning.registry import METHODS, available_methods, method_help
from srnet.sparsity.schedules import CubicSchedule, FixedSchedule, Schedule


def _unit_interval(value: float, what: str) -> float:
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{what} must be in [0, 1), got {value}")
    return value


class ScheduleConfig(BaseModel):
    """How the target sparsity moves during training (mask_train and l0)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["fixed", "cubic"] = Field(
        "fixed", description="'fixed': the target from step 0; 'cubic': gradual increase."
    )
    initial: float = Field(0.0, description="Cubic: sparsity before the ramp starts.")
    start: float = Field(0.0, ge=0.0, le=1.0, description="Cubic: ramp start, fraction of steps.")
    end: float = Field(1.0, ge=0.0, le=1.0, description="Cubic: ramp end, fraction of steps.")

    @field_validator("initial")
    @classmethod
    def _check_initial(cls, value: float) -> float:
        return _unit_interval(value, "schedule.initial")

    @model_validator(mode="after")
    def _check_order(self) -> ScheduleConfig:
        if self.end < self.start:
            raise ValueError(f"schedule.end {self.end} is before schedule.start {self.start}")
        return self

    def build(self, final: float, total_steps: int) -> Schedule:
        """The schedule towards ``final`` over ``total_steps`` optimizer steps."""
        if self.kind == "fixed":
            return FixedSchedule(final)
        start, end = round(self.start * total_steps), round(self.end * total_steps)
        return CubicSchedule(self.initial, final, start, end)


DENSE = {"method": "dense", "sparsity": 0.0}
"""The ``pruning`` section of a dense run (what ``pruning: null`` means)."""


class MethodParams(BaseModel):
    """The base of every method's ``params_model``: strict (an unknown key is an error), and every
    field carries its help text in ``description``."""

    model_config = ConfigDict(extra="forbid")


class PruningConfig(BaseModel):
    """Which weights are pruned, how, and to what sparsity."""

    model_config = ConfigDict(extra="forbid")

    method: str = Field(
        "mask_train",
        description="A registered pruning method (dense masks nothing and ignores sparsity); its "
        "own settings go under params.",
        json_schema_extra=lambda schema: schema.update(description=f"Registered method: {method_help()}."),
    )
    sparsity: float = Field(0.5, description="Target fraction of zeros in the masked weights.")
    schedule: ScheduleConfig = Field(
        default_factory=ScheduleConfig, description="Target sparsity over time (mask_train, l0)."
    )
    granularity: Literal[GRANULARITIES] = Field(  # type: ignore[valid-type]
        "unstructured",
        description="What one mask entry removes: a weight ('unstructured'), an attention head "
        "('head': its rows of Q, K, V and columns of the attention output), an FFN neuron "
        "('neuron': its row of FFN-in and column of FFN-out) or both ('head+neuron'); sparsity is "
        "then the fraction of heads/neurons removed.  Structured masks ignore roles.  Every method "
        "but dense gates groups (l0: one hard-concrete gate per head/neuron); fixed follows its "
        "mask file.",
    )
    scope: Literal["local", "global"] = Field(
        "local",
        description="'local': the same sparsity in each matrix (each layer's heads/neurons); "
        "'global': one threshold across them.",
    )
    roles: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ROLES),
        description=f"Weight roles to mask, among {list(ALL_ROLES)}.",
    )
    pattern: str | None = Field(
        None, description="Optional regex on module names that further selects weights."
    )
    params: SerializeAsAny[MethodParams] = Field(
        default_factory=dict,  # type: ignore[arg-type]  (validated into the method's params model)
        validate_default=True,
        description="The method's own settings, validated by its params model "
        "(srnet.pruning.get_method(name).params_model); an unknown key is an error naming the "
        "method's parameters.",
    )

    @model_validator(mode="before")
    @classmethod
    def _old_spellings(cls, data: object) -> object:
        """Earlier spellings of the section (``granularity: local|global``, flat method settings),
        upgraded by :func:`srnet.compat.upgrade_pruning` before validation."""
        if not isinstance(data, dict):
            return data
        method = data.get("method", cls.model_fields["method"].default)
        known = METHODS.get(method, None) if isinstance(method, str) else None
        own = set(known.params_model.model_fields) if known is not None else None
        return upgrade_pruning(data, method, own)

    @field_validator("params", mode="before")
    @classmethod
    def _method_params(cls, value: Any, info: ValidationInfo) -> Any:
        """``params`` validated by the method's own model; one line per unknown key."""
        method = info.data.get("method")
        if method is None:
            return value  # the method's own error is the one to report
        model: type[MethodParams] = METHODS.get(method).params_model
        if isinstance(value, model):
            return value
        value = value.model_dump() if isinstance(value, BaseModel) else value
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise ValueError(f"params of method '{method}' must be a mapping, got {value!r}")
        unknown = [key for key in value if key not in model.model_fields]
        if unknown:
            message = not_a_parameter(method, str(unknown[0]))
            raise ValidationError.from_exception_data("params", [{
                "type": PydanticCustomError("not_a_parameter", "{message}", {"message": message}),
                "loc": (str(unknown[0]),), "input": {unknown[0]: value[unknown[0]]}}])
        return model.model_validate(value)

    @model_validator(mode="after")
    def _check_method_config(self) -> PruningConfig:
        """The method's own checks of its params against the shared fields."""
        METHODS.get(self.method).check_config(self)
        if self.schedule.kind == "cubic" and self.schedule.initial > self.sparsity:
            raise ValueError(f"schedule.initial {self.schedule.initial} is above the target sparsity "
                             f"{self.sparsity}: a gradual schedule rises to its target")
        return self

    @field_validator("sparsity")
    @classmethod
    def _check_sparsity(cls, value: float) -> float:
        return _unit_interval(value, "sparsity")

    @field_validator("roles")
    @classmethod
    def _check_roles(cls, value: list[str]) -> list[str]:
        unknown = [r for r in value if r not in ALL_ROLES]
        if unknown or not value:
            raise ValueError(f"roles {value} must be a non-empty subset of {list(ALL_ROLES)}")
        return value

    @field_validator("pattern")
    @classmethod
    def _check_pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"pattern '{value}' is not a valid regex: {exc}") from None
        return value

    @field_validator("method")
    @classmethod
    def _check_method(cls, value: str) -> str:
        if value not in METHODS:
            raise ValueError(f"unknown method '{value}'; known: {available_methods()}")
        return value

    @classmethod
    def known_key(cls, parts: list[str]) -> bool:
        """Whether dotted key ``parts`` (below ``pruning``) can be set, e.g. by a sweep's grid: a
        shared field, ``params.<a parameter of some registered method>``, or an old flat key."""
        head, rest = parts[0], parts[1:]
        if head == "params":
            return not rest or (len(rest) == 1 and METHODS.has_param(rest[0]))
        if head in LEGACY_LAYOUT:
            return legacy_pruning_key(parts)
        if head not in cls.model_fields or not rest:
            return head in cls.model_fields
        if head == "schedule":
            return len(rest) == 1 and rest[0] in ScheduleConfig.model_fields
        return head == "roles" and len(rest) == 1 and rest[0].isdigit()  # one role of the list

    def check_inputs(self) -> None:
        """Fail early, before any model loads, when the method's input files are missing."""
        METHODS.get(self.method).check_inputs(self)

    def semantic_dict(self) -> dict[str, Any]:
        """The section as the fingerprint sees it (:func:`srnet.compat.fingerprint_layout`), so a
        recipe keeps the fingerprint it had before per-method params, whichever spelling it is
        written in."""
        return pruning_fingerprint_layout(self.model_dump(mode="json"))


def not_a_parameter(method: str, key: str) -> str:
    """One line for a ``params`` key that method ``method`` does not have: which methods do, and
    the method's own parameters."""
    owners = [name for name in available_methods()
              if name != method and key in METHODS.get(name).params_model.model_fields]
    whose = f" (a parameter of {', '.join(owners)})" if owners else ""
    own = ", ".join(METHODS.get(method).params_model.model_fields) or "none"
    return f"not a parameter of method '{method}'{whose}; its parameters: {own}"
