"""Bias-prediction files: srnet's own format and the formats others ship.

**srnet bias format** (``.jsonl``, written by :func:`write_bias_predictions`, atomically)::

    {"srnet_bias": 1, "labels": ["entailment", ...], "feature": "overlap", "split": "train"}
    {"id": "ex0", "log_probs": [-0.11, -2.9, -2.6]}
    ...

The first row is the header (format version 1, the task's label names in class order, the
feature set, the split and optionally the bias model's ``accuracy`` on that split); every
further row holds one example's natural-log probabilities in the header's label order.

**Also read** by :func:`load_bias_log_probs`, chosen by file suffix:

* ``.npy``: a row-aligned array [N, C] in the order of the examples given;
* ``.pkl`` / ``.pickle``: a dict keyed by example id (read data-only: lists, numbers, strings and
  NumPy arrays; a pickle naming anything else is refused, so it cannot run code);
* ``.json``: a dict id -> list;
* ``.jsonl`` without the header: rows ``{"id", "log_probs"}`` or ``{"id", "probs"}`` (so a
  weak model's ``predictions/<split>.jsonl`` works as a bias file).

Values may be probabilities (each row in [0, 1], summing to 1 within 1e-3) or
log-probabilities (each row's logsumexp is 0 within 1e-3); this is detected row by row.
Probabilities are floored at ``PROB_FLOOR`` and renormalised so no log-probability is -inf.
The rows are read by id with :mod:`srnet.by_id`.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import logsumexp

from srnet.by_id import TOLERANCE, align_rows, is_probs, read_jsonl_rows, reject_row, rows_by_id
from srnet.errors import SrnetError
from srnet.io import atomic_write_jsonl

FORMAT_VERSION = 1
PROB_FLOOR = 1e-12


def safe_log(probs: np.ndarray) -> np.ndarray:
    """Natural-log probabilities of rows of probabilities, floored at ``PROB_FLOOR``."""
    floored = np.maximum(np.asarray(probs, dtype=np.float64), PROB_FLOOR)
    return np.log(floored / floored.sum(axis=1, keepdims=True))


def write_bias_predictions(
    path: str | Path,
    ids: Sequence[str],
    log_probs: np.ndarray,
    *,
    labels: Sequence[str],
    feature: str,
    split: str,
    accuracy: float | None = None,
) -> Path:
    """Write one split's bias log-probabilities in the srnet format (atomically)."""
    log_probs = np.asarray(log_probs, dtype=np.float64)
    if log_probs.shape != (len(ids), len(labels)):
        raise SrnetError(
            f"bias predictions for {path} have shape {list(log_probs.shape)}; "
            f"expected [{len(ids)}, {len(labels)}] (examples x labels)"
        )
    header: dict[str, Any] = {
        "srnet_bias": FORMAT_VERSION,
        "labels": list(labels),
        "feature": feature,
        "split": split,
    }
    if accuracy is not None:
        header["accuracy"] = round(float(accuracy), 6)
    rows = (
        {"id": i, "log_probs": [round(float(v), 6) for v in row]}
        for i, row in zip(ids, log_probs, strict=True)
    )
    return atomic_write_jsonl(path, [header, *rows])


def read_bias_header(path: str | Path) -> dict[str, Any]:
    """The header row of an srnet bias file."""
    rows = read_jsonl_rows(Path(path))
    if not rows or "srnet_bias" not in rows[0]:
        raise SrnetError(f"{path}: no srnet bias header row (first row needs 'srnet_bias')")
    return rows[0]


