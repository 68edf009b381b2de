"""Sample difficulty for RMC (Du et al., 2023) from models of several sparsities.

Each model's ``predictions/<split>.jsonl`` gives the cross-entropy of the gold label per
example; its variance across the models (population variance) measures how much the
example's fit depends on model capacity.  Min-max normalisation maps it to ``[alpha, 1]``:

* **high variance -> difficulty 1 (hard)**: the dense model learns the example but sparser
  ones do not; the ``rmc`` loss keeps the teacher's distribution as it is there;
* **low variance -> difficulty alpha (easy)**: every model fits it at every sparsity, the
  shortcut examples that compressed models overfit; ``rmc`` flattens the teacher there
  (``p_t ** d``, renormalised), like confidence regularisation does for biased examples.

When every example has the same variance, all difficulties are 1 (the teacher is kept).

File format (JSON Lines, written atomically): one ``{"id": str, "difficulty": float}`` per example.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from srnet.bias.predictions import PROB_FLOOR
from srnet.by_id import read_jsonl_rows, read_prediction_probs, require_ids, rows_by_id
from srnet.errors import SrnetError
from srnet.io import atomic_write_jsonl


def compute_difficulty(
    paths: Sequence[str | Path],
    example_ids: Sequence[str],
    labels: Sequence[int] | np.ndarray,
    alpha: float,
    check: Callable[[Path, np.ndarray], None] | None = None,
) -> np.ndarray:
    """Difficulty [N] in ``[alpha, 1]`` from the prediction files of several models.

    ``labels`` are the gold class indices (into each file's ``probs``) aligned to ``example_ids``;
    ``check`` sees each member's probabilities as read (e.g. to refuse a collapsed member).
    """
    if len(paths) < 2:
        raise SrnetError(f"sample difficulty needs predictions of at least 2 models; got {len(paths)}")
    if not 0 <= alpha <= 1:
        raise SrnetError(f"difficulty alpha={alpha}; expected a number in [0, 1]")
    gold = np.asarray(labels, dtype=np.int64)
    if gold.shape != (len(example_ids),):
        raise SrnetError(f"{gold.shape[0]} gold labels for {len(example_ids)} example ids")
    losses = np.stack([_gold_loss(Path(p), example_ids, gold, check) for p in paths])
    return normalise(losses.var(axis=0), alpha)


def normalise(variance: np.ndarray, alpha: float) -> np.ndarray:
    """Min-max map ``variance`` onto ``[alpha, 1]`` (all ones when it is constant)."""
    if variance.size == 0:
        return np.ones_like(variance, dtype=np.float64)
    low, high = float(variance.min()), float(variance.max())
    if high - low <= 0:
        return np.ones_like(variance, dtype=np.float64)
    return alpha + (1 - alpha) * (variance - low) / (high - low)


def _gold_loss(path: Path, example_ids: Sequence[str], gold: np.ndarray,
               check: Callable[[Path, np.ndarray], None] | None) -> np.ndarray:
    probs = read_prediction_probs(path, example_ids)
    bad = np.flatnonzero((gold < 0) | (gold >= probs.shape[1]))
    if bad.size:
        n = int(bad[0])
        raise SrnetError(
            f"{path}: gold label {gold[n]} of id '{example_ids[n]}' is outside its {probs.shape[1]} classes"
        )
    if check is not None:
        check(path, probs)
    return -np.log(np.maximum(probs[np.arange(len(gold)), gold].astype(np.float64), PROB_FLOOR))


def write_difficulty(path: str | Path, example_ids: Sequence[str], difficulty: np.ndarray) -> Path:
    """Write ``{"id", "difficulty"}`` rows atomically."""
    if len(example_ids) != len(difficulty):
        raise SrnetError(f"{len(difficulty)} difficulties for {len(example_ids)} example ids")
    rows = ({"id": i, "difficulty": round(float(d), 6)} for i, d in zip(example_ids, difficulty, strict=True))
    return atomic_write_jsonl(path, rows)


def load_difficulty(path: str | Path, example_ids: Sequence[str]) -> np.ndarray:
    """Difficulty [N] aligned to ``example_ids``; each value must lie in [0, 1]."""
    path = Path(path)
    if not path.is_file():
        raise SrnetError(f"difficulty file {path} does not exist")
    mapping = rows_by_id(read_jsonl_rows(path), path, "difficulty")
    require_ids(mapping, example_ids, path, "difficulty")
    out = np.empty(len(example_ids), dtype=np.float32)
    for n, ex_id in enumerate(example_ids):
        value = mapping[str(ex_id)]
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise SrnetError(f"{path}: difficulty of id '{ex_id}' is {value!r}; expected a number in [0, 1]")
        out[n] = value
    return out


def proxy_agreement(difficulty: np.ndarray, bias_easy: np.ndarray) -> dict[str, float | int]:
    """How often RMC's variance proxy and a bias-model split agree on easy vs hard (RMC paper
    section 4.1: 82.8% against Gururangan et al.'s hypothesis-only split on MNLI).

    The proxy calls the ``bias_easy.sum()`` examples of lowest difficulty (loss variance) easy, so
    both splits have the same number of easy examples; ties keep the file order.
    """
    difficulty, bias_easy = np.asarray(difficulty), np.asarray(bias_easy, dtype=bool)
    if difficulty.shape != bias_easy.shape:
        raise SrnetError(f"{difficulty.shape[0]} difficulties for {bias_easy.shape[0]} bias-model labels")
    n_easy = int(bias_easy.sum())
    proxy_easy = np.zeros(len(difficulty), dtype=bool)
    proxy_easy[np.argsort(difficulty, kind="stable")[:n_easy]] = True
    return {"agreement": float((proxy_easy == bias_easy).mean()), "n": len(difficulty), "n_easy": n_easy}
