"""The bias model: a logistic regression on bias features, with honest out-of-fold scores.

Training examples are scored out of fold: a seeded stratified k-fold split assigns each
example to one fold (``BiasModel.folds``), and the example is scored by a model fit on the
other folds only.  Per-fold steps (scaling, IDF weighting) are fit inside the fold too.  A
final model fit on all training examples scores every other split.  Scores are natural-log
probabilities over the task's classes in the task's label order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import Pipeline, make_pipeline

from srnet.bias.features import FEATURES, BiasFeature, FeatureContext, Features, get_feature
from srnet.bias.predictions import safe_log, write_bias_predictions
from srnet.errors import SrnetError
from srnet.tasks.base import Example, LabelSpace


@dataclass(frozen=True)
class SplitPredictions:
    """A bias model's log-probabilities on one split, and its accuracy there."""

    split: str
    ids: tuple[str, ...]
    log_probs: np.ndarray
    """[N, C] natural-log probabilities over the task's classes."""
    accuracy: float
    """Accuracy against the split's gold labels (after mapping through its label space)."""


@dataclass
class BiasModel:
    """A fitted bias model; ``train`` holds the out-of-fold training predictions."""

    feature: str
    labels: tuple[str, ...]
    classifier: Pipeline
    context: FeatureContext
    folds: np.ndarray
    """Fold index of each training example (it was scored by the model fit without that fold)."""
    train: SplitPredictions
    accuracies: dict[str, float] = field(default_factory=dict)
    """Accuracy on every split predicted so far, ``train`` (out of fold) included."""

    def predict_log_probs(self, examples: Sequence[Example]) -> np.ndarray:
        """Log-probabilities [N, C] from the model fit on all training data."""
        features = get_feature(self.feature).extract(examples, self.context)
        return _log_probs(self.classifier, features, len(self.labels))

    def predict_split(
        self, examples: Sequence[Example], split: str, label_space: LabelSpace | None = None
    ) -> SplitPredictions:
        """Score a split; accuracy uses ``label_space`` to map the task's classes to its labels."""
        log_probs = self.predict_log_probs(examples)
        accuracy = split_accuracy(log_probs, examples, self.labels, label_space)
        self.accuracies[split] = accuracy
        return SplitPredictions(split, tuple(ex.id for ex in examples), log_probs, accuracy)

    def write(self, path: str | Path, predictions: SplitPredictions) -> Path:
        """Write ``predictions`` as an srnet bias file (see ``srnet.bias.predictions``)."""
        return write_bias_predictions(
            path,
            predictions.ids,
            predictions.log_probs,
            labels=self.labels,
            feature=self.feature,
            split=predictions.split,
            accuracy=predictions.accuracy,
        )


class BiasConfig(BaseModel):
    """Recipe section for the bias model."""

    model_config = ConfigDict(extra="forbid")

    feature: str = Field("overlap", description=f"Registered bias feature set: {FEATURES.listing()}.")
    k_folds: int = Field(5, ge=2, description="Folds for the out-of-fold training predictions.")
    seed: int = Field(0, description="Seed of the stratified fold assignment.")
    C: float = Field(1.0, gt=0, description="Inverse L2 strength of the logistic regression.")
    word_vectors: str | None = Field(
        None,
        description="A fastText/GloVe text vector file; null = the backbone's own input embeddings.",
    )

    @field_validator("feature")
    @classmethod
    def _known_feature(cls, value: str) -> str:
        try:
            FEATURES.get(value)
        except SrnetError as exc:
            raise ValueError(str(exc)) from None
        return value

    def fit(self, train_examples: Sequence[Example], labels: Sequence[str], model_name: str) -> BiasModel:
        """Fit with these settings, taking word vectors from backbone ``model_name`` if none given."""
        return fit_bias_model(
            train_examples,
            labels,
            feature=self.feature,
            k_folds=self.k_folds,
            seed=self.seed,
            C=self.C,
            context=FeatureContext(model_name, self.word_vectors),
        )


