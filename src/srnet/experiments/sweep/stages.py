"""Stage kinds: the typed steps a sweep chains together, one registered class per kind.

A stage takes a resolved :class:`~srnet.config.Recipe` plus its own parameters (a sweep's
``with:`` section) and writes one output folder.  Its *output* is what a later stage's
``@name`` reference resolves to:

=========== ======================================= ============================================
kind        what it does                            output (what ``@name`` means)
=========== ======================================= ============================================
train       a whole recipe: fine-tune, mask search,  the run directory (``model.init_from``,
            prune, fine-tune in isolation           ``dense_reference``, ``loss.teacher``)
evaluate    the recipe without ``data.train``       the run directory
bias_fit    ``srnet bias fit``                      the bias folder (``bias_dir``)
predict     a run's predictions on one split        the predictions file (``loss.teacher``)
difficulty  RMC difficulty from several runs        the difficulty file (``loss.difficulty``)
ticket      the global top-(1-s) ticket of a        the mask file (``pruning.params.mask_file``)
            learned-mask run's scores
random_like a random mask with a mask's per-matrix  the mask file (``pruning.params.mask_file``)
            zeros (the random-ticket baseline)
attack      ``srnet attack`` of several runs with   its folder (results go to each
            several attacks                         ``RUN/attack/<name>.json``)
export      ``srnet export`` of a run: its masks    the export folder (``<folder>/model``; its
            baked in, optionally shrunk, with ONNX  run is recorded in ``<folder>/export.json``)
bench       ``srnet bench`` of several models (a    the result file (``<folder>/bench.json``)
            *gathering* stage: once per sweep)
compress    ``srnet compress`` of a fine-tuned      the compressed model (``<folder>/model``; the
            model, the stage's recipe as its data   gates in ``<folder>/compress.json``);
            (registered by its pipeline,            compress runs a sweep itself, so its stage
            :mod:`srnet.experiments.compress.stage`) sits above this module, not in it
=========== ======================================= ============================================

A *gathering* stage (``gathers = True``: ``bench``) runs once for the whole sweep, after every
grid point: a reference in its ``with:`` to a stage that runs at several grid points stands for
all of their outputs (a list item expands into one item per output, in plan order).

Adding a kind is one class and its ``@register_stage("kind")`` line, here or in the module of its
verb (a job records its kind's module, which each worker imports before looking the kind up).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field, model_validator

from srnet.config import Recipe, recipe_from_dict
from srnet.errors import SrnetError
from srnet.experiments.verbs.attack import AttackConfig, AttackSettings
from srnet.experiments.verbs.bench import BenchConfig
from srnet.experiments.verbs.bias import DifficultyConfig
from srnet.experiments.verbs.predict import PredictConfig
from srnet.export.config import ExportConfig
from srnet.io import read_yaml
from srnet.registry import Registry
from srnet.rundir.layout import RunDir
from srnet.settings import VerbConfig


class NoParams(VerbConfig):
    """A stage without parameters of its own (a stage's params model is its verb's config, or adds
    the stage's inputs to it: the config of its verb's declaration in :mod:`srnet.experiments.verbs`)."""


class Stage(ABC):
    """One kind of step. ``run`` must be safe to call again on a half-written folder."""

    kind: ClassVar[str]
    params_model: ClassVar[type[BaseModel]] = NoParams
    gathers: ClassVar[bool] = False
    """Run once per sweep over every grid point's outputs of the stages it refers to."""

    def output(self, folder: Path, params: BaseModel) -> Path:
        """What a reference to this stage resolves to (default: its folder)."""
        return folder

    def semantic(self, recipe: Recipe) -> dict:
        """The part of the recipe that can change this stage's result (keys its folder)."""
        return recipe.semantic_dict()

    @abstractmethod
    def run(self, recipe: Recipe, params: BaseModel, folder: Path) -> None:
        """Compute this stage into ``folder`` (continuing an interrupted attempt where it can)."""


STAGES: Registry[type[Stage]] = Registry("stage kind", attribute="kind")
register_stage = STAGES.register
"""Class decorator: make a stage kind available to sweeps under a unique name."""


def get_stage(kind: str) -> Stage:
    """An instance of the stage registered as ``kind``."""
    return STAGES.get(kind)()


@register_stage("train")
class TrainStage(Stage):
    """Fine-tune, mask search, prune or fine-tune in isolation: ``srnet run`` of the recipe."""

    def run(self, recipe: Recipe, params: BaseModel, folder: Path) -> None:
        from srnet.experiments.run.driver import run_recipe

        run = RunDir(folder)
        if run.complete:  # killed after the run finished but before the stage was marked done
            return
        placed = recipe.model_copy(update={"output_dir": str(folder.parent), "name": folder.name})
        run_recipe(placed, resume=run.config.is_file())


@register_stage("evaluate")
class EvaluateStage(TrainStage):
    """Evaluate ``model.init_from`` (or ``model.name``) on the recipe's dev/eval/challenge splits."""

    def run(self, recipe: Recipe, params: BaseModel, folder: Path) -> None:
        data = recipe.model_dump(mode="json")
        data["data"]["train"] = None
        super().run(recipe_from_dict(data), params, folder)


