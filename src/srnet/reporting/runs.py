"""Finished runs as ``srnet report`` reads them: found, read and labelled.

A run is *complete* when its ``metrics.json`` exists (written last).  Each run is labelled by
method, loss, paradigm and target sparsity: ``tags`` in its recipe first, then the recipe itself
(``pruning.method``, or ``dense`` without pruning, ``subnetwork`` at its measured sparsity when a
dense run's weights hold zeros; ``loss.name``; paradigm ``-``), and by the runtime that scored it
when that is not PyTorch.  Runs pool as seeds of one configuration only when their recipes differ
in nothing but the seed (:func:`split_grid_points`, :func:`split_recipes`).  The statistics over
them live in :mod:`srnet.reporting.stats`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from srnet.errors import SrnetError
from srnet.evaluation.metrics import rules_differ
from srnet.io import read_yaml
from srnet.rundir.layout import COMPLETE, RunDir, load_attacks
from srnet.rundir.record import RunMetrics, SparsityRecord, read_metrics
from srnet.tasks.registry import TASKS
from srnet.tasks.spec import DataSpec, LabelScheme
from srnet.training.objectives import OBJECTIVES

DENSE = "dense"
SUBNETWORK = "subnetwork"
MEASURED_ZEROS = 0.01
"""The fraction of zero weights from which a dense run's model is a subnetwork (an evaluated export)."""
STANDARD = "standard"
RUNTIME = "runtime"
TORCH = "torch"
LABEL_DEFAULTS = {RUNTIME: TORCH}
"""What a table shows for an extra label a run does not have."""
LABELS = ("method", "loss", "paradigm", "sparsity")
"""The labels every run gets (further ``tags`` keys are extra labels)."""


@dataclass(frozen=True)
class Run:
    """One complete run: where it is, its metrics and recipe, and its labels."""

    path: Path
    metrics: RunMetrics
    recipe: dict[str, Any]
    labels: dict[str, Any]
    seed: Any
    schemes: dict[str, LabelScheme] = field(default_factory=dict)
    """Evaluation split name -> its label scheme (when the task and split are known)."""
    attacks: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Attack name -> its summary (:func:`~srnet.rundir.layout.load_attacks`)."""
    grid: dict[str, Any] = field(default_factory=dict)
    """The sweep grid values that shaped the run (its ``stage.json``), seeds left out."""

    @property
    def dense(self) -> bool:
        return self.labels["method"] == DENSE

    def block(self, kind: str, split: str, rule: str) -> dict[str, Any] | None:
        """The ``kind`` (id/ood) split's scores under the collapse ``rule`` (None if not recorded)."""
        block = getattr(self.metrics, kind).get(split)
        if block is None:
            return None
        if "by_rule" in block:
            return block["by_rule"].get(rule)
        scheme = self.schemes.get(split)
        merges = scheme is not None and rules_differ(scheme.space)
        return block if not merges or rule == "sum" else None

    def primary_rule(self) -> str | None:
        """The collapse rule of this run's top-level numbers, where one applies."""
        rules = {b.get("collapse") for b in self.metrics.ood.values()} - {None}
        return next(iter(rules)) if len(rules) == 1 else None


def find_runs(paths: Sequence[str | Path]) -> list[Path]:
    """Complete run directories among ``paths`` (run directories or folders searched recursively,
    skipping hidden folders such as an unfinished ``--overwrite``'s ``.<run>.overwrite``)."""
    found: dict[Path, None] = {}
    for path in map(Path, paths):
        if not path.exists():
            raise SrnetError(f"{path}: no such file or folder")
        if not path.is_dir():
            raise SrnetError(f"{path}: not a folder (give run directories or folders of runs)")
        metrics = [path / "metrics.json"] if (path / "metrics.json").is_file() else path.rglob("metrics.json")
        for file in sorted(metrics):
            if not any(part.startswith(".") for part in file.relative_to(path).parts):
                found.setdefault(file.parent, None)  # not in a hidden .<run>.overwrite/.replaced
    if not found:
        where = ", ".join(str(p) for p in paths)
        raise SrnetError(f"{where}: no complete runs (no metrics.json under it)")
    return list(found)


def load_run(path: str | Path) -> Run:
    """Read one run directory's metrics.json and config.yaml and label it."""
    run = RunDir(Path(path))
    metrics = read_metrics(run.root)
    recipe = read_yaml(run.config) if run.config.is_file() else {}
    if not isinstance(recipe or {}, dict):
        raise SrnetError(f"{run.config}: not a mapping")
    recipe = recipe or {}
    labels = run_labels(recipe, metrics.sparsity, metrics.evaluated_by)
    return Run(run.root, metrics, recipe, labels, recipe.get("seed", metrics.seed),
               split_schemes(recipe, metrics.task or recipe.get("task")), load_attacks(run.root),
               load_grid(run.root))


