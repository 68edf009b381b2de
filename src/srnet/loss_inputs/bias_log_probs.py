"""``bias_log_probs`` [B, C]: the bias model's natural-log probabilities (rows logsumexp to 0),
from a ``srnet bias fit`` file (or ``.npy`` / ``.pkl`` / ``.json`` by example id)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from srnet.bias.predictions import load_bias_log_probs, write_bias_predictions
from srnet.errors import SrnetError
from srnet.loss_inputs.base import LossInput, ReadContext, register_input

BIAS = "bias_log_probs"
TOLERANCE = 1e-3


@register_input(BIAS)
class BiasLogProbs(LossInput):
    """The bias model's natural-log probabilities [B, C]."""

    source = "bias_predictions"
    what = "(a `srnet bias fit` file)"

    def read(self, path: str | Path, context: ReadContext) -> np.ndarray:
        return load_bias_log_probs(path, context.ids, context.num_classes, labels=context.labels)

    def check(self, owner: str, value: Tensor) -> None:
        total = torch.logsumexp(value, dim=1)
        bad = ~(total.abs() <= TOLERANCE)
        if bad.any():
            row = int(bad.nonzero()[0])
            raise SrnetError(f"{owner}: bias_log_probs row {row} has logsumexp {total[row].item():.4g}; "
                             "expected natural-log probabilities (logsumexp 0)")

    def write_dummy(self, path: Path, context: ReadContext, rng: np.random.Generator) -> Path:
        labels = context.labels or [str(n) for n in range(context.num_classes)]
        probs = rng.dirichlet(np.ones(context.num_classes), len(context.ids))
        return write_bias_predictions(path, context.ids, np.log(probs), labels=labels, feature="dummy",
                                      split="train")
