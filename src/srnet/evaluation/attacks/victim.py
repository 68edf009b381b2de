"""The attacked model as a query oracle: batched, padded to each batch's longest, cached, counted."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from srnet.evaluation.predict import softmax
from srnet.training.data import model_inputs

Pair = tuple[str, str | None]


class Victim:
    """Label probabilities of text (pairs), one forward pass per ``batch_size`` uncached texts.

    ``queries`` counts every text asked for, cached or not (TextAttack's #Query); ``evaluated``
    counts the texts the model actually ran on.  ``collapse`` maps model-class probabilities to
    the split's labels (identity for ID splits).  ``pad_to`` pads every batch to a fixed length
    (TextAttack's stock wrapper pads to 512; used only by the benchmark's baseline).
    """

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer,
        max_length: int,
        *,
        collapse: Callable[[np.ndarray], np.ndarray] | None = None,
        batch_size: int = 64,
        cache: bool = True,
        pad_to: int | None = None,
    ) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.collapse = collapse or (lambda p: p)
        self.batch_size = batch_size
        self.pad_to = pad_to
        self.device = next(model.parameters()).device
        self._cache: dict[Pair, np.ndarray] | None = {} if cache else None
        self.queries = 0
        self.evaluated = 0

    def probs(self, pairs: Sequence[Pair]) -> np.ndarray:
        """Probabilities [len(pairs), labels] of the split's labels."""
        self.queries += len(pairs)
        cache = self._cache if self._cache is not None else {}
        todo = list(dict.fromkeys(p for p in pairs if p not in cache))
        for start in range(0, len(todo), self.batch_size):
            chunk = todo[start : start + self.batch_size]
            for pair, row in zip(chunk, self._run(chunk), strict=True):
                cache[pair] = row
        self.evaluated += len(todo)
        out = np.stack([cache[p] for p in pairs])
        if self._cache is None:
            cache.clear()
        return out

    @torch.no_grad()
    def _run(self, pairs: list[Pair]) -> np.ndarray:
        firsts = [a for a, _ in pairs]
        seconds = [b for _, b in pairs]
        padding = {"padding": "max_length", "max_length": self.pad_to} if self.pad_to else {
            "padding": True, "max_length": self.max_length}
        args = (firsts,) if seconds[0] is None else (firsts, seconds)
        encoded = self.tokenizer(*args, truncation=True, return_tensors="pt", **padding)
        inputs = {k: v.to(self.device) for k, v in model_inputs(self.model, encoded).items()}
        logits = self.model(**inputs).logits.float().cpu().numpy()
        return self.collapse(softmax(logits))
