"""Core data types shared by every task: examples, label spaces and evaluation sets."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Example:
    """One labelled text (pair).

    ``label`` is an index into the label names of the split the example belongs to
    (the task's labels for train/dev, the challenge set's own labels for challenge sets).
    ``meta`` carries string annotations such as HANS ``heuristic``/``subcase`` or MNLI ``genre``.
    """

    id: str
    text_a: str
    text_b: str | None
    label: int
    meta: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LabelSpace:
    """How a split's gold labels relate to the model's output classes.

    ``names`` are the split's label names.  ``from_model`` maps each model class name to one
    of ``names`` (e.g. HANS: neutral -> non-entailment) or is ``None`` when the model classes
    are the split's labels.  Model classes missing from ``from_model`` are *excluded* at
    prediction time (FEVER-Symmetric has no not-enough-info class, so the model's argmax is
    taken over the remaining classes).
    """

    names: tuple[str, ...]
    from_model: dict[str, str] | None = None

    def index(self, name: str) -> int:
        return self.names.index(name)
