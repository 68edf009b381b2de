"""The run record: ``metrics.json`` as a typed model, the one contract between the run kinds that
write it and every reader (the report's runs and statistics, its sections, ``f_bias``, transfer,
the demo, the model card, the CLI summary).

Every field is optional and unknown keys are kept (``extra="allow"``), so a folder written by an
older or newer srnet still loads; the scores of one split stay a JSON mapping, typed as
:class:`SplitScores`. ``docs/run-directory.md`` lists every field (checked by a test)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, with_config
from typing_extensions import TypedDict

from srnet.errors import SrnetError
from srnet.io import atomic_write_json

METRICS_FILENAME = "metrics.json"

Number = int | float
"""A score as written: an int stays an int (a support count), a float a float."""


@with_config(ConfigDict(extra="allow"))
class EasyHard(TypedDict, total=False):
    """Accuracy on the ID examples the bias model gets right (easy) and wrong (hard)."""

    easy: Number
    hard: Number
    gap: Number
    n_easy: int
    n_hard: int
    rule: str
    bias_file: str


@with_config(ConfigDict(extra="allow"))
class SplitScores(TypedDict, total=False):
    """The scores of one evaluation split (``id.<split>`` / ``ood.<split>``)."""

    n: int
    accuracy: Number
    macro_f1: Number
    weighted_f1: Number
    per_class: dict[str, dict[str, Number]]
    confusion: list[list[int]]
    by_heuristic: dict[str, dict[str, Number]]
    by_subcase: dict[str, Any]
    shortcut_gap: Number
    primary: Number
    majority: dict[str, Any]
    collapsed: bool
    chance: Number
    near_chance: bool
    easy_hard: EasyHard
    skipped_no_gold_label: int
    collapse: str
    by_rule: dict[str, SplitScores]
    rule_disagreement: int


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Selection(_Open):
    """How the evaluated checkpoint was chosen."""

    rule: str | None = None
    split: str | None = None
    after: Number | None = None
    step: int | None = None
    of: int | None = None


class MaskMovement(_Open):
    """How far a learned mask moved from its start (``mask_train``, ``l0``)."""

    flipped: Number | None = None
    flipped_entries: int | None = None
    jaccard: Number | None = None
    moved: bool | None = None
    per_matrix: dict[str, dict[str, Number]] | None = None


class MaskBudget(_Open):
    """How far a score mask's learning rate lets it move (``mask_train``): the resolved
    ``mask_lr``, whether it was given or ``auto`` (and capped), the reach it implies over the
    schedule's steps, the score scale and the initialisation."""

    mask_lr: Number | None = None
    rule: str | None = None
    capped: bool | None = None
    reach: Number | None = None
    steps_per_threshold: Number | None = None
    score_scale: Number | None = None
    steps: int | None = None
    init: str | None = None


class SparsityRecord(_Open):
    """The sparsity of the masks that are applied (or zeros counted in the weights)."""

    overall: Number | None = None
    by_layer_role: dict[str, Number] | None = None
    per_matrix: dict[str, Number] | None = None
    target: Number | None = None
    measured_from: str | None = None


class RunMetrics(_Open):
    """``metrics.json``: written last by every run kind, its presence means the run is complete."""

    run: str | None = None
    task: str | None = None
    model: str | None = None
    seed: int | None = None
    objective: str | None = None
    """(text runs) the pre-training objective."""
    method: str | None = None
    """(text runs) the pruning method."""
    best_step: int | None = None
    mixed_precision: str | None = None
    selection: Selection | None = None
    mlm_head: str | None = None
    """(text runs) where the MLM head came from: the checkpoint's, or fresh."""
    blocks: dict[str, int] | None = None
    """(text runs) block size and the number of dev and training blocks."""
    pretraining: dict[str, Number] | None = None
    """(text runs) the objective's losses on the held-out dev blocks."""
    runtime: dict[str, Any] | None = None
    id: dict[str, SplitScores] = {}
    ood: dict[str, SplitScores] = {}
    sparsity: SparsityRecord | None = None
    f_bias: dict[str, Any] | None = None
    mask_budget: MaskBudget | None = None
    mask_movement: MaskMovement | None = None
    time_s: Number | None = None

    @property
    def evaluated_by(self) -> str:
        """The runtime that scored the model (``runtime``): ``torch``, ``onnx``, ``onnx-int8`` or
        ``onnx-int8-per-channel``."""
        return str((self.runtime or {}).get("runtime") or "torch")

    @property
    def is_text_run(self) -> bool:
        """A task-agnostic (TAMT) run: pre-training losses, no evaluation splits."""
        return self.pretraining is not None

    def as_json(self) -> dict[str, Any]:
        """The record as written: the keys its writer set (in the order fields are declared here,
        which is the order the run kinds write them), nothing added."""
        return self.model_dump(mode="json", exclude_unset=True)


UNION_TAGS = {"int", "float", "str", "bool", "none"}
"""Names pydantic adds to an error's location for the member of a union it tried."""


def read_metrics(path: str | Path) -> RunMetrics:
    """The record in ``path`` (a run directory or its ``metrics.json``); a one-line SrnetError
    when it is missing, unreadable or not a run record."""
    path = Path(path)
    file = path / METRICS_FILENAME if path.is_dir() else path
    if not file.is_file():
        raise SrnetError(f"{file}: not found (is '{path}' a finished srnet run?)")
    try:
        return RunMetrics.model_validate_json(file.read_bytes())
    except ValidationError as exc:
        error = exc.errors()[0]
        if error["type"] == "json_invalid":
            raise SrnetError(f"{file}: unreadable run record (not valid JSON)") from None
        where = ".".join(str(p) for p in error["loc"] if p not in UNION_TAGS) or "the file"
        raise SrnetError(f"{file}: not a run record ({where}: {error['msg']})") from None


def write_metrics(folder: Path, metrics: RunMetrics | dict[str, Any]) -> RunMetrics:
    """Check ``metrics`` against the record and write ``<folder>/metrics.json`` atomically (last:
    its presence marks the run complete); returns the record."""
    record = metrics if isinstance(metrics, RunMetrics) else RunMetrics.model_validate(metrics)
    atomic_write_json(folder / METRICS_FILENAME, record.as_json())
    return record
