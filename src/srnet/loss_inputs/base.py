"""What a loss input is, its registry, and the two things done with every input: read its file
once for the training examples (every value checked then, before a run folder exists), and check
its batch tensor on every loss call."""

from __future__ import annotations

import logging
import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch
from torch import Tensor

from srnet.errors import SrnetError
from srnet.io import first_line
from srnet.registry import Registry

log = logging.getLogger("srnet.loss_inputs")


@dataclass(frozen=True)
class ReadContext:
    """What a reader may need besides the file: the training examples' ids (rows are returned in
    this order), the task's label names (None: unknown), its class count and name (None: unknown) and
    the examples' gold labels."""

    ids: Sequence[str]
    labels: Sequence[str] | None
    num_classes: int
    task: str | None = None
    golds: Sequence[str] | None = None
    """The training examples' gold label names, in the order of ``ids`` (None: unknown)."""


class LossInput(ABC):
    """A per-example array a loss (or an objective) reads from the batch under ``name``.

    ``source`` is the key that gives its file: a ``loss`` recipe field of the same name for the
    built-in inputs, ``loss.inputs.<source>`` for a plug-in's; the ``SrnetTrainer`` keyword the
    same way.  ``per_class``: the batch tensor is [B, C] (else [B]).
    """

    name: ClassVar[str]
    source: ClassVar[str]
    what: ClassVar[str]
    """What the file is, for the one-line error when it is not given."""
    per_class: ClassVar[bool] = True

    @abstractmethod
    def read(self, path: str | Path, context: ReadContext) -> np.ndarray:
        """The array [N, C] or [N] for ``context.ids`` from ``path``; one-line SrnetError otherwise."""

    @abstractmethod
    def check(self, owner: str, value: Tensor) -> None:
        """One-line SrnetError, starting with ``owner`` and naming the first bad row, if a tensor
        (float, finite, of the right shape) holds values this input never has.  Called on every
        batch and once on the whole file as read (``owner``: the file; rows: the training examples)."""

    def write_dummy(self, path: Path, context: ReadContext, rng: np.random.Generator) -> Path:
        """Write a file of random valid values for ``context``'s examples to ``path`` and return it
        (the test matrix runs every registered input from one)."""
        raise NotImplementedError(f"loss input '{self.name}' writes no dummy file (LossInput.write_dummy)")


LOSS_INPUTS: Registry[type[LossInput]] = Registry("loss input")
register_input = LOSS_INPUTS.register
"""Class decorator that registers a loss input under its batch key."""


def loss_input(name: str) -> LossInput:
    """The registered input ``name``; SrnetError naming the known ones otherwise."""
    return LOSS_INPUTS.get(name)()


def input_sources() -> list[str]:
    """Every registered input's ``source`` key, sorted."""
    return sorted(cls.source for cls in LOSS_INPUTS.values())


def check_plugin_sources(given: Iterable[str], built_in: Collection[str],
                         spell: Callable[[str], str]) -> None:
    """Each of ``given`` (the sources of a plug-in inputs section) is read by a registered input
    and is not one of ``built_in`` (given by its own key, ``spell(source)``); one line otherwise."""
    for source in given:
        if source in built_in:
            raise SrnetError(f"'{source}' is a built-in input's file: give it as {spell(source)}")
        if source not in input_sources():
            known = ", ".join(input_sources())
            raise SrnetError(f"no registered loss input reads '{source}' (known: {known}; "
                             "a plug-in's input is registered when its module is imported)")


def check_batch(owner: str, requires: Collection[str], logits_shape: Sequence[int],
                batch: Mapping[str, Tensor]) -> None:
    """Each input in ``requires`` is in ``batch`` with the shape of the logits [B, C] (or [B])
    and passes its input's check; one-line SrnetError naming ``owner`` otherwise."""
    size, classes = logits_shape
    for key in sorted(requires):
        if key not in batch:
            raise SrnetError(f"{owner} needs the batch extra '{key}'; got {sorted(batch)}")
        spec = loss_input(key)
        value = batch[key]
        expected = [size, classes] if spec.per_class else [size]
        if list(value.shape) != expected:
            raise SrnetError(f"{owner}: extra '{key}' has shape {list(value.shape)}; expected {expected}")
        spec.check(owner, value.detach().float())


