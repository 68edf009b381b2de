"""The pruning-method interface and its two shared families (with their shared params).

A method is a :class:`PruningMethod` subclass with a ``params_model`` (its ``pruning.params``
section: a :class:`~srnet.pruning.config.MethodParams`), registered by name with
:func:`~srnet.pruning.registry.register_method` in its own module.

Lifecycle (as in ``torch.ao.pruning``): ``prepare(model, total_steps)`` attaches mask
parametrizations; the training loop then calls ``mask_group``, ``penalty`` and, after every
optimizer step, ``on_step(step)``; ``freeze()`` makes the applied mask exact at the current
target before an evaluation or a save.  Resuming: ``prepare`` a fresh model, load the saved
(parametrized) ``model.state_dict()``, then ``method.load_state_dict``.

A method that decides its masks from training gradients (``calibrates``: ``omp`` with
``importance: gradient``) is then ``calibrate``-d once, after ``prepare`` and the objective's
setup and before the first step, with a :class:`Calibration`: the run's training batches and
its loss's forward/backward.  Until then its masks are all ones.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from pydantic import Field, field_validator
from torch import Tensor, nn

from srnet.errors import SrnetError
from srnet.models import (
    MaskGroup,
    PrunableWeight,
    check_encoder_coverage,
    classify_weight,
    find_groups,
    find_prunable,
    group_kinds,
)
from srnet.pruning.config import MethodParams, PruningConfig
from srnet.sparsity import FixedMask, GroupMask, Schedule, attach, original_weight
from srnet.sparsity.counting import pooled_sparsity, zero_counts
from srnet.sparsity.masks import FusedMaskForward


@dataclass(frozen=True)
class Calibration:
    """Training data for a method that decides its masks from gradients (see ``calibrates``)."""

    batches: Iterable[Mapping[str, Tensor]]
    """Training batches in a fixed order, on the model's device; the method takes what it needs."""
    backward: Callable[[nn.Module, Mapping[str, Tensor]], None]
    """Forward pass, training loss and ``backward`` on one batch (the run's objective and loss;
    no penalty, no optimizer step): gradients accumulate into whatever requires them."""


