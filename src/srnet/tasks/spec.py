"""Typed specifications: how a recipe names one data split, and what a task family knows.

:class:`DataSpec` is the recipe's view of one split (a file, a hub dataset or the synthetic
generator); :class:`Task` and :class:`LabelScheme` are what a task module declares: its label
names in the model's class order, label aliases, default columns, metrics and challenge sets.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from srnet.errors import SrnetError
from srnet.tasks.base import LabelSpace
from srnet.tasks.formats import FORMATS, HANS_FILE, ColumnMap, DataFormat, detect_format

_GENERIC_STEM = re.compile(r"(train|dev|test|val|valid|validation|eval|data|v\d+\w*)", re.IGNORECASE)


class HubSpec(BaseModel):
    """A Hugging Face hub dataset split, loaded with ``datasets.load_dataset``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="dataset id on the hub, e.g. 'nyu-mll/glue'")
    config: str | None = Field(None, description="dataset configuration, e.g. 'mnli'")
    split: str = Field(description="split name, e.g. 'validation_matched'")


class SyntheticSpec(BaseModel):
    """Parameters of the synthetic controlled-bias NLI generator (:mod:`srnet.tasks.synthetic`)."""

    model_config = ConfigDict(extra="forbid")

    split: Literal["train", "dev", "challenge"] = Field(
        description="train/dev: biased ID data (3-way); challenge: shortcut broken (2-way, HANS-like)"
    )
    n: int = Field(2000, gt=0, description="number of examples to generate")
    bias_strength: float = Field(
        0.9, ge=0.0, le=1.0,
        description="ID splits: fraction of high-overlap pairs that are entailment (1/3 = no bias)",
    )
    seed: int = Field(0, description="generator seed (train/dev/challenge draw different streams)")

    @property
    def challenge(self) -> str | None:
        """The challenge set whose label scheme the split's labels follow: the challenge split is
        two-way like HANS (``hans``); train and dev have the task's own labels (None)."""
        return "hans" if self.split == "challenge" else None


class DataSpec(BaseModel):
    """One data split of a recipe: where it comes from, how to read it, how to subsample it."""

    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(
        None, description="data file; relative paths resolve against data.base_dir; $VARS expand"
    )
    format: str = Field(
        "auto",
        description=f"file layout: auto or a registered format ({', '.join(FORMATS)}); auto = by file "
        "name or suffix (.jsonl/.json, .csv, .tsv, heuristics_*_set.txt, .txt: one document per line; "
        "txt_paragraphs: documents separated by blank lines)",
    )
    columns: dict[str, str] = Field(
        default_factory=dict,
        description="srnet field (text_a, text_b, label, id, or a meta name) -> file column",
    )
    hub: HubSpec | None = Field(None, description="load a Hugging Face hub dataset instead of a file")
    synthetic: SyntheticSpec | None = Field(None, description="generate the synthetic NLI task")
    ids_file: str | None = Field(
        None,
        description="keep only the examples whose id is in this JSON Lines file ('pairID' or 'id' "
        "of each row), e.g. a published MNLI hard subset as a challenge split",
    )
    n: int | None = Field(None, gt=0, description="stratified subsample of n examples (None = all)")
    seed: int = Field(0, description="seed of the subsample")
    name: str | None = Field(None, description="display name (default: derived from the file name)")
    challenge: str | None = Field(
        None, description="challenge label space (e.g. hans, fever_symmetric, paws); None = task labels"
    )
    label_map: dict[str, str] = Field(
        default_factory=dict,
        description="file label -> the split's label name, e.g. {e: entailment} or {0: entailment}; "
        "'-' marks rows without a gold label",
    )

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        if value != "auto" and value not in FORMATS:
            raise ValueError(f"unknown data format '{value}'; known: {['auto', *FORMATS]}")
        return value

    @field_validator("label_map", mode="before")
    @classmethod
    def _label_map_keys(cls, value: object) -> object:
        """YAML reads ``{0: entailment}`` with int keys; file labels are matched as text."""
        if isinstance(value, Mapping):
            return {_label_text(k): _label_text(v) for k, v in value.items()}
        return value

    @model_validator(mode="after")
    def _check_source(self) -> DataSpec:
        sources = [k for k in ("path", "hub", "synthetic") if getattr(self, k) is not None]
        if len(sources) != 1:
            raise ValueError(f"give exactly one of path, hub or synthetic (got {sources or 'none'})")
        fmt = self.data_format
        if fmt.source not in sources:
            raise ValueError(f"format '{fmt.name}' needs '{fmt.source}', got '{sources[0]}'")
        if self.challenge is None:
            self.challenge = self.synthetic.challenge if self.synthetic is not None else fmt.challenge
        return self

    @property
    def resolved_format(self) -> str:
        """The format, with ``auto`` resolved from the source (file suffix, hub or synthetic)."""
        if self.format != "auto":
            return self.format
        if self.hub is not None:
            return "hub"
        if self.synthetic is not None:
            return "synthetic"
        return detect_format(self.path or "")

    @property
    def data_format(self) -> DataFormat:
        """The registered format of :attr:`resolved_format` (layout, columns, label scheme)."""
        return FORMATS[self.resolved_format]

    @property
    def display_name(self) -> str:
        """``name``, or one derived from the source: ``dev_matched``, ``hans``, ``hans_train``..."""
        if self.name:
            return self.name
        if self.synthetic is not None:
            return f"synthetic_{self.synthetic.split}"
        if self.hub is not None:
            parts = [self.hub.name.rsplit("/", 1)[-1], self.hub.config, self.hub.split]
            return "_".join(p for p in parts if p)
        path = PurePath(self.path or "")
        hans = HANS_FILE.fullmatch(path.name)
        if hans:
            part = hans["part"]
            return "hans" if part == "evaluation" else f"hans_{part}"
        stem = path.stem
        if _GENERIC_STEM.fullmatch(stem) and path.parent.name:
            return f"{path.parent.name}_{stem}"
        return stem


