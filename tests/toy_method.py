"""A toy pruning method: all that adding a method takes is this one module.

Its class, its params model and ``@register_method``; importing the module registers it, and
recipes can then say ``pruning: {method: toy, params: {keep: largest}}``.  tests/pruning/test_toy_method.py
imports it for its own tests only and runs it through the method x loss matrix.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from torch import Tensor

from srnet.pruning import OneShotMethod, OneShotParams, register_method
from srnet.pruning.magnitude import magnitudes
from srnet.sparsity import rank


class ToyParams(OneShotParams):
    """Settings of method toy."""

    keep: Literal["smallest", "largest"] = Field(
        "smallest", description="Keep the weights (or heads/neurons) of smallest or largest magnitude."
    )


@register_method("toy")
class ToyMethod(OneShotMethod):
    """Keep the smallest-magnitude weights or heads/neurons: a deliberately bad one-shot baseline."""

    params_model = ToyParams
    params: ToyParams

    def decide(self) -> list[Tensor]:
        sign = -1.0 if self.params.keep == "smallest" else 1.0
        scores = [sign * s for s in magnitudes(self.targets)]
        return [keep for keep, _ in rank(scores, self.cfg.sparsity, self.cfg.scope)]
