"""The pruning verb: one place that sequences a method's lifecycle for every caller.

``attach`` = prepare (masks as parametrizations, frozen weights) -> the caller's ``setup`` (e.g.
the objective's own trainable head) -> ``calibrate`` for a method that scores on training
batches; the training loop, the ``Trainer`` integration and the one-shot verb all start here.
``prune`` is the one-shot verb: attach for one step, freeze, the exact masks (``api.prune_``,
a run without training data, TAMT's one-shot path, the bench's OMP variants).
``check_data`` is the "this method needs training data" refusal, made before any model loads.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor, nn

from srnet.errors import SrnetError
from srnet.pruning.base import Calibration, PruningMethod


def check_data(method: PruningMethod, has_training_data: bool) -> None:
    """Refuse in one line a method that needs training data (a learned mask, or one-shot scores
    from gradients) when there is none."""
    if not has_training_data and method.needs_data:
        how = " (importance 'gradient')" if method.calibrates else ""
        raise SrnetError(f"pruning method '{method.cfg.method}'{how} needs data.train to find its mask")


def attach(method: PruningMethod, model: nn.Module, steps: int, *,
           calibration: Callable[[], Calibration] | None = None,
           setup: Callable[[], None] | None = None) -> None:
    """Attach ``method``'s masks to ``model`` for ``steps`` optimizer steps; then ``setup()``
    (what the caller sets up on the masked model); then, for a method that calibrates, its
    calibration on ``calibration()`` (made only then).  A method that calibrates without a
    ``calibration`` is refused before the model is touched."""
    if method.calibrates and calibration is None:
        raise SrnetError(f"pruning method '{method.cfg.method}' scores heads/neurons on training batches: "
                         "pass batches= (a run: data.train)")
    method.prepare(model, steps)
    if setup is not None:
        setup()
    if method.calibrates:
        method.calibrate(model, calibration())


def prune(method: PruningMethod, model: nn.Module,
          calibration: Callable[[], Calibration] | None = None) -> dict[str, Tensor]:
    """One-shot: attach ``method`` to ``model`` (in place, masks stay attached), freeze, return
    the exact masks."""
    attach(method, model, 1, calibration=calibration)
    method.freeze()
    return method.masks()
