"""The Python API: every CLI command is one of these calls, one function per registered verb
(:data:`srnet.experiments.verbs.base.VERBS`; ``tests/cli/test_commands.py`` checks the two against
each other). ``with_flags`` builds a recipe from the CLI's data flags.

>>> from srnet import api
>>> result = api.run("recipes/mnli/finetune.yaml", overrides=["training.epochs=1"])
>>> result.metrics.ood["hans"]["by_heuristic"]
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import torch
from pydantic import ValidationError

from srnet.config import Recipe, as_recipe, load_run_recipe, recipe_from_dict
from srnet.errors import SrnetError
from srnet.experiments.compress import stage as compress_stage  # also registers the compress stage kind
from srnet.experiments.compress.config import CompressConfig
from srnet.experiments.compress.run import CompressResult
from srnet.experiments.demo import DemoResult
from srnet.experiments.run.driver import RunResult, run_recipe
from srnet.experiments.sweep.execute import SweepResult
from srnet.experiments.verbs.attack import AttackConfig
from srnet.experiments.verbs.bench import BenchConfig
from srnet.experiments.verbs.bias import DifficultyConfig
from srnet.experiments.verbs.common import with_flags as with_flags  # re-exported: the CLI's data flags
from srnet.experiments.verbs.predict import PredictConfig
from srnet.experiments.verbs.report import ReportConfig
from srnet.experiments.verbs.transfer import TransferConfig
from srnet.export.config import ExportConfig
from srnet.plugins import load_plugins
from srnet.rundir.layout import RunDir
from srnet.rundir.record import RunMetrics, read_metrics
from srnet.settings import takes


def run(
    recipe: str | Path | Recipe | dict | None,
    overrides: list[str] | None = None,
    *,
    resume: bool = False,
    overwrite: bool = False,
) -> RunResult:
    """Run a recipe (a YAML path, a dict, a :class:`Recipe`, or None for the defaults)."""
    return run_recipe(_model_checked(as_recipe(recipe, overrides)), resume=resume, overwrite=overwrite)


def _model_checked(recipe: Recipe) -> Recipe:
    """``recipe`` once its model is known to be loadable (a missing path fails before any write)."""
    from srnet.models.loading import check_model_source

    if recipe.model.init_from is None:
        check_model_source(recipe.model.name)
    return recipe


def demo(
    data_dir: str | Path | None = None,
    output_dir: str | Path = "runs",
    overrides: list[str] | None = None,
    *,
    resume: bool = False,
    overwrite: bool = False,
    seeds: int = 1,
    progress: Callable[[str], None] = print,
) -> DemoResult:
    """Run the built-in demo sweep (:mod:`srnet.experiments.demo`) and its report; when it has
    already completed, return its finished result again (``overwrite`` starts it over)."""
    from srnet.experiments.demo import run_demo

    return run_demo(data_dir, _path("output_dir", output_dir), overrides, resume=resume, overwrite=overwrite,
                    seeds=_integer("seeds", seeds, None), progress=progress)


def sweep(
    path: str | Path,
    overrides: list[str] | None = None,
    *,
    resume: bool = False,
    dry_run: bool = False,
    workers: int = 1,
    executor: str = "local",
    gpus_per_stage: float | None = None,
    only: Iterable[str] = (),
    progress: Callable[[str], None] = print,
) -> SweepResult:
    """Run a sweep file: every stage of every grid point, each unique stage once, in dependency
    order (``dry_run``: only report the plan through ``progress``).  With ``executor="ray"`` each
    stage asks Ray for ``gpus_per_stage`` GPUs (default: one where the cluster has GPUs).  ``only``:
    just these stages (at every grid point) and the stages they need; the others wait for a later
    run under the same keys."""
    from srnet.experiments.sweep.execute import check_executor, execute, refuse_worker_reentry
    from srnet.experiments.sweep.plan import describe_plan, load_sweep, only_stages, plan_sweep, record_sweep

    path = _path("path", path)
    check_executor(executor, _integer("workers", workers, None), gpus_per_stage)  # before anything is written
    refuse_worker_reentry()
    data = load_sweep(path, overrides)
    jobs = plan_sweep(data, str(path))
    if only:
        jobs = only_stages(jobs, [only] if isinstance(only, str) else list(only), str(path))
    out = Path(data["output_dir"])
    if dry_run:
        for line in describe_plan(jobs):
            progress(line)
        return SweepResult(out, jobs)
    record_sweep(data, out, resume=resume)
    return execute(jobs, out, executor=executor, workers=workers, gpus_per_stage=gpus_per_stage,
                   progress=progress)


def _path(name: str, value: object) -> Path:
    """``value`` as a path; one line naming the argument ``name`` unless it is a non-empty str or
    ``os.PathLike``."""
    if not isinstance(value, str | os.PathLike) or not str(value).strip():
        raise SrnetError(f"{name}: expected a file or folder path, got {value!r}")
    return Path(value)


def _integer(name: str, value: object, minimum: int | None = 0) -> int:
    """``value``, an int (not a bool) >= ``minimum`` (None: any; the verb checks its range);
    one line naming ``name`` otherwise."""
    if not isinstance(value, int) or isinstance(value, bool) or (minimum is not None and value < minimum):
        raise SrnetError(f"{name}: expected an integer{f' >= {minimum}' if minimum is not None else ''}, "
                         f"got {value!r}")
    return value


def _fraction(name: str, value: object) -> float:
    """``value``, a number (not a bool) in [0, 1); one line naming ``name`` otherwise."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value < 1:
        raise SrnetError(f"{name}: expected a number in [0, 1), got {value!r}")
    return float(value)