def _label_text(value: object) -> object:
    """An int (or integral float) label as its text; other values unchanged."""
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value) if isinstance(value, int) else value


@dataclass(frozen=True)
class Shortcut:
    """A challenge set's known shortcut: on examples whose ``meta[key]`` is one of ``heuristics``
    it predicts ``follows``.  The shortcut gap is the mean accuracy on ``follows`` minus the mean
    on ``against`` over those heuristics (HANS: entailment minus non-entailment)."""

    heuristics: tuple[str, ...]
    follows: str
    against: str
    key: str = "heuristic"


@dataclass(frozen=True)
class LabelScheme:
    """How a split's labels are read and scored: label space, aliases, columns, metric, groups."""

    space: LabelSpace
    metric: str = "accuracy"
    aliases: Mapping[str, str] = field(default_factory=dict)
    """Spelling in files -> label name (matched case-insensitively, like the names)."""
    columns: ColumnMap = field(default_factory=dict)
    """Extra default columns (e.g. HANS ``heuristic``/``subcase`` meta)."""
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """metrics.json block name -> meta keys to break accuracy down by (then by gold label)."""
    shortcut: Shortcut | None = None
    """The shortcut the split tests, scored as a shortcut gap (None: no gap)."""
    prediction_file: str | None = None
    """Format of an official scorer's prediction file to write too (a key of
    :data:`srnet.evaluation.challenge.PREDICTION_FILES`, e.g. ``hans``)."""


@dataclass(frozen=True)
class Task:
    """A task family: labels in the model's class order, how files spell them, how it is scored."""

    name: str
    labels: tuple[str, ...]
    columns: ColumnMap
    aliases: Mapping[str, str] = field(default_factory=dict)
    primary_metric: str = "accuracy"
    challenge_sets: Mapping[str, LabelScheme] = field(default_factory=dict)
    description: str = ""
    run_kind: str = "task"
    """How its recipes run (a registered run kind: ``task`` trains a classifier, ``text`` searches a
    mask on raw text)."""

    @property
    def pair(self) -> bool:
        """Whether examples are text pairs (the default columns name a ``text_b``)."""
        return "text_b" in self.columns

    def scheme(self, challenge: str | None = None) -> LabelScheme:
        """The label scheme of a challenge set, or of the task's own labels when ``None``."""
        if challenge is None:
            return LabelScheme(LabelSpace(self.labels), self.primary_metric, self.aliases)
        try:
            return self.challenge_sets[challenge]
        except KeyError:
            raise SrnetError(
                f"task {self.name} has no challenge set '{challenge}'; "
                f"known: {sorted(self.challenge_sets)}"
            ) from None

    def challenge_metric(self, spec: DataSpec) -> str:
        """The primary metric of the split ``spec`` names (its challenge set's, or the task's)."""
        return self.scheme(spec.challenge).metric