@register_stage("bias_fit")
class BiasFitStage(Stage):
    """Fit the recipe's bias model; write its predictions for every split (``srnet bias fit``)."""

    def semantic(self, recipe: Recipe) -> dict:
        full = recipe.semantic_dict()
        return {"task": full["task"], "data": full["data"], "bias": full["bias"],
                "model": full["model"]["name"]}

    def run(self, recipe: Recipe, params: BaseModel, folder: Path) -> None:
        from srnet.experiments.verbs.bias_fit import fit_bias

        fit_bias(recipe, folder, overwrite=True)  # the stage owns its folder (a rerun replaces)


class PredictParams(PredictConfig):
    run: str = Field(description="the run whose model predicts, e.g. '@ft'")


@register_stage("predict")
class PredictStage(Stage):
    """A finished run's predictions on one split (a teacher for ``conf_reg``/``rmc``); the training
    split of an evaluation-only run is the stage's own recipe's."""

    params_model = PredictParams

    def output(self, folder: Path, params: PredictParams) -> Path:
        return folder / f"{params.split}.jsonl"

    def run(self, recipe: Recipe, params: PredictParams, folder: Path) -> None:
        from srnet.experiments.verbs.split_predictions import predict_run_split

        predict_run_split(params.run, params.split, self.output(folder, params), fallback=recipe,
                          overwrite=True)  # the stage owns its folder (a rerun replaces)


class DifficultyParams(DifficultyConfig):
    runs: list[str] = Field(min_length=1, description="runs at several sparsities, e.g. ['@p3', '@p7']")


@register_stage("difficulty")
class DifficultyStage(Stage):
    """RMC sample difficulty from several runs' training-split predictions."""

    params_model = DifficultyParams

    def output(self, folder: Path, params: DifficultyParams) -> Path:
        return folder / "difficulty.jsonl"

    def run(self, recipe: Recipe, params: DifficultyParams, folder: Path) -> None:
        from srnet.experiments.verbs.bias_fit import write_training_difficulty

        write_training_difficulty(recipe, params.runs, params.alpha, self.output(folder, params),
                                  allow_collapsed=params.allow_collapsed, overwrite=True)  # its own folder


class TicketParams(NoParams):
    scores: str = Field(description="a learned-mask run (l0, mask_train) or its score file, e.g. '@gates'")
    sparsity: float = Field(gt=0, lt=1, description="global fraction of zeros of the ticket")


@register_stage("ticket")
class TicketStage(Stage):
    """Draw the ticket: rank the run's mask scores globally and keep the top ``1 - sparsity``."""

    params_model = TicketParams

    def semantic(self, recipe: Recipe) -> dict:
        return {}  # the result depends only on the scores and the sparsity

    def output(self, folder: Path, params: TicketParams) -> Path:
        return folder / "masks.safetensors"

    def run(self, recipe: Recipe, params: TicketParams, folder: Path) -> None:
        from srnet.sparsity.tickets import write_ticket

        write_ticket(params.scores, params.sparsity, self.output(folder, params), overwrite=True)


class RandomLikeParams(NoParams):
    masks: str = Field(description="a mask file or run whose per-matrix sparsity is copied, e.g. '@ticket'")


@register_stage("random_like")
class RandomLikeStage(TicketStage):
    """A random mask with as many zeros in each matrix as the given mask (drawn with the recipe's seed)."""

    params_model = RandomLikeParams

    def semantic(self, recipe: Recipe) -> dict:
        return {"seed": recipe.seed}

    def run(self, recipe: Recipe, params: RandomLikeParams, folder: Path) -> None:
        from srnet.sparsity.tickets import write_random_like

        write_random_like(params.masks, self.output(folder, params), seed=recipe.seed, overwrite=True)


class AttackParams(AttackSettings):
    runs: list[str] = Field(min_length=1, description="the attacked runs, e.g. ['@ft', '@ticket_ft']")
    attacks: list[str] = Field(min_length=1, description="attack names, e.g. [charswap, wordswap]")
    params: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="attack name -> its parameters, e.g. {wordswap: {neighbours: both}}"
    )

    @model_validator(mode="after")
    def _check(self) -> AttackParams:
        from srnet.evaluation.attacks import build_attack

        for name in self.params:
            if name not in self.attacks:
                raise ValueError(f"params.{name}: '{name}' is not among attacks {self.attacks}")
        for name in self.attacks:
            try:
                build_attack(name, self.params.get(name))
            except SrnetError as exc:
                raise ValueError(str(exc)) from None
        return self


