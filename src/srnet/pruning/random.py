"""Random pruning at the target sparsity (a seeded baseline)."""

from __future__ import annotations

import torch
from torch import Tensor

from srnet.pruning.base import OneShotMethod
from srnet.pruning.registry import register_method
from srnet.sparsity import rank


def uniform_scores(shapes: list[torch.Size], seed: int, devices: list[torch.device]) -> list[Tensor]:
    """Seeded U(0, 1) scores, drawn on the CPU so that they do not depend on the device."""
    generator = torch.Generator().manual_seed(seed)
    return [torch.rand(s, generator=generator).to(d) for s, d in zip(shapes, devices, strict=True)]


@register_method("random")
class RandomPruning(OneShotMethod):
    """Drop uniformly random weights: the same per-matrix (local) or total (global) sparsity."""

    def decide(self) -> list[Tensor]:
        devices = [t.module.weight.device for t in self.targets]
        scores = uniform_scores([t.shape for t in self.targets], self.seed, devices)
        return [keep for keep, _ in rank(scores, self.cfg.sparsity, self.cfg.scope)]
