"""Each verb's settings, one typed model per verb (a :class:`~srnet.settings.VerbConfig`): the sweep
stage's params model, the config (or keywords) of the :mod:`srnet.api` call and the CLI's flags
(:mod:`srnet.cli.flags`) all come from it, so a setting, its type, default and help are written
once. ``export``'s model lives with the export room (:class:`srnet.export.config.ExportConfig`,
imported here with the others), so that the export functions take it too.

Where a verb runs is not a setting: run folders, output paths, ``overwrite`` and plug-ins stay the
call's own arguments.  This module imports no torch (the CLI's parser is built from it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field, model_validator

from srnet.export.config import quantize_checked
from srnet.settings import VerbConfig


class PredictConfig(VerbConfig):
    """``srnet predict``: a finished run's predictions on one split."""

    split: str = Field("train", description="train, dev, or the name of an eval/challenge split")


class DifficultyConfig(VerbConfig):
    """``srnet bias difficulty``: RMC sample difficulty from several runs' training predictions."""

    alpha: float = Field(0.2, ge=0, le=1, description="lowest difficulty")
    allow_collapsed: bool = Field(False, description="use a member whose training predictions collapsed "
                                  "(one class or near chance; refused by default: its losses dominate "
                                  "the variance)")

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
    _quantize = model_validator(mode="after")(quantize_checked)


class TransferConfig(VerbConfig):
    """``srnet transfer``: where one mask's task runs go."""

    out_dir: Path = Field(Path("runs/transfer"), json_schema_extra={"flag": "--output-dir"},
                          description="folder of the task runs and transfer.json")


class ReportConfig(VerbConfig):
    """``srnet report``: what the report draws."""

    figures: bool = Field(True, description="figures beside report.md (--no-figures: "
                          "report.md with tables only)")

