"""Training objectives behind one registry: ``standard`` and ``freelb`` (labelled tasks);
``kd`` (the task loss plus distillation from a dense teacher, :mod:`.kd`); ``mlm``, ``distill`` and
``mlm+distill`` (task ``text``, :mod:`.pretraining`).

Adding an objective is one module with its class and its registry line, imported here::

    @register_objective("mine")
    class Mine(Objective):
        params_model = MineParams          # pydantic model of its parameters (with descriptions)
        def step(self, model, batch, loss, *, progress, penalty, backward): ...
"""

from srnet.training.objectives import freelb, kd, pretraining, standard  # noqa: F401  (registration)
from srnet.training.objectives.base import (
    OBJECTIVES,
    Objective,
    available_objectives,
    build_objective,
    loss_backward,
    register_objective,
    train_step,
    with_penalty,
)
from srnet.training.objectives.freelb import FreeLB, FreeLBParams
from srnet.training.objectives.pretraining import Pretraining
from srnet.training.objectives.standard import Standard


def text_objectives() -> list[str]:
    """The registered objectives that train on raw text (task ``text``), sorted."""
    return [name for name in OBJECTIVES.names() if issubclass(OBJECTIVES[name], Pretraining)]

__all__ = [
    "OBJECTIVES",
    "FreeLB",
    "FreeLBParams",
    "Objective",
    "Pretraining",
    "Standard",
    "available_objectives",
    "build_objective",
    "loss_backward",
    "register_objective",
    "text_objectives",
    "train_step",
    "with_penalty",
]
