"""The end of a compression: every model's figures from its stage's records, the gates,
``<out>/compress.json`` (:class:`~srnet.experiments.compress.record.CompressRecord`), and
``<out>/model`` with its speed figure and its card."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from srnet.experiments.compress.card import FRONTIER_FIGURE, SPEED_FIGURE, compress_card
from srnet.experiments.compress.config import GATE_FAILED_EXIT, RECIPE_NAME, CompressConfig
from srnet.experiments.compress.gates import gates
from srnet.experiments.compress.record import (
    CompressRecord,
    FrontierPoint,
    ModelFigures,
    Recovery,
    Speed,
    bench_figures,
    model_figures,
)
from srnet.experiments.compress.sizing import Sizing
from srnet.experiments.compress.source import Source


def finish(
    source: Source,
    config: CompressConfig,
    sizing: Sizing,
    outputs: dict[str, str],
    out: Path,
    *,
    elapsed_s: float,
    peak_rss_mb: float,
    reused: dict[str, str] | None = None,
) -> CompressRecord:
    """Score, gate, write ``<out>/model`` with its figure and card, then ``compress.json`` (last:
    its presence marks a finished compression); ``passed`` is false when a gate failed, and
    everything is still written."""
    figures = {
        name: model_figures(outputs[name], outputs.get("attack"))
        for name in ("dense", "teacher", "student", "shipped", "reference_runtime")
        if name in outputs
    }
    reference = "teacher" if "teacher" in figures else "dense"
    speed = bench_figures(outputs["bench"], config.runtime)
    checked = gates(config, figures[reference], figures["student"], figures["shipped"], speed)
    passed = all(g.passed for g in checked)
    record = CompressRecord(
        passed=passed,
        exit_code=0 if passed else GATE_FAILED_EXIT,
        model=source.model,
        recipe=RECIPE_NAME,
        recovery=recovery(outputs["student"]),
        config=config.model_dump(mode="json"),
        level=sizing.level,
        sizing=sizing.model_dump(mode="json"),
        reference=reference,
        figures=figures,
        speed=speed,
        gates=checked,
        elapsed_s=round(elapsed_s, 1),
        peak_rss_mb=round(peak_rss_mb, 1),
        stages=outputs,
        dropped_layers=_dropped_layers(Path(outputs["export"])),
        reused=reused or {},
        bias=config.bias,
        **describe_data(source),
        hashed=_hashed(Path(outputs["export"])),
        frontier=frontier(figures, speed, config.runtime),
    )
    write_model(record, sizing, Path(outputs["export"]), out / "model")
    record.save(out)
    return record


def _dropped_layers(export: Path) -> list[int]:
    """The layers the shipped model lacks, as its own config records them."""
    from srnet.models.layers import DROPPED_KEY

    config = json.loads((export / "config.json").read_text(encoding="utf-8"))
    return list(config.get(DROPPED_KEY) or [])


def frontier(figures: dict[str, ModelFigures], speed: Speed, runtime: str) -> list[FrontierPoint]:
    """Each trained model at its measured speed-up over dense PyTorch FP32: the original and the
    reference in PyTorch (1x), the reference in the runtime with no cut (the bench's dense model
    under the runtime: the same shape), and the shipped model."""
    rows = [
        ("original, PyTorch", "dense", 1.0),
        ("dense PoE reference, PyTorch", "teacher", 1.0),
        (f"reference in {runtime}, no cut", "reference_runtime", speed.dense_int8_speedup),
        (f"shipped, {runtime}", "shipped", speed.speedup),
    ]
    return [
        FrontierPoint(label=label, speedup=x, id=figures[name].id, hard=figures[name].hard)
        for label, name, x in rows
        if name in figures and x is not None
    ]


def recovery(student_run: str) -> Recovery:
    """The student's recovery as it ran (its recorded recipe)."""
    from srnet.config import load_run_recipe

    student = load_run_recipe(Path(student_run) / "config.yaml")
    return Recovery(
        epochs=student.training.epochs,
        max_steps=student.training.max_steps,
        lr=student.training.lr,
        distill=distillation(student.objective),
        gradual=getattr(student.pruning.params, "gradual", 0.0),  # level 0 runs the dense method
    )


def distillation(objective: Any) -> str:
    """The ``--recovery-distill`` setting a student's recorded objective ran with."""
    params = objective.params.model_dump()
    if params.get("pred_weight", 0) == 0:
        return "none"
    if params.get("attention_weight", 0) > 0:
        return "attention"
    if params.get("hidden_weight", 0) > 0:
        return "layers"
    return "through-bias" if params.get("through_bias") else "plain"


def describe_data(source: Source) -> dict[str, Any]:
    """The card's ``base_model`` (a hub id, else None), label names and datasets."""
    from srnet.config import recipe_from_dict
    from srnet.export.card import dataset_ids, hub_id
    from srnet.tasks import get_task

    recipe = recipe_from_dict({**source.recipe, "name": "compress"})
    data = recipe.data
    files = [
        spec.path or spec.display_name
        for spec in [data.train, data.dev, *data.eval, *data.challenge]
        if spec is not None
    ]
    return {
        "base_model": hub_id(base_model(source)),
        "labels": list(get_task(recipe.task).labels),
        "datasets": dataset_ids(recipe.task, files),
    }


def base_model(source: Source) -> str:
    """What the user's model was fine-tuned from: a run folder's own recorded ``model.name``, else
    the model as given."""
    from srnet.config import load_run_recipe
    from srnet.rundir.layout import RunDir

    run = source.start.get("model.init_from")
    if run:
        return str(load_run_recipe(RunDir(Path(run)).config).model.name)
    return source.model


def _hashed(export: Path) -> dict[str, str]:
    from srnet.export import EXPORT_INFO_FILENAME
    from srnet.export.bake import DIGESTS_KEY

    info = json.loads((export / EXPORT_INFO_FILENAME).read_text(encoding="utf-8"))
    return dict(info.get(DIGESTS_KEY) or {})


def write_model(record: CompressRecord, sizing: Sizing, export: Path, target: Path) -> None:
    """The export copied to ``target`` with the speed figure and the card."""
    from srnet.experiments.compress.figure import frontier_figure, speed_figure
    from srnet.io import atomic_folder

    def write(tmp: Path) -> None:
        shutil.copytree(export, tmp, dirs_exist_ok=True)
        if sizing.curve:
            speed_figure(sizing, record, tmp / SPEED_FIGURE)
        if record.frontier:
            frontier_figure(record, tmp / FRONTIER_FIGURE)
        (tmp / "README.md").write_text(compress_card(record), encoding="utf-8")

    atomic_folder(target, write)
