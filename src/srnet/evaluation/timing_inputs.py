"""Inputs to time models on: batches drawn from a task's examples, tokenized as evaluation tokenizes
them (real lengths, truncation at ``max_length``, padding to the longest in each batch), with their
length distribution -- or random token ids of a fixed batch x length.

Data batches are drawn at random (seeded), as requests reach a served model, not sorted by length
as evaluation sorts a whole split; ``lengths`` describes the examples drawn, which are the ones timed.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from srnet.errors import SrnetError
from srnet.tasks.base import Example

if TYPE_CHECKING:
    from srnet.config import Recipe
    from srnet.tasks.spec import DataSpec


@dataclass(frozen=True)
class TimingInputs:
    """The batches of one batch size that a bench cell times, and what they are."""

    batches: list[dict[str, torch.Tensor]]
    batch: int
    kind: str
    """``fixed``: one batch of random token ids; ``data``: batches of a split's examples."""
    split: str | None = None
    lengths: dict[str, float] | None = None
    """Data: ``median``, ``p95``, ``mean``, ``max`` of the drawn examples' token counts and
    ``padded_mean``, the batches' mean padded length."""

    @property
    def length(self) -> float:
        """The cell's sequence length: fixed, else the mean padded length."""
        return self.lengths["padded_mean"] if self.lengths else int(self.batches[0]["input_ids"].shape[1])

    @property
    def longest(self) -> int:
        """The longest padded batch, in tokens."""
        return max(int(b["input_ids"].shape[1]) for b in self.batches)

    def record(self) -> dict[str, Any]:
        """What the bench record says of these inputs."""
        if self.kind == "fixed":
            return {"kind": "fixed", "batch": self.batch, "length": self.length}
        return {"kind": "data", "split": self.split, "batch": self.batch, "n_batches": len(self.batches),
                "lengths": self.lengths}


def fixed_inputs(vocab: int, batch: int, length: int, generator: torch.Generator) -> TimingInputs:
    """One batch of random token ids (from id 1000 up, below ``vocab``), no padding."""
    ids = torch.randint(min(1000, vocab - 1), vocab, (batch, length), generator=generator)
    return TimingInputs([{"input_ids": ids, "attention_mask": torch.ones(batch, length, dtype=torch.long)}],
                        batch, "fixed")


def sample_inputs(examples: Sequence[Example], tokenizer: Any, max_length: int, batch: int,
                  n_batches: int, seed: int, split: str = "") -> TimingInputs:
    """``n_batches`` batches of ``batch`` examples drawn at random with ``seed`` (each example once
    until the split runs out, then again), encoded and padded by evaluation's
    :class:`~srnet.training.data.EncodedDataset` and :class:`~srnet.training.data.Collator`."""
    from srnet.training.data import MODEL_INPUTS, Collator, EncodedDataset

    if not examples:
        raise SrnetError(f"data split '{split}': no examples to time on")
    rng = np.random.default_rng(seed)
    need = batch * n_batches
    order = np.concatenate([rng.permutation(len(examples)) for _ in range(-(-need // len(examples)))])
    dataset = EncodedDataset([examples[i] for i in order[:need]], tokenizer, max_length)
    collate = Collator(tokenizer)
    batches = []
    for start in range(0, need, batch):
        padded = collate([dataset[i] for i in range(start, start + batch)])
        batches.append({k: v for k, v in padded.items() if k in MODEL_INPUTS})
    return TimingInputs(batches, batch, "data", split, length_stats(dataset.lengths, batches))


def length_stats(lengths: Sequence[int], batches: Sequence[dict[str, torch.Tensor]]) -> dict[str, float]:
    """Median, 95th percentile (linear), mean and max of per-example token counts, and the mean
    padded length of ``batches``."""
    return {"median": float(statistics.median(lengths)), "p95": float(np.percentile(lengths, 95)),
            "mean": float(np.mean(lengths)), "max": float(max(lengths)),
            "padded_mean": float(np.mean([b["input_ids"].shape[1] for b in batches]))}


def recipe_inputs(recipe: Recipe | dict[str, Any] | str | Path, model: str | Path, batch_sizes: Sequence[int],
                  *, split: str = "dev", n_batches: int = 8, seed: int | None = None) -> list[TimingInputs]:
    """Per batch size, :func:`sample_inputs` of the recipe's ``split`` (``train``, ``dev`` or an
    eval/challenge split's name), tokenized by ``model``'s tokenizer (a model folder or id) at the
    recipe's ``model.max_length``; ``recipe``: a :class:`~srnet.config.Recipe`, dict or YAML path;
    ``seed``: default the recipe's."""
    from srnet.config import as_recipe
    from srnet.models.loading import load_tokenizer
    from srnet.tasks import get_task
    from srnet.tasks.loading import load_examples
    from srnet.tasks.readers import data_dir

    recipe = as_recipe(recipe)
    spec = split_spec(recipe, split)
    examples = load_examples(get_task(recipe.task), spec, base_dir=data_dir(recipe.data.base_dir))
    tokenizer = load_tokenizer(str(model), recipe.model.max_length)
    seed = recipe.seed if seed is None else seed
    return [sample_inputs(examples, tokenizer, recipe.model.max_length, batch, n_batches, seed, split)
            for batch in batch_sizes]


def split_spec(recipe: Recipe, split: str) -> DataSpec:
    """The DataSpec the recipe names ``split``: ``train``, ``dev`` or an eval/challenge split's name."""
    data = recipe.data
    named = {"train": data.train, "dev": data.dev,
             **{spec.display_name: spec for spec in [*data.eval, *data.challenge]}}
    if named.get(split) is None:
        known = ", ".join(name for name, spec in named.items() if spec is not None) or "none"
        raise SrnetError(f"data split '{split}': not in the recipe's data (it has: {known})")
    return named[split]
