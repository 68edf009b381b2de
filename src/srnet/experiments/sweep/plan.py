"""Sweep files: a base recipe, named stages, and a grid, expanded into a plan of unique stages.

Every stage of every grid point is keyed by a hash of its kind, its *semantic* recipe
(:meth:`Recipe.semantic_dict`: no name, output_dir or logging keys), its own parameters and the
keys of the stages it consumes (not their paths).  Equal keys are one stage: the fine-tune that
every pruning run of a seed starts from runs once.  A stage's folder is
``<output_dir>/<stage>/<key>``; it is complete when its ``stage.json`` exists (written last).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from srnet.compat import without_defaults
from srnet.config import (
    Recipe,
    apply_overrides,
    parse_override,
    recipe_from_dict,
    set_dotted,
    validation_line,
)
from srnet.errors import NeedsOption, SrnetError
from srnet.experiments.refs import intermediate_refs, resolve_gathered_refs, resolve_refs, stage_refs
from srnet.experiments.sweep.stages import get_stage
from srnet.io import atomic_write_text, read_yaml
from srnet.rundir.layout import COMPLETE

log = logging.getLogger(__name__)

RECORD = "sweep.yaml"


class StageSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    kind: str = Field(description="stage kind: train, evaluate, bias_fit, predict, difficulty, ticket, "
                      "random_like, attack, export, bench")
    set: dict[str, Any] = Field(default_factory=dict, description="dotted recipe keys over the base")
    with_: dict[str, Any] = Field(default_factory=dict, alias="with", description="the kind's parameters")


class SweepFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="sweep name")
    output_dir: str = Field(description="folder of the sweep's record and its stages' folders")
    base: dict[str, Any] = Field(default_factory=dict, description="the recipe every stage starts from")
    stages: dict[str, StageSpec] = Field(min_length=1, description="stage name -> stage")
    grid: dict[str, list[Any]] = Field(
        default_factory=dict,
        description="dotted key -> values; '<stage>.key' applies to one stage, other keys to the base",
    )


@dataclass
class Job:
    """One unique stage of the plan, ready to run in any process (plain, picklable data)."""

    name: str
    kind: str
    key: str
    folder: Path
    recipe: dict[str, Any]
    params: dict[str, Any]
    deps: list[str] = field(default_factory=list)
    grid: dict[str, Any] = field(default_factory=dict)
    """The grid values that shape this stage: the base's, its own and those of the stages it
    consumes (transitively); recorded in ``stage.json`` so a report never pools grid points."""
    module: str = ""
    """The module that registers the stage's kind: a worker imports it (by name, as it would a
    plug-in) before looking the kind up, so a kind may be registered by the verb above it."""
    aliases: list[str] = field(default_factory=list)
    """Other stages of the sweep that are this same run (equal key: the same kind, semantic recipe,
    parameters and inputs): they have no folder of their own; ``--only`` accepts their names."""

    @property
    def label(self) -> str:
        values = " ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in self.grid.items())
        return f"{self.name} {values}".strip()

    @property
    def complete(self) -> bool:
        return (self.folder / COMPLETE).is_file()


def load_sweep(path: str | Path, overrides: list[str] | None = None) -> dict[str, Any]:
    """Read a sweep YAML file and apply ``--set`` overrides (validated by :func:`plan_sweep`)."""
    path = Path(path)
    if not path.is_file():
        raise SrnetError(f"{path}: sweep file not found")
    data = read_yaml(path) or {}
    if not isinstance(data, dict):
        raise SrnetError(f"{path}: a sweep must be a mapping (name, output_dir, base, stages, grid)")
    grid_items = [item for item in overrides or [] if item.startswith("grid.")]
    apply_overrides(data, [item for item in overrides or [] if item not in grid_items], str(path))
    for item in grid_items:  # grid keys are flat dotted names: 'grid.mask.pruning.lr=[..]' sets one
        key, value = parse_override(item, str(path))
        if not isinstance(data.setdefault("grid", {}), dict):
            raise SrnetError(f"{path}: grid must be a mapping of dotted keys to lists of values")
        data["grid"][key.removeprefix("grid.")] = value
    return data


def parse_sweep(data: dict[str, Any], source: str) -> SweepFile:
    """Validate a sweep dict; one-line errors naming the file and key."""
    try:
        sweep = SweepFile.model_validate(data)
    except ValidationError as exc:
        raise SrnetError(validation_line(source, exc)) from None
    reserved = set(Recipe.model_fields)
    for name, spec in sweep.stages.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or name in reserved:
            raise SrnetError(f"{source}: stages.{name}: a stage name must be an identifier and not a "
                             f"recipe section ({sorted(reserved)})")
        get_stage(spec.kind)
    for key, values in sweep.grid.items():
        _, dotted = _grid_target(key, sweep)
        if not _known_key(Recipe, dotted.split(".")):
            raise SrnetError(f"{source}: grid key '{key}' is not a recipe key")
        if not values:
            raise SrnetError(f"{source}: grid key '{key}' has no values")
    return sweep


def plan_sweep(data: dict[str, Any], source: str) -> list[Job]:
    """Expand the grid into unique jobs, each after the jobs it consumes."""
    sweep = parse_sweep(data, source)
    out = Path(sweep.output_dir)
    order = _stage_order(sweep, source)
    gathering = _gathering(sweep, order, source)
    jobs: dict[str, Job] = {}
    points: list[tuple[dict[str, Any], dict[str, str]]] = []  # each grid point's base and stage keys
    for values in itertools.product(*sweep.grid.values()):
        point = dict(zip(sweep.grid, values, strict=True))
        base = copy.deepcopy(sweep.base)
        _apply(base, {k: v for k, v in point.items() if _grid_target(k, sweep)[0] is None}, source)
        keys: dict[str, str] = {}
        upstream: dict[str, set[str]] = {}  # stage -> the stages it consumes, transitively
        points.append((base, keys))
        for name in order:
            if name in gathering:
                continue  # once for the whole sweep, below
            spec = sweep.stages[name]
            stage = get_stage(spec.kind)
            where = f"{source}: stage '{name}'"
            data_ = copy.deepcopy(base)
            _apply(data_, spec.set, where)
            own = {k: v for k, v in point.items() if _grid_target(k, sweep)[0] == name}
            _apply(data_, {_grid_target(k, sweep)[1]: v for k, v in own.items()}, where)
            recipe = recipe_from_dict(data_, where)
            params = _params(stage, spec.with_, where)
            deps = sorted(stage_refs([data_, spec.with_]))
            check_intermediate_refs(data_, {d: jobs[keys[d]] for d in deps}, where)
            blob = {"kind": spec.kind, "recipe": stage.semantic(recipe), "with": key_params(stage, params),
                    "deps": {d: keys[d] for d in deps}}
            key = hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:16]
            keys[name] = key
            upstream[name] = set(deps).union(*(upstream[d] for d in deps))
            shaping = {None, name, *upstream[name]}  # a ticket is set apart by its mask search's values
            own_grid = {k: v for k, v in point.items() if _grid_target(k, sweep)[0] in shaping}
            if key in jobs:  # shared: keep only the grid values that all its points agree on
                jobs[key].grid = {k: v for k, v in jobs[key].grid.items() if own_grid.get(k) == v}
                if name not in (jobs[key].name, *jobs[key].aliases):
                    jobs[key].aliases.append(name)
                continue
            outputs = {d: _output(jobs[keys[d]]) for d in deps}
            jobs[key] = Job(
                name=name, kind=spec.kind, key=key, folder=out / name / key,
                recipe=resolve_refs(recipe.model_dump(mode="json"), outputs),
                params=resolve_refs(params, outputs), deps=[keys[d] for d in deps],
                grid=own_grid, module=type(stage).__module__,
            )
    for name in gathering:
        job = _gather(name, sweep, points, jobs, out, source)
        jobs.setdefault(job.key, job)
    _warn_aliases(list(jobs.values()), source)
    return list(jobs.values())


def _warn_aliases(jobs: list[Job], source: str) -> None:
    """One line for each stage planned to another stage's runs (equal keys): it would otherwise run
    nothing of its own, silently."""
    shared = {(alias, job.name, str(job.folder.parent)) for job in jobs for alias in job.aliases}
    for alias, name, folder in sorted(shared):
        log.warning("%s: stage '%s' is the same run as stage '%s' (same kind, recipe, parameters and "
                    "inputs): it runs once, in %s; change a setting to make it a run of its own",
                    source, alias, name, folder)


def only_stages(jobs: list[Job], names: list[str], source: str) -> list[Job]:
    """The jobs of the stages ``names`` (at every grid point) and every job they need, transitively,
    in plan order: ``srnet sweep --only`` runs a study's decisive stages first; the rest wait, under
    the same keys, for a later run of the whole sweep. One line for a name the sweep has no stage of."""
    known = sorted({stage for job in jobs for stage in (job.name, *job.aliases)})
    for name in names:
        if name not in known:
            raise SrnetError(f"{source}: --only {name}: no such stage (stages: {', '.join(known)})")
    by_key = {job.key: job for job in jobs}
    wanted: set[str] = set()
    todo = [job.key for job in jobs if {job.name, *job.aliases} & set(names)]
    while todo:
        key = todo.pop()
        if key not in wanted:
            wanted.add(key)
            todo.extend(by_key[key].deps)
    return [job for job in jobs if job.key in wanted]


def check_intermediate_refs(data: dict[str, Any], deps: dict[str, Job], where: str) -> None:
    """Every '@stage/intermediate/step_N' names a step that stage exports (its
    ``training.save_at_steps``): refused when the sweep is planned, before anything runs."""
    for name, step in intermediate_refs(data):
        saved = (deps[name].recipe.get("training") or {}).get("save_at_steps") or []
        if step not in saved:
            raise SrnetError(f"{where}: '@{name}/intermediate/step_{step}': stage '{name}' saves no "
                             f"checkpoint at step {step} (its training.save_at_steps: {saved})")


def _gathering(sweep: SweepFile, order: list[str], source: str) -> list[str]:
    """The stages that run once for the whole sweep (``Stage.gathers``), in order; no stage may
    use their output, and no grid key may target them."""
    names = [n for n in order if get_stage(sweep.stages[n].kind).gathers]
    for name, spec in sweep.stages.items():
        used = stage_refs([sweep.base, spec.set, spec.with_, list(sweep.grid.values())]) & set(names)
        if used:
            raise SrnetError(f"{source}: stage '{name}' refers to '@{sorted(used)[0]}', which runs once for "
                             "the whole sweep after the stages it gathers: nothing can use its output")
    for key in sweep.grid:
        if _grid_target(key, sweep)[0] in names:
            raise SrnetError(f"{source}: grid key '{key}': stage '{_grid_target(key, sweep)[0]}' runs once "
                             "for the whole sweep, so it has no grid values of its own")
    return names


def _gather(name: str, sweep: SweepFile, points: list[tuple[dict[str, Any], dict[str, str]]],
            jobs: dict[str, Job], out: Path, source: str) -> Job:
    """The one job of a gathering stage: each '@stage' in its ``with:`` stands for that stage's
    outputs at every grid point (unique, in plan order); it runs after all of them."""
    spec = sweep.stages[name]
    stage = get_stage(spec.kind)
    where = f"{source}: stage '{name}'"
    if stage_refs(spec.set):
        raise SrnetError(f"{where}: a {spec.kind} stage runs once for the whole sweep: refer to stages "
                         "in its 'with', not in 'set'")
    data = copy.deepcopy(points[0][0])  # a valid recipe: the first grid point's base
    _apply(data, spec.set, where)
    recipe = recipe_from_dict(data, where)
    params = _params(stage, spec.with_, where)
    deps = sorted(stage_refs(spec.with_))
    keys = {d: list(dict.fromkeys(point[d] for _, point in points)) for d in deps}
    blob = {"kind": spec.kind, "recipe": stage.semantic(recipe), "with": key_params(stage, params),
            "deps": keys}
    key = hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:16]
    outputs = {d: [_output(jobs[k]) for k in ks] for d, ks in keys.items()}
    try:
        resolved = resolve_gathered_refs(params, outputs)
    except ValueError as exc:
        raise SrnetError(f"{where}: {exc}") from None
    first = {d: _output(jobs[points[0][1][d]]) for d in stage_refs(data)}  # refs of the base
    return Job(name=name, kind=spec.kind, key=key, folder=out / name / key,
               recipe=resolve_refs(recipe.model_dump(mode="json"), first), params=resolved,
               deps=[k for d in deps for k in keys[d]], grid={}, module=type(stage).__module__)


def first_change(old: Any, new: Any, prefix: str = "") -> str | None:
    """The first dotted key whose value differs between two nested dicts (None when equal)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*new, *(k for k in old if k not in new)]:
            found = first_change(old.get(key), new.get(key), f"{prefix}{key}.")
            if found:
                return found
        return None
    return prefix.rstrip(".") if old != new else None