@register_stage("attack")
class AttackStage(Stage):
    """``srnet attack`` of every run with every attack; each result lands in
    ``RUN/attack/<stage key>/<name>.json`` (where ``srnet report`` reads it): the stage's own
    sub-folder, so a rerun replaces only what this stage wrote, never another stage's or a user's
    results.  ``<folder>/<i>_<name>.done`` marks finished pairs, so a
    killed stage resumes at the first unfinished one.  An attack's victim-independent state (e.g.
    its sentence encoder's cached embeddings) passes from one run to the next."""

    params_model = AttackParams

    def semantic(self, recipe: Recipe) -> dict:
        return {}  # each run's own recipe decides the task and the splits

    def run(self, recipe: Recipe, params: AttackParams, folder: Path) -> None:
        from srnet.experiments.verbs.attack_run import attack_run
        from srnet.io import atomic_write_text
        from srnet.rundir.layout import stage_attack_dir

        shared: dict[str, dict] = {}  # attack -> its state a later run reuses (the encoder's cache)
        for index, run in enumerate(params.runs):
            for name in params.attacks:
                done = folder / f"{index}_{name}.done"
                if done.is_file():
                    continue
                config = AttackConfig(**params.model_dump(include=set(AttackSettings.model_fields)),
                                      attack=name, params=params.params.get(name, {}))
                report = attack_run(run, None, config, out=stage_attack_dir(run, folder),
                                    resources=shared.get(name), overwrite=True)  # its unfinished pair
                shared[name] = report.shared
                atomic_write_text(done, f"{report.summary_path}\n")


class ExportParams(ExportConfig):
    run: str = Field(description="the run to export, e.g. '@recover'")
    masks: str | None = Field(
        None, description="mask file or run; default: the run's masks.safetensors, else the mask "
        "file its recipe trained with (pruning.params.mask_file)")


@register_stage("export")
class ExportStage(Stage):
    """``srnet export`` of a finished run: its masks baked in (``shrink``: pruned heads and neurons
    removed; ``onnx``: with model.onnx) into ``<folder>/model``, its source in ``export.json``."""

    params_model = ExportParams

    def semantic(self, recipe: Recipe) -> dict:
        return {}  # the exported run and the parameters decide the result

    def output(self, folder: Path, params: ExportParams) -> Path:
        return folder / "model"

    def run(self, recipe: Recipe, params: ExportParams, folder: Path) -> None:
        from srnet.experiments.verbs.export_masked import export_run
        from srnet.export import EXPORT_INFO_FILENAME
        from srnet.io import atomic_write_json

        out = self.output(folder, params)
        if (out / EXPORT_INFO_FILENAME).is_file():  # killed after the export was renamed into place
            return
        if params.masks is None and not params.shrink and is_dense_run(params.run):
            from srnet.experiments.verbs.export_masked import export_dense_run

            atomic_write_json(folder / "export.json", {"run": params.run, "masks": None, "shrink": False,
                                                       "onnx": params.onnx, "quantize": params.quantize})
            export_dense_run(params.run, out, params, overwrite=True)
            return
        masks = params.masks or run_masks(params.run)
        atomic_write_json(folder / "export.json", {"run": params.run, "masks": str(masks),
                                                   "shrink": params.shrink, "onnx": params.onnx,
                                                   "quantize": params.quantize})
        export_run(params.run, masks, out, params, overwrite=True)  # its settings: an ExportConfig


def is_dense_run(run: str | Path) -> bool:
    """Whether a finished run trained without pruning (no masks, no pruning section)."""
    folder = RunDir(Path(run))
    recipe = read_yaml(folder.config) if folder.config.is_file() else {}
    method = ((recipe or {}).get("pruning") or {}).get("method", "dense")
    return not (folder.root / "masks.safetensors").is_file() and method == "dense"


def run_masks(run: str | Path) -> Path:
    """The masks of a finished run: its ``masks.safetensors``, else the mask file its recipe
    trained with (a retrained ticket's); SrnetError when it has neither."""

    from srnet.compat import recorded_param

    folder = RunDir(Path(run))
    own = folder.root / "masks.safetensors"
    if own.is_file():
        return own
    config = folder.config
    recipe = read_yaml(config) if config.is_file() else {}
    mask_file = recorded_param((recipe or {}).get("pruning"), "mask_file")
    if mask_file is None:
        raise SrnetError(f"{run}: no masks.safetensors and no pruning mask file: nothing to export "
                         "(a dense run needs no export: time or load the run itself)")
    return Path(mask_file)


class BenchParams(BenchConfig):
    models: list[str] = Field(
        min_length=1, description="models to time, the baseline first: run folders, exports or "
        "'@stage' references (a stage of several grid points stands for all its outputs)")


@register_stage("bench")
class BenchStage(Stage):
    """``srnet bench`` of the given models, interleaved in one process (speedups relative to the
    first), into ``<folder>/bench.json``; once per sweep, after every model it times."""

    params_model = BenchParams
    gathers = True

    def semantic(self, recipe: Recipe) -> dict:
        return {}  # the models and the parameters decide the result

    def output(self, folder: Path, params: BenchParams) -> Path:
        return folder / "bench.json"

    def run(self, recipe: Recipe, params: BenchParams, folder: Path) -> None:
        from srnet.experiments.timing import bench

        bench(params.models, params, out=self.output(folder, params), overwrite=True,  # its own file
              recipe=recipe)