def evaluate(
    model: str,
    recipe: str | Path | dict | None = None,
    overrides: list[str] | None = None,
    *,
    overwrite: bool = False,
) -> RunResult:
    """Evaluate a model (hub id, path or srnet run directory) on a recipe's dev/eval/challenge splits.

    A one-shot ``pruning`` section (omp, random, fixed) is applied first, so this also evaluates
    a pruned-without-retraining subnetwork.
    """
    model = str(_path("model", model))
    base = as_recipe(recipe, overrides).model_dump(mode="json")
    base["data"]["train"] = None
    if RunDir(Path(model)).model.is_dir():
        base["model"]["init_from"] = model
    else:
        base["model"]["name"] = model
        base["model"]["init_from"] = None
    return run_recipe(_model_checked(recipe_from_dict(base)), overwrite=overwrite)


def bias_fit(
    recipe: str | Path | Recipe | dict | None,
    out: str | Path,
    overrides: list[str] | None = None,
    *,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Fit the recipe's bias model on its training split; write ``<out>/<split>.jsonl`` bias
    predictions (the training split's out-of-fold) and ``bias_metrics.json``; return the latter
    (``srnet bias fit``)."""
    from srnet.experiments.verbs.bias_fit import fit_bias as fit

    out = _path("out", out)
    return fit(as_recipe(recipe, overrides), out, overwrite=overwrite)


@takes(DifficultyConfig)
def bias_difficulty(
    recipe: str | Path | Recipe | dict | None,
    predictions: list[str | Path],
    out: str | Path,
    config: DifficultyConfig | None = None,
    *,
    overrides: list[str] | None = None,
    overwrite: bool = False,
    **settings: Any,
) -> Path:
    """RMC sample difficulty of the recipe's training split from several runs' training predictions
    (``srnet bias difficulty``); returns the written file (an existing ``out`` is replaced only
    with ``overwrite``)."""
    from srnet.experiments.verbs.bias_fit import write_training_difficulty

    resolved = DifficultyConfig.resolve(config, settings)
    out = _path("out", out)
    return write_training_difficulty(as_recipe(recipe, overrides), predictions, resolved.alpha, out,
                                     allow_collapsed=resolved.allow_collapsed, overwrite=overwrite)


@takes(PredictConfig)
def predict(run: str | Path, config: PredictConfig | None = None, *, output: str | Path | None = None,
            overwrite: bool = False, plugins: Iterable[str] = (), **settings: Any) -> Path:
    """Write a finished run's predictions on one of its splits (``srnet predict``); returns the file.
    An existing ``output`` is replaced only with ``overwrite``, and never a run's own record files.

    ``plugins`` (modules or ``.py`` paths) are imported first: the ones the run's ``config.yaml``
    records must be among them (or installed entry points), since a run folder's are never imported.
    """
    from srnet.experiments.verbs.split_predictions import predict_run_split

    split = PredictConfig.resolve(config, settings).split
    run = _path("run", run)
    if output is not None:
        output = _path("output", output)
        from srnet.export.checkpoint import RUN_MARKERS
        from srnet.io import check_new_file

        if Path(output).name in (*RUN_MARKERS, "environment.json", "log.jsonl") and Path(output).is_file():
            raise SrnetError(f"--output {output}: a run's own record; predictions never replace it")
        check_new_file(output, overwrite, "--output")
    load_plugins(plugins)
    return predict_run_split(run, split, output, overwrite=overwrite)


@takes(ReportConfig)
def report(runs: Iterable[str | Path], config: ReportConfig | None = None, *, out: str | Path | None = None,
           plugins: Iterable[str] = (), overwrite: bool = False, **settings: Any):
    """``srnet report``: tables and figures of the runs under ``runs`` (default ``out``: ``RUN/report``
    for one folder, ``report`` otherwise); returns the report (its path, tables, figures).
    ``plugins`` are imported first (e.g. a plug-in report section), as for :func:`predict`.  An
    earlier srnet report in ``out`` is rewritten; any other ``report.md`` only with ``overwrite``."""
    from srnet.reporting.study import write_report

    figures = ReportConfig.resolve(config, settings).figures
    load_plugins(plugins)
    runs = [_path("runs", run) for run in ([runs] if isinstance(runs, str | Path) else runs)]
    if not runs:
        raise SrnetError("runs: give at least one run folder or a folder of runs")
    if out is None:
        out = Path(runs[0]) / "report" if len(runs) == 1 else Path("report")
    out = _path("out", out)
    return write_report(runs, out, figures=figures, overwrite=overwrite)


def masks_show(masks: str | Path):
    """A mask file's (or run's) per-matrix sparsity table and its metadata (``srnet masks show``)."""
    from srnet.evaluation.mask_analysis import sparsity_table
    from srnet.sparsity.mask_io import load_masks

    loaded, meta = load_masks(_path("masks", masks))
    return sparsity_table(loaded), meta


def masks_compare(a: str | Path, b: str | Path):
    """Jaccard similarity and Hamming distance of two mask files, per matrix and overall
    (``srnet masks compare``)."""
    from srnet.evaluation.mask_analysis import compare_masks as compare
    from srnet.sparsity.mask_io import load_masks

    first, second = _path("a", a), _path("b", b)
    return compare(load_masks(first)[0], load_masks(second)[0], labels=(str(a), str(b)))


def masks_draw(source: str | Path, sparsity: float, out: str | Path, *, overwrite: bool = False):
    """A ticket at ``sparsity`` from a run's learned scores (``srnet masks draw``); its metadata."""
    from srnet.sparsity.tickets import write_ticket

    return write_ticket(_path("source", source), _fraction("sparsity", sparsity),
                        _path("out", out), overwrite=overwrite)


def masks_random_like(masks: str | Path, out: str | Path, seed: int = 0, *, overwrite: bool = False):
    """A random mask with the same per-matrix sparsity as ``masks`` (``srnet masks random-like``)."""
    from srnet.sparsity.tickets import write_random_like

    return write_random_like(_path("masks", masks), _path("out", out),
                             _integer("seed", seed), overwrite=overwrite)


@takes(TransferConfig)
def transfer(
    mask: str | Path,
    tasks: list[str | Path | Recipe | dict],
    config: TransferConfig | None = None,
    *,
    overrides: list[str] | None = None,
    overwrite: bool = False,
    **settings: Any,
):
    """Fine-tune one mask (file or run directory) on each task recipe with the mask fixed; write
    ``out_dir/transfer.json`` (each task's scores beside the mask's pre-training dev losses)."""
    from srnet.experiments.verbs.transfer_run import transfer as run_transfer

    out_dir = TransferConfig.resolve(config, settings).out_dir
    mask = _path("mask", mask)
    recipes = [_model_checked(as_recipe(task, overrides)) for task in tasks]
    return run_transfer(mask, recipes, out_dir=out_dir, overwrite=overwrite)


@takes(AttackConfig)
def attack(
    model: str,
    config: AttackConfig | None = None,
    *,
    recipe: str | Path | Recipe | dict | None = None,
    overrides: list[str] | None = None,
    out: str | Path | None = None,
    resources: dict[str, Any] | None = None,
    overwrite: bool = False,
    plugins: Iterable[str] = (),
    **settings: Any,
):
    """Attack a run (or a model with a recipe) on one split, torchao style
    (``api.attack(run, AttackConfig(attack="charswap", n=100))``, or the same as keywords); write
    ``<out>/<attack>.json`` + ``.jsonl`` (and ``<attack>_examples.md``, the first ``examples``
    successes, when ``examples`` > 0); earlier results of that attack in ``out`` are replaced only
    with ``overwrite``.  ``recipe`` defaults to the run's ``config.yaml``; ``plugins`` are imported
    first, as for :func:`predict`.

    Returns an :class:`srnet.experiments.verbs.attack_run.AttackReport`; see that module for the files.
    """
    from srnet.experiments.verbs.attack_run import attack_run

    resolved_config = AttackConfig.resolve(config, settings)
    if out is not None and not isinstance(out, str | os.PathLike):  # '' is refused with the --out checks
        raise SrnetError(f"out: expected a folder path, got {out!r}")
    load_plugins(plugins)
    run_config = RunDir(_path("model", model)).config
    if recipe is not None:
        resolved = as_recipe(recipe, overrides)
    else:
        resolved = load_run_recipe(run_config, overrides) if run_config.is_file() else None
    return attack_run(model, resolved, resolved_config, out=out, resources=resources, overwrite=overwrite)


def prune_(
    model: torch.nn.Module,
    config: dict | Any,
    seed: int = 0,
    *,
    batches: Iterable[Mapping[str, torch.Tensor]] | None = None,
    loss: str = "ce",
) -> dict[str, torch.Tensor]:
    """One-shot prune ``model`` in place with a pruning config (omp, random, fixed); return the masks.

    The verb mirrors ``torchao.quantize_``: the masks stay attached as parametrizations, so the
    model computes with them; ``srnet.export.bake_masks`` turns them into plain weights.
    A method that calibrates (omp with ``params: {importance: gradient}``) scores heads/neurons on
    ``batches`` (dicts of model inputs and ``labels``; omp uses the first ``importance_batches``)
    with the registered ``loss``.
    """
    from accelerate.utils import send_to_device

    from srnet.config import validation_line
    from srnet.losses import build_loss
    from srnet.pruning import build_method
    from srnet.pruning.base import Calibration, OneShotMethod
    from srnet.pruning.config import PruningConfig
    from srnet.pruning.lifecycle import prune
    from srnet.training.objectives import Standard, loss_backward

    try:
        cfg = config if isinstance(config, PruningConfig) else PruningConfig.model_validate(config)
    except ValidationError as exc:
        raise SrnetError(validation_line("config", exc)) from None
    method = build_method(cfg, _integer("seed", seed))
    if not isinstance(method, OneShotMethod):
        raise SrnetError(f"method '{cfg.method}' learns its mask; use srnet.run with a training split")

    def calibration() -> Calibration:
        device = next(model.parameters()).device
        return Calibration((send_to_device(b, device) for b in batches or ()),
                           loss_backward(Standard(), build_loss(loss)))

    return prune(method, model, calibration if batches is not None else None)


@takes(ExportConfig)
def export(
    model: str | None, masks: str | Path, out: str | Path, config: ExportConfig | None = None, *,
    overwrite: bool = False, force: bool = False, **settings: Any,
) -> Path:
    """Load ``model``, check and bake ``masks`` into it, and save a plain Hugging Face checkpoint
    (:func:`srnet.experiments.verbs.export_masked.export_run`, which the sweep's ``export`` stage runs too).

    ``model`` is the trained model the masks belong to (a run directory, hub id or path); None
    means the run that holds ``masks``.  Masks that record their run's trained weights
    (``trained_digest``) are refused on a model with other weights (the backbone before
    fine-tuning, another fine-tuned model), unless ``force``.  ``shrink`` removes the pruned heads
    and neurons (head/neuron masks only); reload the result with :func:`load_model` or
    ``from_pretrained(..., trust_remote_code=True)``.  ``onnx`` also writes ``model.onnx``
    (checked against PyTorch's logits; needs ``pip install 'srnet[onnx]'``); ``quantize="int8"``
    adds ONNX Runtime's dynamic INT8 graph ``model.int8.onnx`` (compared with the FP32 one).
    """
    from srnet.experiments.verbs.export_masked import export_run

    return export_run(model, masks, out, ExportConfig.resolve(config, settings), overwrite=overwrite,
                      force=force)


@takes(BenchConfig)
def bench(models: Iterable[str], config: BenchConfig | None = None, *, out: str | Path | None = None,
          overwrite: bool = False, **settings: Any) -> dict[str, Any]:
    """Latency of ``models`` side by side in one process, speedups relative to the first (the
    ``srnet bench`` verb, :func:`srnet.experiments.timing.bench`), with the timing settings of
    a :class:`BenchConfig` (or its fields as keywords); ``out``: also write the result there."""
    from srnet.experiments.timing import bench as run

    return run(list(models), BenchConfig.resolve(config, settings), out=out, overwrite=overwrite)


@takes(CompressConfig)
def compress(
    model: str, config: CompressConfig | None = None, *, out: str | Path,
    recipe: str | Path | Recipe | dict | None = None, overrides: list[str] | None = None,
    resume: bool = False, overwrite: bool = False, dry_run: bool = False,
    reuse: str | Path | None = None, progress: Callable[[str], None] = print, **settings: Any,
) -> CompressResult:
    """Turn a fine-tuned model (a run folder, or a Hugging Face folder or id with ``recipe``) into a
    shrunk, faster one (``srnet compress``): size the cut to this machine, search and recover it
    against the bias, export, bench, evaluate, attack and gate; write ``<out>/model`` with its card
    and ``<out>/compress.json``.  ``result.passed`` is false when a gate failed (everything is still
    written); ``dry_run`` prints the plan and the estimate and trains nothing; ``reuse``: an earlier
    compression of the same model whose finished stages this one would rerun (the teacher, …) are
    copied instead."""
    resolved = CompressConfig.resolve(config, settings)
    model, out = str(_path("model", model)), _path("out", out)
    earlier = None if reuse is None else _path("reuse", reuse)
    return compress_stage.compress(model, resolved, recipe=recipe, overrides=overrides, out=out,
                                   resume=resume, overwrite=overwrite, dry_run=dry_run, reuse=earlier,
                                   progress=progress)


def metrics(run: str | Path) -> RunMetrics:
    """The run record (``metrics.json``, typed) of a finished run directory (any srnet version's:
    unknown keys are kept, every field is optional); one-line SrnetError when it is not a run."""
    return read_metrics(_path("run", run))


def info() -> dict[str, Any]:
    """The environment a run would record (versions, device, threads) and the bundled model's
    folder (``srnet info``)."""
    from srnet.models.loading import default_model_path
    from srnet.rundir.layout import environment

    env = environment()
    env.pop("argv", None)
    env["default_model_path"] = str(default_model_path())
    return env


def load_model(path: str | Path) -> torch.nn.Module:
    """Load an ``srnet export`` folder (shrunk or not) strictly, in eval mode."""
    from srnet.export.checkpoint import load_model as load

    return load(_path("path", path))


DEPRECATED_NAMES = {"fit_bias": "bias_fit", "difficulty": "bias_difficulty", "mask_sparsity": "masks_show",
                    "compare_masks": "masks_compare", "draw_ticket": "masks_draw",
                    "random_like": "masks_random_like", "export_masked": "export"}
"""Old API names -> the names that match the CLI (``srnet bias fit`` -> ``bias_fit``); each old name
still works for one release and warns once."""
_WARNED: set[str] = set()


def _deprecated(old: str, new: str) -> Callable[..., Any]:
    function = globals()[new]

    @functools.wraps(function)
    def alias(*args: Any, **kwargs: Any) -> Any:
        if old not in _WARNED:
            _WARNED.add(old)
            warnings.warn(f"srnet.api.{old} is deprecated and will be removed in the next release: use "
                          f"srnet.api.{new} (the CLI's name)", FutureWarning, stacklevel=2)
        return function(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"Deprecated alias of :func:`{new}` (warns once)."
    return alias


for _old, _new in DEPRECATED_NAMES.items():
    globals()[_old] = _deprecated(_old, _new)
