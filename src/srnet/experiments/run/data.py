"""A recipe's data: every split it names, read (and checked) before any model loads."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from srnet.config import Recipe
from srnet.errors import SrnetError
from srnet.tasks import Task, load_examples, load_split
from srnet.tasks.base import Example
from srnet.tasks.readers import data_dir
from srnet.tasks.spec import DataSpec


@dataclass
class RunData:
    """A recipe's examples, loaded before any model so bad data fails fast."""

    train: list[Example] | None
    dev: tuple[DataSpec, list[Example]] | None
    evals: list[tuple[DataSpec, list[Example]]]
    challenges: list[tuple[DataSpec, list[Example]]]
    skipped: dict[str, int] = field(default_factory=dict)
    """Evaluation split name -> rows dropped for having no gold label ('-')."""


def data_base_dir(recipe: Recipe) -> Path | None:
    """Where relative data paths are resolved: ``data.base_dir``, ``$SRNET_DATA_DIR`` or cwd."""
    return data_dir(recipe.data.base_dir)


def load_run_data(recipe: Recipe, task: Task) -> RunData:
    """Read every split a recipe names."""
    base = data_base_dir(recipe)
    data = recipe.data
    train = load_training_examples(recipe, task)
    skipped: dict[str, int] = {}

    def evaluation_split(spec: DataSpec) -> tuple[DataSpec, list[Example]]:
        loaded = load_split(task, spec, base_dir=base)
        if loaded.skipped:
            skipped[loaded.name] = loaded.skipped
        return spec, loaded.examples

    dev = evaluation_split(data.dev) if data.dev else None
    evals = [evaluation_split(s) for s in data.eval]
    challenges = [evaluation_split(s) for s in data.challenge]
    return RunData(train, dev, evals, challenges, skipped)


def load_training_examples(recipe: Recipe, task: Task) -> list[Example] | None:
    """The training split, with any OOD examples mixed in (None when the recipe has none)."""
    data = recipe.data
    if data.train is None:
        return None
    base = data_base_dir(recipe)
    train = load_examples(task, data.train, base_dir=base)
    if data.ood_train is not None:
        train = train + ood_training_examples(task, data.ood_train, base, data.ood_label_map)
    return train


def ood_training_examples(
    task: Task, spec: DataSpec, base: Path | None, label_map: dict[str, str]
) -> list[Example]:
    """OOD examples relabelled into the task's classes (e.g. HANS non-entailment -> contradiction)."""
    from srnet.tasks import label_space

    examples = load_examples(task, spec, base_dir=base)
    space = label_space(task, spec)
    out = []
    for ex in examples:
        name = space.names[ex.label]
        target = label_map.get(name, name)
        if target not in task.labels:
            raise SrnetError(
                f"data.ood_train: label '{name}' has no class in task {task.name}; "
                f"map it with data.ood_label_map (classes: {list(task.labels)})"
            )
        out.append(Example(f"ood-{ex.id}", ex.text_a, ex.text_b, task.labels.index(target), ex.meta))
    return out
