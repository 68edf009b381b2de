"""A toy loss input and a loss that reads it: all that adding an input takes is this one
module.

``example_weight`` [B]: a non-negative weight per training example, read from a JSON Lines file of
``{"id": ..., "weight": ...}`` rows that a recipe gives as ``loss.inputs.example_weights`` (the
``SrnetTrainer`` as ``inputs={"example_weights": path}``).  The loss ``weighted_ce`` is the
weighted mean of the per-example cross-entropy, so all-ones weights give ``ce`` and all-zero
weights a loss of exactly 0.  tests/losses/test_loss_inputs.py loads it through ``plugins:``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch.nn.functional as F
from torch import Tensor

from srnet.by_id import read_jsonl_rows, require_ids, rows_by_id
from srnet.errors import SrnetError
from srnet.io import atomic_write_jsonl
from srnet.loss_inputs import LossInput, ReadContext, register_input
from srnet.losses import Loss, register_loss

WEIGHT = "example_weight"


@register_input(WEIGHT)
class ExampleWeight(LossInput):
    """A non-negative weight [B] per training example."""

    source = "example_weights"
    what = "(a JSON Lines file of {id, weight} rows)"
    per_class = False

    def read(self, path: str | Path, context: ReadContext) -> np.ndarray:
        """The file's values as they are: srnet refuses text, nulls, NaN and inf (naming the row)."""
        path = Path(path)
        if not path.is_file():
            raise SrnetError(f"example-weight file {path} does not exist")
        weights = rows_by_id(read_jsonl_rows(path), path, "weight")
        require_ids(weights, context.ids, path, "weight")
        return np.array([weights[str(i)] for i in context.ids], dtype=object)

    def check(self, owner: str, value: Tensor) -> None:
        negative = (value < 0).nonzero()
        if len(negative):
            row = int(negative[0])
            raise SrnetError(f"{owner}: example_weight {value[row].item():.4g} at row {row} is negative")

    def write_dummy(self, path: Path, context: ReadContext, rng: np.random.Generator) -> Path:
        weights = rng.uniform(0.5, 1.5, len(context.ids))
        rows = ({"id": i, "weight": float(w)} for i, w in zip(context.ids, weights, strict=True))
        return atomic_write_jsonl(path, rows)


@register_loss("weighted_ce")
class WeightedCrossEntropy(Loss):
    """Cross-entropy weighted per example by ``example_weight``."""

    requires = frozenset({WEIGHT})

    def compute(
        self, logits: Tensor, labels: Tensor, extras: Mapping[str, Tensor], progress: float
    ) -> Tensor:
        weights = extras[WEIGHT].to(logits.dtype)
        per_example = F.cross_entropy(logits, labels, reduction="none")
        return (weights * per_example).sum() / weights.sum().clamp_min(1e-12)