def load_grid(root: Path) -> dict[str, Any]:
    """A sweep stage's grid values from its ``stage.json`` (none for a plain run), seeds left out."""
    path = root / COMPLETE
    if not path.is_file():
        return {}
    try:
        grid = json.loads(path.read_text(encoding="utf-8")).get("grid") or {}
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        raise SrnetError(f"{path}: unreadable stage record") from None
    if not isinstance(grid, dict):
        raise SrnetError(f"{path}: 'grid' is not a mapping of grid key -> value")
    return {k: v for k, v in grid.items() if k.rsplit(".", 1)[-1] != "seed"}


def configuration(run: Run) -> tuple:
    """The key of a run's configuration: its labels, in order (runs with equal keys are seeds)."""
    return tuple(sorted(run.labels.items()))


def split_grid_points(runs: Iterable[Run]) -> list[Run]:
    """Runs with the same labels but different sweep grid points (a ticket retrained from masks
    searched for 300 or 3,000 steps) are not seeds of one configuration: each gets a ``grid`` label
    naming the values that set it apart, so no table pools them."""
    runs = list(runs)
    split: dict[int, Run] = {}
    for same in alike(runs):
        apart = differing([run.grid for run in same])
        for run in same if apart else []:
            split[id(run)] = replace(run, labels=run.labels | {"grid": grid_label(run.grid, apart)})
    return split_recipes(split.get(id(run), run) for run in runs)


def alike(runs: list[Run]) -> list[list[Run]]:
    """The runs grouped by configuration (equal labels)."""
    groups: dict[tuple, list[Run]] = {}
    for run in runs:
        groups.setdefault(configuration(run), []).append(run)
    return list(groups.values())


def differing(values: list[dict[str, Any]]) -> list[str]:
    """The keys whose values are not the same in all of ``values`` (a missing key counts as None)."""
    keys = dict.fromkeys(k for value in values for k in value)
    return [k for k in keys if len({json.dumps(v.get(k), sort_keys=True) for v in values}) > 1]


STAGE_RUN = re.compile(r"^(?:.*/)?([^/]+)/[0-9a-f]{16}(?=/|$)")
"""A path into a sweep stage's run (``runs/study/ft/429b8f061a2c2ff3/model``): it compares as
``@ft/model``, since the key differs between seeds and the folder the sweep wrote to (its
``output_dir``, a copy made on another machine) is not a setting."""

PER_SEED = re.compile(r"seed[_=-]?\d+")
"""What else differs between the seeds of one configuration in a path: a seed in a name
(``bias_seed2``); recipes are compared with it masked."""

NOT_A_SETTING = ("seed", "name", "output_dir", "tags")
"""Recipe keys that may differ between the runs (seeds) of one configuration."""


def as_compared(value: str) -> str:
    """A recipe string as seeds of one configuration share it: stage-run paths by stage, seeds masked."""
    return PER_SEED.sub("*", STAGE_RUN.sub(r"@\1", value))


def recipe_signature(run: Run) -> dict[str, Any]:
    """The run's recipe as ``srnet report`` compares it: the semantic recipe (defaults filled in
    by today's code, so records of older versions compare alike), seed, name and tags left out,
    per-seed parts of paths masked; flat dotted keys."""
    from srnet.config import recorded_recipe

    try:
        data = recorded_recipe(dict(run.recipe), str(run.path)).semantic_dict()
    except SrnetError:
        data = dict(run.recipe)
    flat: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{prefix}{key}.")
        else:
            flat[prefix[:-1]] = as_compared(node) if isinstance(node, str) else node

    walk({k: v for k, v in data.items() if k not in NOT_A_SETTING}, "")
    return flat


def split_recipes(runs: Iterable[Run]) -> list[Run]:
    """Runs with the same labels whose recipes differ in anything but the seed (two backbones, two
    granularities, two learning rates) are not seeds of one configuration: each gets a ``recipe``
    label naming every value that sets it apart (:func:`recipe_labels`), so no table pools them."""
    runs = list(runs)
    split: dict[int, Run] = {}
    for same in alike(runs):
        signatures = [recipe_signature(run) for run in same] if len(same) > 1 else []
        apart = differing(signatures)
        if apart:
            for run, label in zip(same, recipe_labels(signatures, apart), strict=True):
                split[id(run)] = replace(run, labels=run.labels | {"recipe": label})
    return [split.get(id(run), run) for run in runs]


