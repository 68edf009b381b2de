"""A given mask (e.g. ``masks.safetensors`` of an earlier run) applied as is."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor, nn

from srnet.errors import SrnetError
from srnet.models import ALL_ROLES, PrunableWeight, find_prunable
from srnet.pruning.base import OneShotMethod, register_method
from srnet.pruning.config import PruningConfig
from srnet.sparsity.mask_io import expand_masks, load_masks


@register_method("fixed")
class FixedMaskMethod(OneShotMethod):
    """Masks the weights named by the keys of ``masks``; the weights stay trainable."""

    def __init__(self, cfg: PruningConfig, seed: int = 0, masks: Mapping[str, Tensor] | None = None) -> None:
        super().__init__(cfg, seed)
        self.given = dict(masks or {})

    @classmethod
    def from_config(cls, cfg: PruningConfig, seed: int = 0) -> FixedMaskMethod:
        if not cfg.mask_file:
            raise SrnetError("pruning method 'fixed' needs pruning.mask_file")
        return cls(cfg, seed)

    def select(self, model: nn.Module) -> list[PrunableWeight]:
        if not self.given and self.cfg.mask_file:
            # keys, shapes and the base-model fingerprint are checked against this model
            self.given, _ = load_masks(self.cfg.mask_file, model)
        if not self.given:
            raise SrnetError("pruning method 'fixed' was given no mask")
        self.given = expand_masks(model, self.given)  # head/neuron gates -> their weights' masks
        prunable = {t.name: t for t in find_prunable(model, ALL_ROLES)}
        for key, mask in self.given.items():
            if key not in prunable:
                raise SrnetError(f"mask key '{key}' names no prunable weight of this model")
            shape = tuple(prunable[key].module.weight.shape)
            if tuple(mask.shape) != shape:
                raise SrnetError(
                    f"mask '{key}' has shape {list(mask.shape)} but the model's weight has "
                    f"shape {list(shape)}"
                )
            if not bool(((mask == 0) | (mask == 1)).all()):
                raise SrnetError(f"mask '{key}' holds values other than 0 and 1")
        return [t for name, t in prunable.items() if name in self.given]

    def decide(self) -> list[Tensor]:
        return [self.given[t.name].to(t.module.weight.device).bool() for t in self.targets]

    def current_sparsity(self, step: int) -> float:
        """The sparsity of the given masks."""
        total = sum(m.numel() for m in self.given.values())
        return 1.0 - sum(int(torch.count_nonzero(m)) for m in self.given.values()) / total
