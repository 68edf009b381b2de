"""Per-example files keyed by example id, read for any reader (bias files, loss inputs, plug-ins).

A JSON Lines file's rows are read once (:func:`read_jsonl_rows`: a bad line is one error naming
``file:line``), mapped id -> value (:func:`rows_by_id`: duplicate ids refused), checked to cover
the examples (:func:`require_ids`) and aligned to their order (:func:`align_rows`).  A model's
``predictions/<split>.jsonl`` rows ``{"id", "gold", "pred", "probs"}`` give ``probs`` over the model
classes (:func:`prediction_probs`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from srnet.errors import SrnetError

TOLERANCE = 1e-3
"""How far a row of probabilities may sum from 1."""


def holds_bool(value: Any) -> bool:
    """Whether ``value`` is a boolean or a (nested) list or array holding one: JSON ``true`` reads
    as Python's ``True``, an ``int``, so NumPy would take it for the number 1."""
    if isinstance(value, bool | np.bool_):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype == np.bool_ or (value.dtype == object and any(map(holds_bool, value.flat)))
    return isinstance(value, list | tuple) and any(map(holds_bool, value))


def read_jsonl_rows(path: Path, numbers: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The JSON objects of a JSON Lines file; bad lines are errors naming file:line, as is a
    boolean in any of the ``numbers`` fields (which hold numbers or lists of them)."""
    rows = []
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise SrnetError(f"{path}:{lineno}: not valid UTF-8 text") from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (ValueError, RecursionError) as exc:  # JSONDecodeError, over-long ints, nesting
                reason = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
                raise SrnetError(f"{path}:{lineno}: not valid JSON ({reason})") from None
            if not isinstance(row, dict):
                raise SrnetError(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
            field = next((k for k in numbers if holds_bool(row.get(k))), None)
            if field is not None:
                raise SrnetError(f"{path}:{lineno}: '{field}' holds a boolean; expected numbers")
            rows.append(row)
    return rows


def rows_by_id(rows: list[dict[str, Any]], path: Path, *keys: str) -> dict[str, Any]:
    """id -> the first of ``keys`` present in each row; duplicate ids are errors."""
    mapping: dict[str, Any] = {}
    for n, row in enumerate(rows, start=1):
        key = next((k for k in keys if k in row), None)
        if "id" not in row or key is None:
            raise SrnetError(f"{path}: row {n} needs 'id' and one of {list(keys)}")
        ex_id = str(row["id"])
        if ex_id in mapping:
            raise SrnetError(f"{path}: id '{ex_id}' appears twice")
        mapping[ex_id] = row[key]
    return mapping


def require_ids(mapping: Mapping[str, Any], example_ids: Sequence[str], path: Path, what: str) -> None:
    """SrnetError naming the first example id that ``mapping`` lacks, if any."""
    missing = [i for i in example_ids if str(i) not in mapping]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise SrnetError(f"{path}: no {what} for example id '{missing[0]}'{more}")


def align_rows(
    mapping: Mapping[str, Any], example_ids: Sequence[str], num_classes: int, path: Path
) -> np.ndarray:
    """Rows of ``mapping`` in the order of ``example_ids`` as [N, C] floats."""
    require_ids(mapping, example_ids, path, "prediction")
    out = np.empty((len(example_ids), num_classes), dtype=np.float64)
    for n, ex_id in enumerate(example_ids):
        if holds_bool(mapping[str(ex_id)]):
            raise SrnetError(f"{path}: row for id '{ex_id}' holds a boolean; expected numbers")
        try:
            row = np.asarray(mapping[str(ex_id)], dtype=np.float64).reshape(-1)
        except (TypeError, ValueError) as exc:
            raise SrnetError(f"{path}: row for id '{ex_id}' is not a list of numbers") from exc
        if row.shape[0] != num_classes:
            raise SrnetError(
                f"{path}: row for id '{ex_id}' has {row.shape[0]} classes; expected {num_classes}"
            )
        out[n] = row
    return out


def is_probs(values: np.ndarray) -> np.ndarray:
    """Per row: every value in [0, 1] and the row sums to 1 within ``TOLERANCE``."""
    in_range = ((values >= 0) & (values <= 1)).all(axis=1)
    return in_range & (np.abs(values.sum(axis=1) - 1) <= TOLERANCE)


def reject_row(
    values: np.ndarray, bad: np.ndarray, example_ids: Sequence[str], path: Path, expected: str
) -> None:
    """SrnetError naming the first ``bad`` row of ``values`` by its example id and sum."""
    n = int(np.flatnonzero(bad)[0])
    raise SrnetError(f"{path}: row for id '{example_ids[n]}' sums to {values[n].sum():.4g}; {expected}")


def read_prediction_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a ``predictions/<split>.jsonl`` file (one line if it does not exist)."""
    path = Path(path)
    if not path.is_file():
        raise SrnetError(f"prediction file {path} does not exist")
    return read_jsonl_rows(path, ("probs",))


def prediction_probs(
    rows: list[dict[str, Any]], path: Path, example_ids: Sequence[str], num_classes: int | None = None
) -> np.ndarray:
    """``probs`` [N, C] of a predictions file's ``rows`` aligned to ``example_ids`` (float32).

    ``num_classes`` None takes the width of the file's first row.
    """
    mapping = rows_by_id(rows, path, "probs")
    if num_classes is None:
        num_classes = len(next(iter(mapping.values()), []))
    probs = align_rows(mapping, example_ids, num_classes, path)
    bad = ~is_probs(probs)
    if bad.any():
        reject_row(probs, bad, example_ids, path, "expected probabilities")
    return probs.astype(np.float32)


def read_prediction_probs(
    path: str | Path, example_ids: Sequence[str], num_classes: int | None = None
) -> np.ndarray:
    """``probs`` [N, C] of a ``predictions/<split>.jsonl`` file aligned to ``example_ids``."""
    return prediction_probs(read_prediction_rows(path), Path(path), example_ids, num_classes)
