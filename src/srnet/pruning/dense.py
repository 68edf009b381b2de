"""No pruning: the dense model (the default method; ``pruning: null`` in a recipe means this)."""

from __future__ import annotations

from torch import Tensor, nn

from srnet.models import PrunableWeight
from srnet.pruning.base import OneShotMethod
from srnet.pruning.registry import register_method


@register_method("dense")
class Dense(OneShotMethod):
    """Masks nothing; every weight trains (only the heads with ``freeze_weights``).  Its mask set
    is empty and its sparsity is 0."""

    masks_weights = False

    def select(self, model: nn.Module) -> list[PrunableWeight]:
        return []

    def decide(self) -> list[Tensor]:
        return []

    def current_sparsity(self, step: int) -> float:
        return 0.0
