"""A given mask (e.g. ``masks.safetensors`` of an earlier run) applied as is.

The granularity follows the masks: a file of head/neuron gates (a structured run's, or a ticket
drawn from its scores) is attached as group gates, as ``omp`` attaches them, so the run saves
the same gates and its export can be shrunk; per-weight masks are attached per weight.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import torch
from pydantic import Field
from torch import Tensor, nn

from srnet.errors import SrnetError
from srnet.models import ALL_ROLES, MaskGroup, PrunableWeight, find_prunable
from srnet.pruning.base import OneShotMethod, OneShotParams
from srnet.pruning.config import PruningConfig
from srnet.pruning.registry import register_method
from srnet.sparsity.mask_io import load_masks
from srnet.sparsity.shapes import expand_masks, mask_granularity, mask_shapes, model_groups


class FixedParams(OneShotParams):
    """Settings of method fixed."""

    mask_file: str | None = Field(
        None,
        description="masks.safetensors keyed by module name, or head/neuron gates keyed by group "
        "name (the granularity follows the file).",
    )


@register_method("fixed")
class FixedMaskMethod(OneShotMethod):
    """Masks the weights (or heads/neurons) named by the keys of ``masks``; the weights stay
    trainable.  ``granularity`` follows the masks; a structured ``cfg.granularity`` must match."""

    params_model = FixedParams
    params: FixedParams

    def __init__(self, cfg: PruningConfig, seed: int = 0, masks: Mapping[str, Tensor] | None = None) -> None:
        super().__init__(cfg, seed)
        self.given = dict(masks or {})
        self._granularity: str | None = None

    @classmethod
    def from_config(cls, cfg: PruningConfig, seed: int = 0) -> FixedMaskMethod:
        if not cfg.params.mask_file:
            raise SrnetError("pruning method 'fixed' needs pruning.params.mask_file")
        return cls(cfg, seed)

    @classmethod
    def check_inputs(cls, cfg: PruningConfig) -> None:
        mask_file = cfg.params.mask_file
        if mask_file and not Path(mask_file).exists():
            raise SrnetError(f"pruning.params.mask_file: {mask_file} not found")

    @property
    def granularity(self) -> str:
        """The masks' granularity once read (:meth:`check`), ``cfg.granularity`` before."""
        return self._granularity or self.cfg.granularity

    def check(self, model: nn.Module) -> None:
        """Read the mask file against ``model`` and settle the granularity (once)."""
        if self._granularity is not None:
            return
        if not self.given and self.params.mask_file:
            # keys, shapes and the base-model fingerprint are checked against this model
            self.given, _ = load_masks(self.params.mask_file, model)
        if not self.given:
            raise SrnetError("pruning method 'fixed' was given no mask")
        found, wanted = mask_granularity(model, self.given), self.cfg.granularity
        if wanted not in ("unstructured", found):
            what = "per-weight masks" if found == "unstructured" else f"granularity '{found}' gates"
            raise SrnetError(f"pruning.granularity '{wanted}' contradicts the given mask ({what}); "
                             f"leave it out, 'fixed' follows its mask")
        if found == "unstructured":
            self.given = expand_masks(model, self.given)  # stray group gates -> their weights' masks
        shapes = mask_shapes(model, self.given)
        for key, mask in self.given.items():
            if tuple(mask.shape) != shapes[key]:
                what = "group" if found != "unstructured" else "weight"
                raise SrnetError(
                    f"mask '{key}' has shape {list(mask.shape)} but the model's {what} has "
                    f"shape {list(shapes[key])}"
                )
            if not bool(((mask == 0) | (mask == 1)).all()):
                raise SrnetError(f"mask '{key}' holds values other than 0 and 1")
        self._granularity = found

    def select(self, model: nn.Module) -> list[PrunableWeight] | list[MaskGroup]:
        self.check(model)
        if self.structured:
            return [g for name, g in model_groups(model).items() if name in self.given]
        prunable = {t.name: t for t in find_prunable(model, ALL_ROLES)}
        unknown = [key for key in self.given if key not in prunable]
        if unknown:
            raise SrnetError(f"mask key '{unknown[0]}' names no prunable weight of this model")
        return [t for name, t in prunable.items() if name in self.given]

    def decide(self) -> list[Tensor]:
        return [self.given[t.name].to(t.module.weight.device).bool() for t in self.targets]

    def current_sparsity(self, step: int) -> float:
        """The sparsity of the given masks (the fraction of heads/neurons for group gates)."""
        total = sum(m.numel() for m in self.given.values())
        return 1.0 - sum(int(torch.count_nonzero(m)) for m in self.given.values()) / total