def fit_bias_model(
    train_examples: Sequence[Example],
    labels: Sequence[str],
    *,
    feature: str = "overlap",
    k_folds: int = 5,
    seed: int = 0,
    C: float = 1.0,
    context: FeatureContext | None = None,
) -> BiasModel:
    """Fit the bias model on ``train_examples`` (labels index ``labels``, the task's label names)."""
    spec = get_feature(feature)
    context = context or FeatureContext()
    gold = _gold(train_examples, len(labels))
    folds = assign_folds(gold, k_folds, seed, labels)
    features = spec.extract(train_examples, context)
    oof = np.empty((len(gold), len(labels)))
    for fold in range(k_folds):
        held = folds == fold
        model = _fit(spec, features[~held], gold[~held], C, seed)
        oof[held] = _log_probs(model, features[held], len(labels))
    final = _fit(spec, features, gold, C, seed)
    accuracy = float(np.mean(oof.argmax(axis=1) == gold))
    train = SplitPredictions("train", tuple(ex.id for ex in train_examples), oof, accuracy)
    return BiasModel(feature, tuple(labels), final, context, folds, train, {"train": accuracy})


def assign_folds(gold: np.ndarray, k_folds: int, seed: int, labels: Sequence[str]) -> np.ndarray:
    """Seeded stratified fold index [N] of each example; every class needs ``k_folds`` examples."""
    if k_folds < 2:
        raise SrnetError(f"bias model k_folds={k_folds}; need at least 2")
    counts = np.bincount(gold, minlength=len(labels))
    if np.count_nonzero(counts) < 2:
        raise SrnetError(f"bias model: training examples cover {np.count_nonzero(counts)} class(es); need 2")
    for name, count in zip(labels, counts, strict=True):
        if 0 < count < k_folds:
            raise SrnetError(
                f"bias model: class '{name}' has {count} training examples; k_folds={k_folds} needs "
                f"at least {k_folds}"
            )
    folds = np.empty(len(gold), dtype=np.int64)
    splitter = StratifiedKFold(n_splits=k_folds, shuffle=True, random_state=seed)
    for fold, (_, held) in enumerate(splitter.split(np.zeros(len(gold)), gold)):
        folds[held] = fold
    return folds


def split_accuracy(
    log_probs: np.ndarray,
    examples: Sequence[Example],
    model_labels: Sequence[str],
    label_space: LabelSpace | None = None,
) -> float:
    """Accuracy of argmax predictions, mapped into ``label_space`` when it maps model classes."""
    probs = np.exp(log_probs)
    if label_space is not None and label_space.from_model is not None:
        probs = label_space.collapse(probs, model_labels)
    if not examples:
        return float("nan")
    return float(np.mean(probs.argmax(axis=1) == np.array([ex.label for ex in examples])))


def _gold(examples: Sequence[Example], num_classes: int) -> np.ndarray:
    if not examples:
        raise SrnetError("bias model: no training examples")
    gold = np.array([ex.label for ex in examples], dtype=np.int64)
    bad = np.flatnonzero((gold < 0) | (gold >= num_classes))
    if bad.size:
        ex = examples[int(bad[0])]
        raise SrnetError(f"bias model: example '{ex.id}' has label {ex.label}; expected 0..{num_classes - 1}")
    return gold


def _fit(spec: BiasFeature, features: Features, gold: np.ndarray, C: float, seed: int) -> Pipeline:
    classifier = LogisticRegression(C=C, max_iter=2000, random_state=seed)
    try:
        return make_pipeline(spec.per_fold(), classifier).fit(features, gold)
    except ValueError as exc:  # e.g. no feature varies across the training examples
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise SrnetError(f"bias model on feature '{spec.name}' cannot be fit: {first}") from exc


def _log_probs(model: Pipeline, features: Features, num_classes: int) -> np.ndarray:
    """[N, C] log-probabilities; classes the model never saw get the probability floor."""
    probs = np.zeros((features.shape[0], num_classes))
    probs[:, model.classes_] = model.predict_proba(features)
    return safe_log(probs)
