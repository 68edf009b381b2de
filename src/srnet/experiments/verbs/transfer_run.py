"""Transfer one mask to several tasks: fine-tune the masked pre-trained backbone per task.

Each task recipe runs as usual with ``pruning: {method: fixed, params: {mask_file: MASK}}``: the mask is
checked against the recipe's backbone (fingerprint, keys, shapes), a fresh classifier is put on
top, and the surviving weights are fine-tuned with the mask fixed.  ``transfer.json`` puts each
task's ID and OOD scores next to the subnetwork's pre-training dev losses (MLM, KD) from the run
the mask came from, so the loss-vs-accuracy correlation of TAMT can be checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from srnet.config import Recipe, recipe_from_dict
from srnet.errors import SrnetError
from srnet.experiments.run.driver import run_recipe
from srnet.experiments.run.tamt import read_pretraining
from srnet.io import atomic_write_json
from srnet.rundir.record import RunMetrics
from srnet.sparsity.mask_io import MASKS_FILENAME, load_masks

SUMMARY = "transfer.json"


@dataclass
class TransferResult:
    """Where the task runs are and what they scored."""

    out_dir: Path
    summary: dict


def transfer(
    mask: str | Path, recipes: list[Recipe], *, out_dir: str | Path, overwrite: bool = False
) -> TransferResult:
    """Fine-tune ``mask`` (a mask file or run directory) on each task recipe, runs under ``out_dir``."""
    if not recipes:
        raise SrnetError("transfer needs at least one task recipe")
    names = [r.name for r in recipes]
    if len(set(names)) != len(names):
        raise SrnetError(f"task recipes need distinct names (got {names}); set name: in each")
    path = Path(mask)
    mask_file = path / MASKS_FILENAME if path.is_dir() else path
    masks, meta = load_masks(mask_file)  # readable before any run starts
    out = Path(out_dir)
    tasks = {}
    for recipe in recipes:
        data = recipe.model_dump(mode="json")
        data["pruning"] = {"method": "fixed", "params": {"mask_file": str(mask_file.resolve())},
                           "sparsity": min(meta.sparsity, 0.999999)}
        data["model"]["init_from"] = None
        data["output_dir"] = str(out)
        result = run_recipe(recipe_from_dict(data, f"transfer:{recipe.name}"), overwrite=overwrite)
        tasks[recipe.name] = _scores(result.metrics)
        tasks[recipe.name]["run_dir"] = str(result.run_dir)
    summary = {
        "mask": str(mask_file),
        "method": meta.method,
        "base_model": meta.base_model,
        "sparsity": meta.sparsity,
        "masked_matrices": len(masks),
        "pretraining": read_pretraining(mask_file),
        "tasks": tasks,
    }
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / SUMMARY, summary)
    return TransferResult(out, summary)


def _scores(metrics: RunMetrics) -> dict:
    """The primary metric of every ID and OOD split (and the OOD shortcut gaps)."""
    row: dict = {"task": metrics.task}
    for blocks in (metrics.id, metrics.ood):
        for name, block in blocks.items():
            row[name] = block["primary"]
            if "shortcut_gap" in block:
                row[f"{name}_shortcut_gap"] = block["shortcut_gap"]
    return row