def _grid_target(key: str, sweep: SweepFile) -> tuple[str | None, str]:
    """(stage name or None for the base, dotted recipe key) of a grid key."""
    head, _, rest = key.partition(".")
    return (head, rest) if head in sweep.stages and rest else (None, key)


def _known_key(model: type[BaseModel], parts: list[str]) -> bool:
    """Whether a dotted key names a field of ``model`` (free-form dicts accept any sub-key; a
    section with a ``known_key`` classmethod, e.g. pruning's method params, says itself)."""
    if not parts:
        return True
    if hasattr(model, "known_key"):
        return model.known_key(parts)
    info = model.model_fields.get(parts[0])
    if info is None:
        return False
    rest = parts[1:]
    for kind in (info.annotation, *get_args(info.annotation)):
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            return _known_key(kind, rest)
        if get_origin(kind) is dict:
            return True
        if get_origin(kind) is list and rest and rest[0].isdigit():
            item = get_args(kind)[0]
            return len(rest) == 1 or (isinstance(item, type) and issubclass(item, BaseModel)
                                      and _known_key(item, rest[1:]))
    return not rest


def _stage_order(sweep: SweepFile, source: str) -> list[str]:
    """Stage names, each after the stages it references, otherwise in the file's order (a stage
    listed earlier runs as soon as its inputs exist); unknown names and cycles are errors."""
    needs: dict[str, set[str]] = {}
    for name, spec in sweep.stages.items():
        own = [v for k, v in sweep.grid.items() if _grid_target(k, sweep)[0] in (None, name)]
        needs[name] = stage_refs([sweep.base, spec.set, spec.with_, own])
        for ref in needs[name] - set(sweep.stages):
            raise SrnetError(f"{source}: stage '{name}' refers to '@{ref}', which no stage produces "
                             f"(stages: {list(sweep.stages)})")
    order: list[str] = []
    while len(order) < len(needs):
        ready = next((n for n in needs if n not in order and needs[n] <= set(order)), None)
        if ready is None:
            stuck = [n for n in needs if n not in order]
            raise SrnetError(f"{source}: stages {stuck} refer to each other in a cycle")
        order.append(ready)
    return order




