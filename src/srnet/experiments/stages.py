"""Stage kinds: the typed steps a sweep chains together, one registered class per kind.

A stage takes a resolved :class:`~srnet.config.Recipe` plus its own parameters (a sweep's
``with:`` section) and writes one output folder.  Its *output* is what a later stage's
``@name`` reference resolves to:

========== ======================================= ============================================
kind       what it does                            output (what ``@name`` means)
========== ======================================= ============================================
train      a whole recipe: fine-tune, mask search,  the run directory (``model.init_from``,
           prune, fine-tune in isolation           ``dense_reference``, ``loss.teacher``)
evaluate   the recipe without ``data.train``       the run directory
bias_fit   ``srnet bias fit``                      the bias folder (``bias_dir``)
predict    a run's predictions on one split        the predictions file (``loss.teacher``)
difficulty RMC difficulty from several runs        the difficulty file (``loss.difficulty``)
========== ======================================= ============================================

Adding a kind is one class and its ``@register_stage("kind")`` line.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from srnet.config import Recipe, recipe_from_dict
from srnet.errors import SrnetError
from srnet.experiments.rundir import RunDir


class NoParams(BaseModel):
    """A stage without parameters of its own."""

    model_config = ConfigDict(extra="forbid")


class Stage(ABC):
    """One kind of step. ``run`` must be safe to call again on a half-written folder."""

    kind: ClassVar[str]
    params_model: ClassVar[type[BaseModel]] = NoParams

    def output(self, folder: Path, params: BaseModel) -> Path:
        """What a reference to this stage resolves to (default: its folder)."""
        return folder

    def semantic(self, recipe: Recipe) -> dict:
        """The part of the recipe that can change this stage's result (keys its folder)."""
        return recipe.semantic_dict()

    @abstractmethod
    def run(self, recipe: Recipe, params: BaseModel, folder: Path) -> None:
        """Compute this stage into ``folder`` (continuing an interrupted attempt where it can)."""


STAGES: dict[str, type[Stage]] = {}


def register_stage(kind: str) -> Callable[[type[Stage]], type[Stage]]:
    """Class decorator: make a stage kind available to sweeps under ``kind``."""

    def add(cls: type[Stage]) -> type[Stage]:
        if kind in STAGES:
            raise ValueError(f"stage kind '{kind}' is already registered")
        cls.kind = kind
        STAGES[kind] = cls
        return cls

    return add


def get_stage(kind: str) -> Stage:
    """An instance of the stage registered as ``kind``."""
    if kind not in STAGES:
        raise SrnetError(f"unknown stage kind '{kind}' (known: {sorted(STAGES)})")
    return STAGES[kind]()


@register_stage("train")
class Train(Stage):
    """Fine-tune, mask search, prune or fine-tune in isolation: ``srnet run`` of the recipe."""

    def run(self, recipe: Recipe, params: BaseModel, folder: Path) -> None:
        from srnet.experiments.run import run_recipe

        run = RunDir(folder)
        if run.complete:  # killed after the run finished but before the stage was marked done
            return
        placed = recipe.model_copy(update={"output_dir": str(folder.parent), "name": folder.name})
        run_recipe(placed, resume=run.config.is_file())


@register_stage("evaluate")
class Evaluate(Train):
    """Evaluate ``model.init_from`` (or ``model.name``) on the recipe's dev/eval/challenge splits."""

    def run(self, recipe: Recipe, params: BaseModel, folder: Path) -> None:
        data = recipe.model_dump(mode="json")
        data["data"]["train"] = None
        super().run(recipe_from_dict(data), params, folder)


@register_stage("bias_fit")
class BiasFit(Stage):
    """Fit the recipe's bias model; write its predictions for every split (``srnet bias fit``)."""

    def semantic(self, recipe: Recipe) -> dict:
        full = recipe.semantic_dict()
        return {"task": full["task"], "data": full["data"], "bias": full["bias"],
                "model": full["model"]["name"]}

    def run(self, recipe: Recipe, params: BaseModel, folder: Path) -> None:
        from srnet.experiments.bias_fit import fit_bias

        fit_bias(recipe, folder)


class PredictParams(NoParams):
    run: str = Field(description="the run whose model predicts, e.g. '@ft'")
    split: str = Field("train", description="train, dev, or an eval/challenge split name")


@register_stage("predict")
class Predict(Stage):
    """A finished run's predictions on one split (a teacher for ``conf_reg``/``rmc``)."""

    params_model = PredictParams

    def output(self, folder: Path, params: PredictParams) -> Path:
        return folder / f"{params.split}.jsonl"

    def run(self, recipe: Recipe, params: PredictParams, folder: Path) -> None:
        from srnet.experiments.predict import predict_run_split

        predict_run_split(params.run, params.split, self.output(folder, params))


class DifficultyParams(NoParams):
    runs: list[str] = Field(min_length=1, description="runs at several sparsities, e.g. ['@p3', '@p7']")
    alpha: float = Field(0.2, ge=0, le=1, description="lowest difficulty")


@register_stage("difficulty")
class Difficulty(Stage):
    """RMC sample difficulty from several runs' training-split predictions."""

    params_model = DifficultyParams

    def output(self, folder: Path, params: DifficultyParams) -> Path:
        return folder / "difficulty.jsonl"

    def run(self, recipe: Recipe, params: DifficultyParams, folder: Path) -> None:
        from srnet.experiments.bias_fit import write_training_difficulty

        write_training_difficulty(recipe, params.runs, params.alpha, self.output(folder, params))
