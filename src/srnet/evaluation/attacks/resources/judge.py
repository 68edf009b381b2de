"""An independent label judge for attack successes: a logistic regression on a fixed sentence encoder's
mean-pooled embeddings (default: the bundled all-MiniLM-L6-v2, frozen), trained on a task's training
split.  It is not the victim (no fine-tuned weight is shared), so a perturbation that flips the
victim but also moves the judge off the gold label has likely changed the label, not fooled the model.

A judge is one ``.npz`` (weights, bias, label names) with a JSON sidecar (what it was trained on,
its SHA-256).  The default judge is built once from ``judge_data`` and cached like the
counter-fitted space (``$SRNET_CACHE_DIR`` or ``~/.cache/srnet``); a missing or corrupt cache is
rebuilt, by one process at a time (a second waits, then reads it).
"""

from __future__ import annotations

import hashlib
import json
import logging
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from srnet.errors import SrnetError
from srnet.evaluation.attacks.resources.counterfit import cache_dir
from srnet.evaluation.attacks.resources.similarity import CachedEncoder, SentenceEncoder
from srnet.io import atomic_write, atomic_write_json, file_sha256
from srnet.rundir.locks import exclusive
from srnet.tasks.base import Example

log = logging.getLogger(__name__)

JUDGE_VERSION = 1
JUDGE_C = 1.0
"""Inverse L2 strength of the logistic regression (scikit-learn's default)."""


@dataclass
class LabelJudge:
    """A linear classifier over unit sentence embeddings; ``labels`` name its classes in order."""

    weight: np.ndarray
    bias: np.ndarray
    labels: tuple[str, ...]
    record: dict
    encoder: CachedEncoder | None = None

    def probs(self, texts: Sequence[str]) -> np.ndarray:
        """Class probabilities [len(texts), classes] of ``texts``."""
        if self.encoder is None:
            raise RuntimeError("LabelJudge: no encoder (load it with load_judge)")
        features = self.encoder.embed(list(texts)).numpy()
        return _softmax(features @ self.weight.T + self.bias)

    def check_labels(self, labels: Sequence[str]) -> None:
        """One-line error unless the judge was trained on exactly ``labels`` (in that order)."""
        if tuple(labels) != self.labels:
            raise SrnetError(f"judge {self.record.get('file', '')}: trained on labels {list(self.labels)}, "
                             f"the attacked task has {list(labels)}")


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=1, keepdims=True)


def train_judge(examples: Sequence[Example], labels: Sequence[str], encoder: CachedEncoder,
                c: float = JUDGE_C) -> tuple[np.ndarray, np.ndarray, float]:
    """(weight [C, D], bias [C], training accuracy) of an L2 logistic regression on ``encoder``'s
    embeddings of ``examples``' first text field.  Deterministic (lbfgs)."""
    from sklearn.linear_model import LogisticRegression

    texts = [ex.text_a for ex in examples]
    gold = np.array([ex.label for ex in examples])
    if len(set(gold.tolist())) < 2:
        raise SrnetError("judge training data has fewer than 2 labels")
    by_length = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # batches of similar lengths pad less
    embedded = _embed_showing_progress(encoder, [texts[i] for i in by_length])
    features = np.empty_like(embedded)
    features[by_length] = embedded
    model = LogisticRegression(C=c, max_iter=2000).fit(features, gold)
    weight = np.zeros((len(labels), features.shape[1]), dtype=np.float32)
    bias = np.full(len(labels), -1e4, dtype=np.float32)  # a label absent from the data is never given
    if len(model.classes_) == 2:  # scikit-learn keeps one row for two classes
        rows = np.stack([-model.coef_[0] / 2, model.coef_[0] / 2])
        offsets = np.array([-model.intercept_[0] / 2, model.intercept_[0] / 2])
    else:
        rows, offsets = model.coef_, model.intercept_
    for row, cls in enumerate(model.classes_):
        weight[int(cls)], bias[int(cls)] = rows[row], offsets[row]
    return weight, bias, float(model.score(features, gold))