class PruningMethod(ABC):
    """Decides the masks of ``targets`` (the prunable weights selected by the config)."""

    name: ClassVar[str] = ""
    params_model: ClassVar[type[MethodParams]] = MethodParams
    """The method's own settings: the ``pruning.params`` section of a recipe that names it."""
    groups_ok: ClassVar[bool] = True
    """Whether the method can gate heads/neurons (a structured ``granularity``)."""
    masks_weights: ClassVar[bool] = True
    """Whether the method puts masks on the model at all (``dense`` does not): callers ask this,
    never the method's name."""
    params: MethodParams
    """``cfg.params``: an instance of :attr:`params_model` (subclasses narrow the type)."""

    def __init__(self, cfg: PruningConfig, seed: int = 0) -> None:
        self.cfg = cfg
        self.params = cfg.params
        self.seed = seed
        self.targets: list[Any] = []
        """:class:`PrunableWeight` s, or :class:`MaskGroup` s for a structured granularity."""
        self.total_steps = 0
        self.step = 0
        self._masks: list[FixedMask] = []
        self.fused: FusedMaskForward | None = None
        self.calibrated = False

    @classmethod
    def from_config(cls, cfg: PruningConfig, seed: int = 0) -> PruningMethod:
        return cls(cfg, seed)

    @classmethod
    def check_config(cls, cfg: PruningConfig) -> None:
        """Checks of the method's params against the shared fields, when a config naming the
        method is validated; ``ValueError`` with a one-line message."""
        return None

    @classmethod
    def check_inputs(cls, cfg: PruningConfig) -> None:
        """Fail (``SrnetError``) before a run loads anything when the method's input files are
        missing."""
        return None

    # -- lifecycle -------------------------------------------------------------------------
    def prepare(self, model: nn.Module, total_steps: int) -> None:
        """Select the targets, attach the mask parametrizations and set ``requires_grad``."""
        if self.targets:
            raise SrnetError(f"pruning method '{self.name}' is already prepared")
        if total_steps < 1:
            raise SrnetError(f"total_steps must be >= 1, got {total_steps}")
        if self.structured and not self.groups_ok:
            raise SrnetError(
                f"pruning method '{self.name}' does not support granularity '{self.granularity}' "
                f"(only 'unstructured')"
            )
        self.total_steps = total_steps
        self.targets = self.select(model)
        self.setup(model)
        if not self.structured and FusedMaskForward.fusable(self._masks):  # fused training step
            self.fused = FusedMaskForward(model, [t.module for t in self.targets], self._masks)

    def check(self, model: nn.Module) -> None:
        """Read and check the method's own inputs (files) against ``model`` before a run starts;
        the selection too (a family whose encoder cannot be masked in full is refused here)."""
        self.select(model)

    @property
    def granularity(self) -> str:
        """What one mask entry removes: ``cfg.granularity`` (``fixed``: its mask file's)."""
        return self.cfg.granularity

    @property
    def calibrates(self) -> bool:
        """Whether :meth:`calibrate` must run after ``prepare`` (masks from training gradients)."""
        return False

    @property
    def needs_data(self) -> bool:
        """Whether the mask needs training data: learned masks always, one-shot ones only when
        they calibrate."""
        return True

    def calibrate(self, model: nn.Module, data: Calibration) -> None:
        """Decide the masks from training gradients; called once after ``prepare`` (and the
        objective's setup) by whoever trains or prunes, when :attr:`calibrates`."""
        if not self.calibrates:
            raise SrnetError(f"pruning method '{self.name}' does not calibrate on training batches")
        if not self.targets:
            raise SrnetError(f"pruning method '{self.name}' must be prepared before it is calibrated")
        if self.calibrated:
            raise SrnetError(f"pruning method '{self.name}' is already calibrated")
        self.calibrate_masks(model, data)
        self.calibrated = True

    def calibrate_masks(self, model: nn.Module, data: Calibration) -> None:
        """Set the masks from ``data`` (methods that calibrate implement it)."""
        raise NotImplementedError

    @property
    def structured(self) -> bool:
        """Whether the masks gate whole heads/neurons (``MaskGroup`` targets)."""
        return self.granularity != "unstructured"

    def select(self, model: nn.Module) -> list[PrunableWeight] | list[MaskGroup]:
        """The weights (``cfg.roles``) or groups (``cfg.granularity``) to mask, by ``cfg.pattern``."""
        if self.structured:
            return find_groups(model, group_kinds(self.granularity), self.cfg.pattern)
        if self.cfg.pattern is None:  # a pattern selects part of the encoder on purpose
            check_encoder_coverage(model, self.cfg.roles)
        return find_prunable(model, self.cfg.roles, self.cfg.pattern)

    @abstractmethod
    def setup(self, model: nn.Module) -> None:
        """Attach the masks to ``self.targets`` (with :meth:`attach_masks`)."""

    @abstractmethod
    def current_sparsity(self, step: int) -> float:
        """The target sparsity at ``step``."""

    def attach_masks(self, masks: list[FixedMask]) -> None:
        """Attach one mask per target; a group's gate is broadcast onto each of its members."""
        for target, mask in zip(self.targets, masks, strict=True):
            if isinstance(target, MaskGroup):
                for member in target.members:
                    attach(member.module, GroupMask(mask, member.axis, member.width, member.parts))
            else:
                attach(target.module, mask)
        self._masks = masks

    def mask_budget(self) -> dict[str, Any] | None:
        """How far the mask could move: the resolved mask lr, its rule and reach (``metrics.json``'s
        ``mask_budget``); None for methods without that notion."""
        return None

    def mask_group(self) -> dict[str, Any] | None:
        """The optimizer group of the trainable mask parameters, at their resolved lr and without
        weight decay; None when the method trains none.  Both trainers take it as it is and put
        every other trainable parameter in their own weight groups."""
        return None

    def penalty(self) -> Tensor | None:
        """A term to add to the loss (``None`` when the method has none)."""
        return None

    def on_step(self, step: int) -> bool:
        """Called after optimizer step ``step``; returns True when weights were rewound."""
        self.step = step
        return False

    def freeze(self) -> None:
        """Make the applied mask exact and deterministic at the current target.

        Methods whose mask is always exact (one-shot, IMP) have nothing to do.
        """
        return None

    # -- results ---------------------------------------------------------------------------
    def masks(self) -> dict[str, Tensor]:
        """The applied binary masks keyed by module name (group gates keyed by group name)."""
        if self.calibrates and not self.calibrated:
            raise RuntimeError(f"internal error: pruning method '{self.name}' was never calibrated")
        return self.applied_masks()

    def applied_masks(self) -> dict[str, Tensor]:
        """:meth:`masks` without the calibration guard (for a method that is calibrating)."""
        return {t.name: m.binary_mask() for t, m in zip(self.targets, self._masks, strict=True)}

    def start_masks(self) -> dict[str, Tensor] | None:
        """The mask the method started from at its final target, for methods that learn their
        mask (to measure how far training moved it); None for the others."""
        return None

    def scores(self) -> dict[str, Tensor] | None:
        """Learned scores a ticket can be drawn from, keyed like :meth:`masks` (per weight, or per
        head/neuron for a structured granularity); None for methods without any."""
        return None

    def sparsity_report(self) -> dict[str, Any]:
        """Overall and per-matrix sparsity of the applied masks, and the current target."""
        counts = zero_counts(self.masks())
        return {
            "overall": pooled_sparsity(counts.values()),
            "target": self.current_sparsity(self.step),
            "per_matrix": {n: z / total for n, (z, total) in counts.items()},
        }

    def state_dict(self) -> dict[str, Any]:
        """State outside ``model.state_dict()`` needed to resume exactly."""
        return {"method": self.name, "step": self.step}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("method") != self.name:
            raise SrnetError(f"pruning state is for method '{state.get('method')}', not '{self.name}'")
        self.step = int(state["step"])


