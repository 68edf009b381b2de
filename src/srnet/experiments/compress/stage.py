"""``compress`` as a sweep stage kind: ``srnet compress`` of a study's fine-tuned model."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field

from srnet.config import Recipe
from srnet.experiments.compress.config import RESULT_FILE, CompressConfig
from srnet.experiments.compress.record import CompressRecord
from srnet.experiments.compress.run import compress
from srnet.experiments.sweep.stages import Stage, register_stage


class CompressParams(CompressConfig):
    non_semantic: ClassVar[tuple[str, ...]] = ("reuse",)  # the same result, sooner: not in the stage key

    model: str = Field(
        description="the fine-tuned model: a run folder or '@stage', or a Hugging Face folder or id"
    )
    reuse: str | None = Field(
        None, description="an earlier compression of the same model ('@stage' or its folder) whose "
        "finished stages this one would rerun are copied (srnet compress --reuse)"
    )


@register_stage("compress")
class CompressStage(Stage):
    """``srnet compress`` of ``model`` with the stage's recipe as its data (a run folder's own recipe
    is not used): sized, trained, exported, gated and carded in ``<folder>``; a failed gate is
    recorded in ``compress.json`` (``passed``), not a failed stage."""

    params_model = CompressParams

    def output(self, folder: Path, params: CompressParams) -> Path:
        return folder / "model"

    def run(self, recipe: Recipe, params: CompressParams, folder: Path) -> None:
        """Compress (unless killed after the result was written), then print what ``srnet
        compress`` prints: every model's figures, the speed and each gate."""
        from srnet.experiments.compress.summary import compress_summary

        if not (folder / RESULT_FILE).is_file():
            config = CompressConfig(**params.model_dump(exclude={"model", "reuse"}))
            compress(params.model, config, recipe=recipe, out=folder, resume=True, reuse=params.reuse)
        print(f"{folder}:\n{compress_summary(CompressRecord.load(folder))}")