def load_bias_log_probs(
    path: str | Path,
    example_ids: Sequence[str],
    num_classes: int,
    labels: Sequence[str] | None = None,
) -> np.ndarray:
    """Bias log-probabilities [N, C] aligned to ``example_ids``, from any supported format.

    ``labels`` (the task's label names), when given, must equal an srnet header's labels.
    """
    path = Path(path)
    if not path.is_file():
        raise SrnetError(f"bias prediction file {path} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        values = _load_npy(path, len(example_ids), num_classes)
        return _to_log_probs(values, example_ids, path)
    if suffix in (".pkl", ".pickle"):
        mapping = _load_pickle(path)
    elif suffix == ".json":
        mapping = _load_json(path)
    elif suffix == ".jsonl":
        mapping = _load_jsonl(path, num_classes, labels)
    else:
        raise SrnetError(f"{path}: unknown bias file type '{suffix}'; use .jsonl, .npy, .pkl or .json")
    return _to_log_probs(align_rows(mapping, example_ids, num_classes, path), example_ids, path)


def _load_jsonl(path: Path, num_classes: int, labels: Sequence[str] | None) -> dict[str, Any]:
    rows = read_jsonl_rows(path, ("log_probs", "probs"))
    if rows and "srnet_bias" in rows[0]:
        header, rows = rows[0], rows[1:]
        if header["srnet_bias"] != FORMAT_VERSION:
            raise SrnetError(f"{path}: srnet_bias format {header['srnet_bias']}; expected {FORMAT_VERSION}")
        names = header.get("labels", [])
        if not isinstance(names, list) or len(names) != num_classes:
            raise SrnetError(
                f"{path}: header has {len(names)} labels {names}; expected {num_classes} classes"
            )
        if labels is not None and names != list(labels):
            raise SrnetError(f"{path}: labels {names} differ from the task's {list(labels)}")
    return rows_by_id(rows, path, "log_probs", "probs")


def _load_npy(path: Path, num_rows: int, num_classes: int) -> np.ndarray:
    try:
        values = np.load(path, allow_pickle=False)
    except (ValueError, EOFError, OSError) as exc:
        raise SrnetError(f"{path}: not a numeric .npy array ({exc})") from None
    if not isinstance(values, np.ndarray) or not np.issubdtype(values.dtype, np.number):
        raise SrnetError(f"{path}: not a numeric .npy array")
    if values.ndim != 2:
        raise SrnetError(
            f"{path}: array has shape {list(values.shape)}; expected [{num_rows}, {num_classes}]"
        )
    if values.shape[0] != num_rows:
        raise SrnetError(f"{path}: {values.shape[0]} rows; expected {num_rows} (one per example, in order)")
    if values.shape[1] != num_classes:
        raise SrnetError(f"{path}: {values.shape[1]} classes per row; expected {num_classes}")
    return values.astype(np.float64)


SAFE_PICKLE_GLOBALS = {
    ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"), ("collections", "OrderedDict"),
}
"""What a bias-prediction pickle may name: plain containers, numbers, strings and NumPy arrays.
Anything else (``os.system``, ``builtins.eval``...) is refused, so a crafted file runs no code."""


class _DataOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in SAFE_PICKLE_GLOBALS:
            raise pickle.UnpicklingError(f"it names {module}.{name}, which a file of predictions "
                                         "never needs (refused: pickles can run code)")
        return super().find_class(module, name)


def _load_pickle(path: Path) -> dict[str, Any]:
    with path.open("rb") as f:
        try:
            data = _DataOnlyUnpickler(f).load()
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, IndexError,
                TypeError, ValueError) as exc:
            raise SrnetError(f"{path}: not a readable pickle of predictions ({exc})") from None
    if not isinstance(data, Mapping):
        raise SrnetError(f"{path}: pickle holds a {type(data).__name__}; expected a dict keyed by example id")
    return {str(k): v for k, v in data.items()}


def _load_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise SrnetError(f"{path}: not valid UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise SrnetError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    except (ValueError, RecursionError) as exc:
        raise SrnetError(f"{path}: not valid JSON ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise SrnetError(f"{path}: JSON holds a {type(data).__name__}; expected an object id -> list")
    return data


def _is_log_probs(values: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        total = logsumexp(values, axis=1)
    return ~np.isnan(values).any(axis=1) & (np.abs(total) <= TOLERANCE)


def _to_log_probs(values: np.ndarray, example_ids: Sequence[str], path: Path) -> np.ndarray:
    """Detect probabilities vs log-probabilities row by row; return floored log-probs [N, C]."""
    probs = is_probs(values)
    logs = _is_log_probs(values)
    bad = ~(probs | logs)
    if bad.any():
        reject_row(values, bad, example_ids, path, "expected probabilities or log-probabilities")
    as_probs = np.where(probs[:, None], values, np.exp(np.where(logs[:, None], values, 0.0)))
    return safe_log(as_probs).astype(np.float32)