def _embed_showing_progress(encoder: CachedEncoder, texts: list[str]) -> np.ndarray:
    """``encoder.embed(texts)`` with a progress bar: the distinct texts are embedded in chunks of whole
    encoder batches first (the same batches as one call, so the same vectors), then read back."""
    from tqdm.auto import tqdm

    distinct = list(dict.fromkeys(texts))
    chunk = getattr(encoder, "batch_size", 64) * 16
    for start in tqdm(range(0, len(distinct), chunk), desc="label judge: embedding", unit="chunk",
                      leave=False):
        encoder.embed(distinct[start : start + chunk])
    return encoder.embed(texts).numpy()


def judge_key(data_sha: str, labels: Sequence[str], encoder: str) -> str:
    """The cache key of a judge: its data's checksum, labels, encoder and version."""
    blob = json.dumps([data_sha, list(labels), encoder, JUDGE_C, JUDGE_VERSION])
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def save_judge(path: Path, weight: np.ndarray, bias: np.ndarray, labels: Sequence[str], record: dict) -> dict:
    """Write the judge ``.npz`` and its sidecar (the sidecar last, with the file's SHA-256)."""

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as handle:
            np.savez(handle, weight=weight.astype(np.float32), bias=bias.astype(np.float32),
                     labels=np.array(list(labels)))

    atomic_write(path, write)
    record = {**record, "labels": list(labels), "sha256": file_sha256(path)}
    atomic_write_json(path.with_suffix(".json"), record)
    return record


def read_judge(path: Path) -> LabelJudge:
    """The judge saved at ``path`` (with its ``.json`` sidecar); one-line error when missing or corrupt."""
    sidecar = path.with_suffix(".json")
    if not path.is_file():
        raise SrnetError(f"judge {path}: file not found")
    try:
        record = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SrnetError(f"judge {path}: unreadable ({type(exc).__name__}; it needs {sidecar.name} beside it)"
                         ) from None
    if not isinstance(record, dict) or record.get("sha256") != file_sha256(path):  # checked before loading
        raise SrnetError(f"judge {path}: SHA-256 differs from {sidecar.name} (changed or corrupt)")
    try:
        with np.load(path) as loaded:
            weight, bias = loaded["weight"], loaded["bias"]
            labels = tuple(str(x) for x in loaded["labels"])
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise SrnetError(f"judge {path}: unreadable ({type(exc).__name__})") from None
    if weight.ndim != 2 or weight.shape[0] != len(labels) or bias.shape != (len(labels),):
        raise SrnetError(f"judge {path}: weight {weight.shape} and bias {bias.shape} do not fit "
                         f"{len(labels)} labels")
    record = {**record, "file": str(path)}
    return LabelJudge(weight.astype(np.float32), bias.astype(np.float32), labels, record)


def cached_judge(examples_source: Path, load: Callable[[], Sequence[Example]], labels: Sequence[str],
                 encoder_name: str, folder: Path | None = None) -> LabelJudge:
    """The judge trained on ``examples_source`` (read by ``load()`` into examples) for ``labels`` with
    ``encoder_name``: from the cache when its checksum holds, else trained (minutes) and cached."""
    if not examples_source.is_file():
        raise SrnetError(f"judge data {examples_source}: file not found (set $SRNET_DATA_DIR, or "
                         "--param judge=PATH of a saved judge)")
    data_sha = file_sha256(examples_source)
    path = (folder or cache_dir()) / f"judge_{judge_key(data_sha, labels, encoder_name)}.npz"
    encoder = SentenceEncoder(encoder_name)
    with exclusive(path.parent, path.name):  # a second process waits for the first's judge
        try:
            judge = read_judge(path)
        except SrnetError:
            examples = load()
            log.info("label judge: training on %d texts of %s (once: minutes on CPU), cached as %s",
                     len(examples), examples_source, path)
            weight, bias, accuracy = train_judge(examples, labels, encoder)
            record = {"data": str(examples_source), "data_sha256": data_sha, "examples": len(examples),
                      "encoder": encoder_name, "C": JUDGE_C, "train_accuracy": round(accuracy, 4),
                      "version": JUDGE_VERSION}
            save_judge(path, weight, bias, labels, record)
            judge = read_judge(path)
    judge.encoder = encoder
    return judge


def load_judge(path: Path, encoder_name: str | None = None) -> LabelJudge:
    """A saved judge with its encoder (the one it records unless ``encoder_name`` is given)."""
    judge = read_judge(path)
    judge.encoder = SentenceEncoder(encoder_name or judge.record.get("encoder", "default"))
    return judge

