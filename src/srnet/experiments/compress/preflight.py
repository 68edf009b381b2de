"""Every check ``srnet compress`` can make before it times or trains anything: the model can be
shrunk and exported, the bias fits the task's inputs, the timing length fits the model, and the
attack size fits the split.  Each fault is one line naming its flag (exit 2), with nothing written."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from srnet.errors import SrnetError
from srnet.experiments.compress.config import ATTACK_DEFAULT, CompressConfig
from srnet.experiments.compress.source import Source, bias_setting, check_family, dropped_layers, id_split

SHRUNK_MARKERS = ("srnet_linear_shapes",)
"""``config.json`` keys that only an srnet shrunk export writes."""


@dataclass(frozen=True)
class Preflight:
    """What the checks resolved: the attack's size (0: no attack)."""

    attack_n: int


def preflight(source: Source, config: CompressConfig) -> Preflight:
    """Run every check; the resolved settings the plan needs."""
    from srnet.export import verify_export

    verify_export(source.weights)  # an srnet export's files are what its record hashed
    check_not_shrunk(source)
    check_family(source)
    dropped_layers(source, config.drop_layers)
    bias_setting(config.bias, source)  # a typo, or a bias file for other data
    examples = _split_sizes(source)
    check_bias_inputs(source, config)
    check_length(source, config)
    return Preflight(attack_size(config, examples))


def check_not_shrunk(source: Source) -> None:
    """An srnet shrunk export cannot be cut again (its layers have per-layer sizes)."""
    config_file = source.weights / "config.json"
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # a hub id or an unreadable config: check_family names it
    auto_map = json.dumps(config.get("auto_map") or {})
    if any(key in config for key in SHRUNK_MARKERS) or "modeling_srnet" in auto_map:
        raise SrnetError(
            f"{source.model}: an srnet shrunk export cannot be compressed again; compress the "
            "run or the dense model it came from"
        )


def _split_sizes(source: Source) -> dict[str, int]:
    """Examples in the split the attack reads (by name)."""
    from srnet.config import recipe_from_dict
    from srnet.experiments.run.data import data_base_dir
    from srnet.tasks import get_task, split_name
    from srnet.tasks.loading import load_examples

    recipe = recipe_from_dict({**source.recipe, "name": "compress"})
    split = id_split(source)
    if split is None:
        return {}
    spec = recipe.data.dev if split == "dev" else next(s for s in recipe.data.eval if split_name(s) == split)
    return {split: len(load_examples(get_task(recipe.task), spec, base_dir=data_base_dir(recipe)))}


def attack_size(config: CompressConfig, sizes: dict[str, int]) -> int:
    """``--attack-n`` resolved: the default is :data:`ATTACK_DEFAULT` or the whole split when
    smaller; a size over the split is refused."""
    if not sizes or config.attack_n == 0:
        return 0
    ((split, size),) = sizes.items()
    if config.attack_n is None:
        return min(ATTACK_DEFAULT, size)
    if config.attack_n > size:
        raise SrnetError(
            f"--attack-n {config.attack_n}: the {split} split has {size} examples; give at most "
            f"{size} (or 0: no attack)"
        )
    return config.attack_n


def check_bias_inputs(source: Source, config: CompressConfig) -> None:
    """A bias feature that models the second text of a pair needs a task with pairs."""
    from srnet.bias.features import FEATURES
    from srnet.config import recipe_from_dict
    from srnet.experiments.run.data import data_base_dir
    from srnet.tasks import get_task
    from srnet.tasks.loading import load_examples

    if config.bias is None or config.bias not in FEATURES or not FEATURES.get(config.bias).needs_pairs:
        return
    recipe = recipe_from_dict({**source.recipe, "name": "compress"})
    train = load_examples(get_task(recipe.task), recipe.data.train, base_dir=data_base_dir(recipe))
    single = next((ex for ex in train if ex.text_b is None), None)
    if single is not None:
        raise SrnetError(
            f"--bias {config.bias}: models the second text of a pair, but the training example "
            f"'{single.id}' has one text; give a bias that fits single texts, a bias file, or none"
        )


def check_length(source: Source, config: CompressConfig) -> None:
    """``--length auto`` has a split to draw from; a fixed length fits the model's positions."""
    if config.length == "auto":
        if id_split(source) is None:
            raise SrnetError(
                "--length auto: the recipe has no dev or eval split to draw the timing batches "
                "from; give --length N"
            )
        return
    try:
        model_config = json.loads((Path(source.weights) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    limit = model_config.get("max_position_embeddings")
    if isinstance(limit, int) and config.length > limit:
        raise SrnetError(
            f"--length {config.length}: longer than the model's {limit} positions; give at most {limit}"
        )