def freeze_backbone(model: nn.Module, *, keep_classifier: bool = True) -> None:
    """Freeze every parameter except (``keep_classifier``) the task classifier's; an objective
    that trains a head of its own (the MLM head) unfreezes it in its ``setup``."""
    trainable = {
        id(p)
        for name, module in model.named_modules()
        if keep_classifier and classify_weight(name)[0] == "classifier"
        for p in module.parameters()
    }
    for p in model.parameters():
        p.requires_grad_(id(p) in trainable)


class OneShotParams(MethodParams):
    """Settings of every one-shot method (dense, omp, random, fixed)."""

    freeze_weights: bool = Field(
        False,
        description="Freeze every backbone weight so only the task classifier (or, for the text "
        "task, the MLM head) trains: a probe of the subnetwork.  (mask_train and l0 always freeze "
        "them; imp cannot: it trains what it prunes.)",
    )


class OneShotMethod(PruningMethod):
    """Decides the mask once in ``prepare`` (or, when it ``calibrates``, in ``calibrate``: all
    ones until then); the weights stay trainable unless ``params.freeze_weights``."""

    params_model = OneShotParams
    params: OneShotParams

    @property
    def needs_data(self) -> bool:
        return self.calibrates

    def setup(self, model: nn.Module) -> None:
        if self.calibrates:  # gates xi = 1 until calibrate decides
            keeps = [torch.ones(t.shape, dtype=torch.bool) for t in self.targets]
        else:
            keeps = self.decide()
        self.attach_masks(
            [FixedMask(k, original_weight(t.module)) for t, k in zip(self.targets, keeps, strict=True)]
        )
        if self.params.freeze_weights:
            freeze_backbone(model)

    @abstractmethod
    def decide(self) -> list[Tensor]:
        """One boolean keep mask per target (not called for a method that calibrates)."""

    def current_sparsity(self, step: int) -> float:
        return self.cfg.sparsity


class LearnedMaskParams(MethodParams):
    """Settings of every method that learns mask parameters (mask_train, l0)."""

    mask_lr: float = Field(
        5e-5, gt=0.0, description="Learning rate of the mask parameters (Win-win: 5e-5)."
    )
    train_classifier: bool = Field(False, description="Also train the classifier weights.")

    auto_lr: ClassVar[bool] = False
    """Whether ``mask_lr: auto`` is defined for the method (mask_train's calibrated rule)."""

    @field_validator("mask_lr", mode="before")
    @classmethod
    def _auto_only_where_calibrated(cls, value: Any) -> Any:
        if value == "auto" and not cls.auto_lr:
            raise ValueError("mask_lr: auto is calibrated for mask_train's scores only; give this "
                             "method a number")
        return value


class LearnedMaskMethod(PruningMethod):
    """Trains mask parameters on frozen weights; the target follows ``cfg.schedule``."""

    params_model = LearnedMaskParams
    params: LearnedMaskParams
    schedule: Schedule

    @property
    def mask_lr(self) -> float:
        """The mask parameters' learning rate as resolved (a number, or ``auto``'s rule)."""
        return float(self.params.mask_lr)

    def mask_group(self) -> dict[str, Any] | None:
        params = [p for m in self._masks for p in m.parameters() if p.requires_grad]
        if not params:
            return None
        return {"params": params, "lr": self.mask_lr, "weight_decay": 0.0, "name": "mask"}

    def setup(self, model: nn.Module) -> None:
        self.schedule = self.cfg.schedule.build(self.cfg.sparsity, self.total_steps)
        self.freeze_weights(model)
        self.attach_masks(self.make_masks())
        if not self.calibrates:  # a method that calibrates starts once its parameters are set
            self.start()

    def start(self) -> None:
        """Record the initial parameters' mask at the final target (:meth:`start_masks`), then
        apply the mask of the current target."""
        self.rerank(self.cfg.sparsity)
        self._start = {name: mask.cpu() for name, mask in self.applied_masks().items()}
        self.freeze()

    def start_masks(self) -> dict[str, Tensor]:
        """The top-k of the *initial* mask parameters at the final target sparsity (hard init:
        the OMP mask; L0's uniform init: its tie-broken ranking)."""
        return self._start

    @property
    def start_name(self) -> str:
        """What :meth:`start_masks` is, in words ("its OMP start")."""
        return "its initial ranking"

    @property
    def trains_weights(self) -> bool:
        """Whether all weights are trained along with the mask."""
        return False

    def freeze_weights(self, model: nn.Module) -> None:
        """Freeze the weights unless trained; ``params.train_classifier`` keeps the head trainable."""
        if self.trains_weights:
            return
        freeze_backbone(model, keep_classifier=self.params.train_classifier)

    @abstractmethod
    def make_masks(self) -> list[FixedMask]:
        """One mask parametrization per target."""

    def current_sparsity(self, step: int) -> float:
        return self.schedule(step)

    def freeze(self) -> None:
        self.rerank(self.current_sparsity(self.step))

    @abstractmethod
    def rerank(self, sparsity: float) -> None:
        """Apply the exact top-k of the mask parameters at ``sparsity``."""