def _output(job: Job) -> Path:
    stage = get_stage(job.kind)
    return stage.output(job.folder, stage.params_model.model_validate(job.params))


def key_params(stage, params: dict[str, Any]) -> dict[str, Any]:
    """The parameters a stage's key depends on: not the non-semantic ones, nor one added later
    while it holds its default."""
    model = stage.params_model
    semantic = {k: v for k, v in params.items() if k not in model.non_semantic}
    return without_defaults(semantic, model.added_later)


def _params(stage, raw: dict[str, Any], where: str) -> dict[str, Any]:
    try:
        return stage.params_model.model_validate(raw).model_dump(mode="json")
    except ValidationError as exc:
        raise SrnetError(validation_line(f"{where}: with", exc)) from None


def _apply(data: dict[str, Any], values: dict[str, Any], where: str) -> None:
    """Set dotted keys on a recipe dict (values as given, not re-parsed)."""
    for key, value in values.items():
        set_dotted(data, key, copy.deepcopy(value), where)


RESUMABLE_KEYS = ("training.log_every", "training.tensorboard", "training.eval_batch_size",
                  "training.checkpoint_every")
"""Recipe keys a resume may change in the base or a stage's ``set``: how a run logs and how often it
saves a checkpoint, never what it computes or how its runs are labelled (e.g. a denser
``checkpoint_every`` before a session ends, so an unfinished stage loses fewer steps)."""