RECIPE_LABEL_WIDTH = 60
"""The longest ``recipe`` label written out in full; a longer one is cut and given a digest."""


def recipe_labels(signatures: list[dict[str, Any]], keys: Sequence[str]) -> list[str]:
    """Each run's ``recipe`` label: every key of ``keys`` with the run's value
    (``training.lr=0.0001 data.train.n=640``); when one is longer than RECIPE_LABEL_WIDTH or two
    different settings would read alike, each is cut and followed by ``#<digest>`` of its whole
    difference, so two settings never share a label."""
    apart = [{k: signature.get(k) for k in keys} for signature in signatures]
    texts = [" ".join(f"{k}={v}" for k, v in values.items()) for values in apart]
    digests = [hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:8]
               for values in apart]
    if len(set(texts)) == len(set(digests)) and max(map(len, texts)) <= RECIPE_LABEL_WIDTH:
        return texts
    cut = RECIPE_LABEL_WIDTH - 10  # room for the digest
    return [(text if len(text) <= cut else text[:cut - 1].rstrip() + "…") + f" #{digest}"
            for text, digest in zip(texts, digests, strict=True)]


def grid_label(grid: dict[str, Any], keys: Sequence[str]) -> str:
    """``gates.training.max_steps=300 gates.objective.params=steps:5,step_size:0.03``."""
    def value(v: Any) -> str:
        if isinstance(v, dict):
            return ",".join(f"{k}:{value(x)}" for k, x in v.items())
        return f"{v:g}" if isinstance(v, float) else str(v)

    return " ".join(f"{k}={value(grid[k])}" for k in keys if k in grid)  # a stage's own keys only


def run_labels(recipe: dict[str, Any], measured: SparsityRecord | None = None,
               runtime: str = TORCH) -> dict[str, Any]:
    """method, loss, paradigm, sparsity, any further tags of a run's recipe and, when it is not
    PyTorch, the ``runtime`` that scored the model.

    The sparsity is the recipe's target; a dense run whose evaluated weights hold zeros
    (``measured``: the run record's sparsity block, e.g. an evaluated export or masked model) is
    labelled ``subnetwork`` at its measured sparsity (2 decimals), never ``dense``.
    """
    pruning = recipe.get("pruning") or {}
    tags = {str(k): str(v) for k, v in (recipe.get("tags") or {}).items()}
    method = tags.pop("method", None) or pruning.get("method") or DENSE
    sparsity = float(pruning.get("sparsity") or 0.0)
    zeros = float(measured.overall or 0.0) if measured is not None else 0.0
    if method == DENSE and zeros >= MEASURED_ZEROS:
        method, sparsity = SUBNETWORK, round(zeros, 2)
    exported = getattr(measured, "export", None) if measured is not None else None
    trained_loss = exported.get("loss") if isinstance(exported, dict) else None  # an evaluated export's
    labels: dict[str, Any] = {
        "method": method,
        "loss": tags.pop("loss", None) or trained_loss or (recipe.get("loss") or {}).get("name", "ce"),
        "paradigm": tags.pop("paradigm", "-"),
        "sparsity": 0.0 if method == DENSE else sparsity,
    }
    objective = tags.pop("objective", None) or objective_label(recipe.get("objective") or {})
    if objective is not None:
        labels["objective"] = objective
    if runtime != TORCH:
        labels[RUNTIME] = runtime
    return labels | {k: v for k, v in sorted(tags.items()) if k not in labels}


def objective_label(objective: dict[str, Any]) -> str | None:
    """A training objective with its non-default parameters (``kd pred_weight=0``); None for the
    standard one, so runs that differ only in their objective's settings are never pooled."""
    name = objective.get("name", STANDARD)
    if name == STANDARD:
        return None
    try:
        params = OBJECTIVES.params(name, objective.get("params")).model_dump(exclude_defaults=True)
    except SrnetError:  # an objective this version does not know: its recorded settings as they are
        params = dict(objective.get("params") or {})
    values = (f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())
    return " ".join([name, *values])


def split_schemes(recipe: dict[str, Any], task_name: str | None) -> dict[str, LabelScheme]:
    """Split display name -> label scheme, for the evaluation splits a run's recipe names."""
    task = TASKS.get(task_name or "", None)
    data = recipe.get("data") or {}
    specs = [data.get("dev"), *(data.get("eval") or []), *(data.get("challenge") or [])]
    out: dict[str, LabelScheme] = {}
    for raw in specs:
        if task is None or not isinstance(raw, dict):
            continue
        try:
            spec = DataSpec.model_validate(raw)
            out[spec.display_name] = task.scheme(spec.challenge)
        except (ValidationError, SrnetError):
            continue
    return out
