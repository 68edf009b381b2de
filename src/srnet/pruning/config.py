"""Typed configuration of a pruning method (the ``pruning`` section of a recipe).

Validators raise ``ValueError`` with one-line messages that name the value, so the recipe
loader can report them with the file and field.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from srnet.models import ALL_ROLES, DEFAULT_ROLES, GRANULARITIES
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


class ImpConfig(BaseModel):
    """Iterative magnitude pruning."""

    model_config = ConfigDict(extra="forbid")

    prune_fraction: float = Field(
        0.1, gt=0.0, le=1.0, description="Fraction of the original weights pruned per event."
    )
    every: float = Field(
        0.1, gt=0.0, le=1.0, description="Steps between pruning events, as a fraction of t_max."
    )
    rewind: bool = Field(
        False, description="Reset the surviving weights to their prepare-time values at each event."
    )


class L0Config(BaseModel):
    """Hard-concrete L0 gates (Louizos et al. 2018; Robust Tickets), per weight or per head/neuron."""

    model_config = ConfigDict(extra="forbid")

    lambda_: float = Field(
        1.0, ge=0.0,
        description="Weight of the normalised L0 penalty: the expected fraction of non-zero gates "
        "(weights, or heads/neurons for a structured granularity).",
    )
    lambda_start: float = Field(
        0.0, ge=0.0, le=1.0,
        description="Fraction of steps with lambda = 0 before the ramp (Robust Tickets' code: 0.1).",
    )
    lambda_warmup: float = Field(
        0.0, ge=0.0, le=1.0,
        description="Fraction of steps over which lambda then ramps linearly from 0 (Robust Tickets: 0.3).",
    )
    temperature: float = Field(2 / 3, gt=0.0, description="Concrete temperature beta.")
    gamma: float = Field(-0.1, lt=0.0, description="Lower stretch limit (< 0).")
    zeta: float = Field(1.1, gt=1.0, description="Upper stretch limit (> 1).")
    init_keep: float = Field(
        0.9, gt=0.0, lt=1.0, description="Initial keep probability: log_alpha = logit(init_keep)."
    )
    train_weights: bool = Field(False, description="Also train the masked weights.")

    @model_validator(mode="after")
    def _check_lambda_schedule(self) -> L0Config:
        if self.lambda_start + self.lambda_warmup > 1.0:
            raise ValueError(
                f"l0.lambda_start {self.lambda_start} + l0.lambda_warmup {self.lambda_warmup} exceeds 1"
            )
        return self

    def lambda_at(self, step: int, total_steps: int) -> float:
        """The penalty weight at ``step``: 0 for the first ``lambda_start`` of the steps, then a
        linear ramp to ``lambda_`` over the next ``lambda_warmup`` (no ramp when it is 0)."""
        start, ramp = self.lambda_start * total_steps, self.lambda_warmup * total_steps
        if step < start:
            return 0.0
        return self.lambda_ * (min(1.0, (step - start) / ramp) if ramp > 0 else 1.0)


DENSE = {"method": "dense", "sparsity": 0.0}
"""The ``pruning`` section of a dense run (what ``pruning: null`` means)."""


class PruningConfig(BaseModel):
    """Which weights are pruned, how, and to what sparsity."""

    model_config = ConfigDict(extra="forbid")

    method: str = Field(
        "mask_train",
        description="Registered method: dense (no masks, sparsity ignored), omp, random, imp, "
        "mask_train, l0, fixed.",
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
    importance: Literal["magnitude", "gradient"] = Field(
        "magnitude",
        description="omp: how groups and weights are scored.  'magnitude': |W| (a group's RMS); "
        "'gradient' (heads/neurons only): E|dL/dxi| of a gate xi = 1 on each head's or neuron's "
        "output over the first importance_batches training batches (Michel et al. 2019).",
    )
    importance_batches: int = Field(
        32, ge=1,
        description="importance 'gradient': training batches averaged (fewer if the split has fewer).",
    )
    importance_normalize: bool = Field(
        True,
        description="importance 'gradient': divide each layer's head (neuron) importances by their "
        "root mean square (Michel et al.'s per-layer L2 norm, scaled so heads and neurons compare).",
    )
    roles: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ROLES),
        description=f"Weight roles to mask, among {list(ALL_ROLES)}.",
    )
    pattern: str | None = Field(
        None, description="Optional regex on module names that further selects weights."
    )
    init: Literal["hard", "soft", "random"] = Field(
        "hard",
        description="Score init for mask_train: 'hard' alpha*phi on the top magnitudes, "
        "'soft' |W|, 'random' seeded uniform.",
    )
    phi: float = Field(0.01, gt=0.0, description="Hard init: the score threshold phi.")
    alpha: float = Field(2.0, gt=0.0, description="Hard init: kept scores are alpha*phi.")
    rerank_every: int = Field(
        10, ge=1, description="mask_train: re-rank the threshold every N steps (and at freeze)."
    )
    train_classifier: bool = Field(False, description="mask_train/l0: also train the classifier weights.")
    freeze_weights: bool = Field(
        False,
        description="One-shot methods (dense, omp, random, fixed): freeze every backbone weight so "
        "only the task classifier (or, for the text task, the MLM head) trains: a probe of the "
        "subnetwork.  mask_train and l0 always freeze them; imp cannot (it trains what it prunes).",
    )
    mask_lr: float = Field(
        5e-5, gt=0.0, description="Learning rate of mask scores / log_alpha (Win-win: 5e-5)."
    )
    imp: ImpConfig = Field(default_factory=ImpConfig, description="Settings of method imp.")
    l0: L0Config = Field(default_factory=L0Config, description="Settings of method l0.")
    mask_file: str | None = Field(
        None,
        description="fixed: masks.safetensors keyed by module name, or head/neuron gates keyed by "
        "group name (the granularity follows the file).",
    )

    @model_validator(mode="before")
    @classmethod
    def _old_granularity(cls, data: object) -> object:
        """Recipes before ``scope`` said ``granularity: local|global``: read it as the scope."""
        if isinstance(data, dict) and data.get("granularity") in ("local", "global"):
            data = dict(data)
            old = data.pop("granularity")
            if data.setdefault("scope", old) != old:
                raise ValueError(
                    f"granularity '{old}' (the old name of scope) contradicts scope '{data['scope']}'"
                )
        return data

    @model_validator(mode="after")
    def _check_importance(self) -> PruningConfig:
        if self.importance == "gradient" and self.method != "omp":
            raise ValueError(f"importance 'gradient' is for method 'omp', not '{self.method}'")
        if self.importance == "gradient" and self.granularity == "unstructured":
            raise ValueError(
                "importance 'gradient' scores heads and neurons: it needs granularity head, neuron "
                "or head+neuron, not 'unstructured'"
            )
        return self

    @model_validator(mode="after")
    def _check_freeze(self) -> PruningConfig:
        if self.freeze_weights and self.method == "imp":
            raise ValueError("freeze_weights does not apply to method 'imp': it trains the weights it prunes")
        if self.freeze_weights and self.method == "l0" and self.l0.train_weights:
            raise ValueError("freeze_weights contradicts l0.train_weights: true")
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
        from srnet.pruning.base import available_methods

        if value not in available_methods():
            raise ValueError(f"unknown method '{value}'; known: {available_methods()}")
        return value
