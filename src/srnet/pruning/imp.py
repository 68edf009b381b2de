"""Iterative magnitude pruning (IMP), optionally rewinding to the prepare-time weights.

Every ``every * t_max`` steps, ``prune_fraction`` of the original weight count is pruned (by
magnitude of the current weights; pruned weights stay pruned) until the target.  With
``rewind`` every trainable parameter is reset to its prepare-time value at each
event (lottery-ticket rewinding), and ``on_step`` returns True so the loop resets the optimizer.
"""

from __future__ import annotations

from typing import Any

import torch
from pydantic import Field
from torch import Tensor, nn

from srnet.errors import SrnetError
from srnet.pruning.base import PruningMethod
from srnet.pruning.config import MethodParams
from srnet.pruning.magnitude import magnitudes
from srnet.pruning.registry import register_method
from srnet.sparsity import FixedMask, StepSchedule, original_weight, rank


class ImpParams(MethodParams):
    """Settings of method imp (iterative magnitude pruning)."""

    prune_fraction: float = Field(
        0.1, gt=0.0, le=1.0, description="Fraction of the original weights pruned per event."
    )
    every: float = Field(
        0.1, gt=0.0, le=1.0, description="Steps between pruning events, as a fraction of t_max."
    )
    rewind: bool = Field(
        False, description="Reset the surviving weights to their prepare-time values at each event."
    )


@register_method("imp")
class IterativeMagnitude(PruningMethod):
    """Weights are trained under a fixed mask that grows sparser at each pruning event."""

    params_model = ImpParams
    params: ImpParams
    schedule: StepSchedule

    def setup(self, model: nn.Module) -> None:
        imp = self.params
        interval = max(1, round(imp.every * self.total_steps))
        self.schedule = StepSchedule(imp.prune_fraction, interval, self.cfg.sparsity)
        if self.schedule.last_event_step > self.total_steps:
            raise SrnetError(
                f"imp cannot reach sparsity {self.cfg.sparsity} in {self.total_steps} steps: "
                f"{self.schedule.events} events of {imp.prune_fraction} every {interval} steps "
                f"need {self.schedule.last_event_step} steps"
            )
        self.attach_masks([FixedMask(torch.ones(t.shape), original_weight(t.module)) for t in self.targets])
        self.level = 0.0
        self._params = {n: p for n, p in model.named_parameters() if p.requires_grad}
        self._initial: dict[str, Tensor] = (
            {n: p.detach().clone() for n, p in self._params.items()} if imp.rewind else {}
        )

    def current_sparsity(self, step: int) -> float:
        return self.schedule(step)

    def on_step(self, step: int) -> bool:
        super().on_step(step)
        target = self.current_sparsity(step)
        if target <= self.level:
            return False
        ranked = rank(magnitudes(self.targets, self._masks), target, self.cfg.scope)
        for mask, (keep, _) in zip(self._masks, ranked, strict=True):
            mask.set_mask(keep)
        self.level = target
        if not self._initial:
            return False
        with torch.no_grad():
            for name, param in self._params.items():
                param.copy_(self._initial[name])
        return True

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "level": self.level, "initial": self._initial}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.level = float(state["level"])
        for name, value in state["initial"].items():
            self._initial[name].copy_(value)
