"""``difficulty`` [B]: RMC sample difficulty in [0, 1], from a ``srnet bias difficulty`` file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from torch import Tensor

from srnet.bias.difficulty import load_difficulty, write_difficulty
from srnet.errors import SrnetError
from srnet.loss_inputs.base import LossInput, ReadContext, register_input

DIFFICULTY = "difficulty"


@register_input(DIFFICULTY)
class Difficulty(LossInput):
    """RMC sample difficulty [B] in [0, 1]."""

    source = "difficulty"
    what = "(a difficulty file)"
    per_class = False

    def read(self, path: str | Path, context: ReadContext) -> np.ndarray:
        return load_difficulty(path, context.ids)

    def check(self, owner: str, value: Tensor) -> None:
        bad = ~((value >= 0) & (value <= 1))
        if bad.any():
            row = int(bad.nonzero()[0])
            raise SrnetError(f"{owner}: difficulty {value[row].item():.4g} at row {row}; expected [0, 1]")

    def write_dummy(self, path: Path, context: ReadContext, rng: np.random.Generator) -> Path:
        return write_difficulty(path, context.ids, rng.uniform(0.2, 1.0, len(context.ids)))
