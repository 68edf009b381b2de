"""Core data types shared by every task: examples, label spaces and evaluation sets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from srnet.errors import SrnetError


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

    def collapse(self, probs: np.ndarray, model_labels: Sequence[str]) -> np.ndarray:
        """Model-class probabilities [N, C_model] -> this split's label probabilities [N, len(names)].

        Model classes mapped to the same label are summed; classes left out are excluded.
        """
        model_labels = list(model_labels)
        if self.from_model is None:
            if sorted(model_labels) != sorted(self.names):
                raise SrnetError(
                    f"model classes {model_labels} differ from the split's labels {list(self.names)}; "
                    "the split's label space needs a from_model map"
                )
            mapping = {name: name for name in model_labels}
        else:
            mapping = dict(self.from_model)
        for source, target in mapping.items():
            if source not in model_labels:
                raise SrnetError(f"label space maps model class '{source}', not one of {model_labels}")
            if target not in self.names:
                raise SrnetError(f"label space maps '{source}' to '{target}', not one of {list(self.names)}")
        out = np.zeros((probs.shape[0], len(self.names)), dtype=np.float64)
        for column, name in enumerate(model_labels):
            if name in mapping:
                out[:, self.index(mapping[name])] += probs[:, column]
        return out