def read_inputs(who: Mapping[str, str], files: Mapping[str, str | Path | None], context: ReadContext,
                spell: Callable[[str], str]) -> dict[str, np.ndarray]:
    """The arrays of the inputs ``who`` names (input -> what needs it, e.g. ``"loss 'poe'"``),
    each read from ``files[<its source>]`` and checked (:func:`_checked_array`); a missing file is
    one line naming how to give it (``spell(source)``, e.g. ``"loss.teacher"``)."""
    arrays: dict[str, np.ndarray] = {}
    for key in sorted(who):
        spec = loss_input(key)
        path = files.get(spec.source)
        if not path:
            raise SrnetError(f"{who[key]} needs {spell(spec.source)} {spec.what}")
        arrays[key] = _checked_array(key, path, _read(key, spec, path, context), context)
    return arrays


def note_unread(needed: Collection[str], files: Mapping[str, str | Path | None], readers: str,
                spell: Callable[[str], str]) -> None:
    """One warning line for each file given in ``files`` that no input of ``needed`` reads (e.g. a
    teacher for a loss without distillation; a sweep may give one to every grid point)."""
    read = {loss_input(key).source for key in needed}
    for source, path in sorted(files.items()):
        if path and source not in read:
            missing = "" if Path(path).exists() else " (and it does not exist)"
            log.warning("%s is given as %s, but %s reads no %s file: ignored%s", path, spell(source),
                        readers, source, missing)


def _read(key: str, spec: LossInput, path: str | Path, context: ReadContext) -> np.ndarray:
    """``spec.read`` as an array; an error of a plug-in's reader becomes one line naming the file."""
    try:
        return np.asarray(spec.read(path, context))
    except SrnetError:
        raise
    except Exception as exc:  # a plug-in reader's float('abc'), KeyError, a ragged list...
        reason = f"{type(exc).__name__}: {first_line(exc, 200)}"
        raise SrnetError(f"{path}: unreadable {key} file ({reason})") from None


def _checked_array(key: str, path: str | Path, array: np.ndarray, context: ReadContext) -> np.ndarray:
    """``array`` as read from ``path`` for ``key``: of shape [N, C] (or [N]), finite numbers, and
    passing the input's own check; one line naming the file and the first bad row otherwise."""
    spec = loss_input(key)
    expected = [len(context.ids), context.num_classes] if spec.per_class else [len(context.ids)]
    if list(array.shape) != expected:
        raise SrnetError(f"{path}: {key} read as shape {list(array.shape)}; expected {expected}")
    row = _first_non_finite(array.reshape(len(array), -1))
    if row is not None:
        raise SrnetError(f"{path}: {key} of example id '{context.ids[row]}' (row {row}) is "
                         f"{np.asarray(array[row]).tolist()!r}; expected finite numbers")
    values = array.astype(np.float32)
    spec.check(str(path), torch.from_numpy(values))
    return values


def _first_non_finite(rows: np.ndarray) -> int | None:
    """The first row holding something other than a finite real number (text, None, NaN, inf)."""
    if rows.dtype == object:
        return next((n for n, row in enumerate(rows) if not all(map(_is_finite_real, row))), None)
    if not np.issubdtype(rows.dtype, np.integer) and not np.issubdtype(rows.dtype, np.floating):
        return 0  # text, booleans, complex numbers: no row is a number
    bad = ~np.isfinite(rows).all(axis=1)
    return int(np.flatnonzero(bad)[0]) if bad.any() else None


def _is_finite_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def batch_inputs(batch: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """The registered inputs present in ``batch`` (bias log-probs, teacher probs, difficulty, ...)."""
    return {key: batch[key] for key in LOSS_INPUTS if key in batch}