def first_conflict(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """The first change a resume may not make: anything but new stages, other grid values and the
    :data:`RESUMABLE_KEYS` (stage folders are keyed by their content, so none alters a finished
    stage)."""
    recorded = old.get("stages") or {}

    def kept(data: dict[str, Any]) -> dict[str, Any]:
        stages = {k: {**v, "set": _without_resumable(v.get("set"))} if isinstance(v, dict) else v
                  for k, v in (data.get("stages") or {}).items() if k in recorded}
        rest = {k: v for k, v in data.items() if k not in ("grid", "base")}
        return {**rest, "base": _without_resumable(data.get("base")), "stages": stages}

    return first_change(kept(old), kept(new))


def _without_resumable(recipe: Any) -> Any:
    """A recipe dict (nested sections or dotted keys) as flat dotted keys, without :data:`RESUMABLE_KEYS`."""
    if recipe is None:
        return {}  # no ``set`` is an empty one
    if not isinstance(recipe, dict):
        return recipe
    flat: dict[str, Any] = {}

    def walk(data: dict[str, Any], prefix: str) -> None:
        for key, value in data.items():
            if isinstance(value, dict) and value:
                walk(value, f"{prefix}{key}.")
            else:
                flat[f"{prefix}{key}"] = value

    walk(recipe, "")
    return {k: v for k, v in flat.items() if k not in RESUMABLE_KEYS}


def record_sweep(data: dict[str, Any], output_dir: Path, *, resume: bool) -> None:
    """Write the resolved sweep to ``<output_dir>/sweep.yaml``; on ``resume``, refuse a changed one
    (added stages and other grid values extend it)."""
    record = output_dir / RECORD
    if record.is_file():
        if not resume:
            raise NeedsOption(f"{output_dir} already holds a sweep ({record}); pass resume=True to "
                              "continue it", "resume")
        changed = first_conflict(read_yaml(record), data)
        if changed:
            raise SrnetError(f"{record}: --resume with a changed sweep: '{changed}' differs from the "
                             "recorded one (use a new output_dir; a resume may add stages or grid values)")
    atomic_write_text(record, yaml.safe_dump(data, sort_keys=False))


def describe_plan(jobs: list[Job]) -> list[str]:
    """One line per job, in execution order: done or to run, with its folder."""
    return [f"[{i}/{len(jobs)}] {'done  ' if job.complete else 'to run'} {job.label}  ({job.folder})"
            for i, job in enumerate(jobs, 1)]
