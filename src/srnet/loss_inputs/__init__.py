"""Loss inputs behind one registry: the per-example arrays a loss (or an objective) reads from the
batch, each read once from its file and aligned to the training examples by id.

Built in: ``bias_log_probs`` (:mod:`.bias_log_probs`), ``teacher_probs`` (:mod:`.teacher_probs`),
``difficulty`` (:mod:`.difficulty`).  Adding an input is one module: a :class:`LossInput` class
(its ``source`` key, reader, batch check and dummy file) and its ``@register_input("name")``
line; a loss names it in ``requires``, a recipe gives its file as ``loss.inputs.<source>`` and the
``SrnetTrainer`` as ``inputs={"<source>": path}`` (``tests/toy_input.py`` is one).
"""

from srnet.loss_inputs.base import (
    LOSS_INPUTS,
    LossInput,
    ReadContext,
    batch_inputs,
    check_batch,
    check_plugin_sources,
    input_sources,
    loss_input,
    note_unread,
    read_inputs,
    register_input,
)
from srnet.loss_inputs.bias_log_probs import BIAS, BiasLogProbs
from srnet.loss_inputs.difficulty import DIFFICULTY, Difficulty
from srnet.loss_inputs.teacher_probs import TEACHER, TeacherProbs

BUILT_IN_SOURCES: tuple[str, ...] = tuple(cls.source for cls in (BiasLogProbs, TeacherProbs, Difficulty))
"""The built-in inputs' sources: each has its own ``loss`` recipe key and ``SrnetTrainer`` keyword."""

__all__ = [
    "BIAS",
    "BUILT_IN_SOURCES",
    "DIFFICULTY",
    "LOSS_INPUTS",
    "TEACHER",
    "LossInput",
    "ReadContext",
    "batch_inputs",
    "check_batch",
    "check_plugin_sources",
    "input_sources",
    "loss_input",
    "note_unread",
    "read_inputs",
    "register_input",
]
