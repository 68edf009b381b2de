"""Training losses behind one registry, one module per loss: ``ce``, ``poe``, ``reweight``,
``conf_reg``, ``rmc`` (the interface and shared helpers: :mod:`srnet.losses.base`).

A loss maps ``(logits [B, C], labels [B], extras, progress) -> scalar``.  ``extras`` holds the
per-example batch tensors a loss declares in ``requires``: registered loss inputs
(:mod:`srnet.loss_inputs`: ``bias_log_probs`` [B, C], ``teacher_probs`` [B, C], ``difficulty``
[B]), each checked on every call by its input's check; a bad one is a one-line ``SrnetError``.

``progress`` is the fraction of training done, in [0, 1] (used by annealing).

Adding a loss is one module holding one class and its ``@register_loss("name")`` line (a
built-in one is also imported below)::

    @register_loss("mine")
    class Mine(Loss):
        params_model = MineParams          # pydantic model of its parameters
        requires = frozenset({BIAS})       # extras it needs
        def compute(self, logits, labels, extras, progress): ...
"""

from srnet.losses import ce, conf_reg, poe, reweight, rmc  # noqa: F401  (each registers its loss)
from srnet.losses.base import (
    LOSSES,
    AnnealParams,
    Loss,
    NoParams,
    anneal,
    build_loss,
    register_loss,
    soft_cross_entropy,
)
from srnet.losses.rmc import RMCParams

__all__ = ["LOSSES", "AnnealParams", "Loss", "NoParams", "RMCParams", "anneal", "build_loss", "register_loss",
           "soft_cross_entropy"]
