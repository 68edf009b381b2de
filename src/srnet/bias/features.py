"""Bias features: named extractors ``(examples, context) -> [N, F]`` behind one registry.

A feature set is one function plus its decorator line::

    @register_feature("name", per_fold=StandardScaler, help="what it captures")
    def name_features(examples, context): ...

Extractors are stateless (each row depends on its own example only) and return a dense
array or a SciPy sparse matrix.  Anything *learnt from data* belongs in ``per_fold``: a
factory of a scikit-learn transformer that the bias model fits, with the classifier, inside
each cross-validation fold, so nothing learnt from held-out examples leaks into their scores.

Text is lower-cased and punctuation is deleted before splitting on whitespace
(``"Don't stop."`` -> ``["dont", "stop"]``).  ``Example.text_a`` is the premise (or claim),
``text_b`` the hypothesis (or evidence).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
from scipy import sparse
from sklearn.base import TransformerMixin
from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer
from sklearn.feature_selection import VarianceThreshold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from srnet.bias.word_vectors import WordVectors, cosine_matrix, load_word_vectors
from srnet.errors import SrnetError
from srnet.registry import Registry
from srnet.tasks.base import Example

_PUNCT = re.compile(r"[^\w\s]+")


def words(text: str | None) -> list[str]:
    """Lower-cased words of ``text`` with punctuation deleted."""
    return _PUNCT.sub("", (text or "").lower()).split()


@dataclass
class FeatureContext:
    """What extractors may need besides the examples; word vectors load on first use."""

    model_name: str = "default"
    """Backbone whose input embeddings serve as word vectors (when ``vectors_file`` is None)."""
    vectors_file: str | Path | None = None
    """A fastText/GloVe text vector file to use instead of the backbone's embeddings."""

    @cached_property
    def word_vectors(self) -> WordVectors:
        return load_word_vectors(self.vectors_file, self.model_name)


Features = np.ndarray | sparse.spmatrix
Extractor = Callable[[Sequence[Example], FeatureContext], Features]


@dataclass(frozen=True)
class BiasFeature:
    """A registered feature set."""

    name: str
    extract: Extractor
    per_fold: Callable[[], TransformerMixin]
    help: str
    needs_pairs: bool = False
    """Whether it models the second text of a pair: on a single-sentence task it has nothing to read,
    or reads the whole input (a bias model of the task itself), so ``srnet compress`` refuses it."""


FEATURES: Registry[BiasFeature] = Registry("bias feature")


def register_feature(
    name: str, *, per_fold: Callable[[], TransformerMixin], help: str, needs_pairs: bool = False
) -> Callable[[Extractor], Extractor]:
    """Decorator that registers an extractor under ``name``."""

    def add(extract: Extractor) -> Extractor:
        FEATURES.add(name, BiasFeature(name, extract, per_fold, help, needs_pairs))
        return extract

    return add


def get_feature(name: str) -> BiasFeature:
    """The feature set called ``name``; SrnetError listing the known ones otherwise."""
    return FEATURES.get(name)


def extract_features(
    name: str, examples: Sequence[Example], context: FeatureContext | None = None
) -> Features:
    """Run the feature set ``name`` on ``examples`` ([N, F])."""
    return get_feature(name).extract(examples, context or FeatureContext())


OVERLAP_COLUMNS = (
    "contained",
    "subsequence",
    "overlap_rate",
    "mean_max_similarity",
    "min_max_similarity",
    "log_length_ratio",
)


@register_feature(
    "overlap",
    per_fold=StandardScaler,
    needs_pairs=True,
    help="Clark et al.'s lexical-overlap features of a premise/hypothesis pair (NLI, paraphrase)",
)
def overlap_features(examples: Sequence[Example], context: FeatureContext) -> np.ndarray:
    """One row per pair, columns ``OVERLAP_COLUMNS``, over the pair's words P (premise), H (hypothesis):

    * ``contained``: 1 when every word of H occurs in P;
    * ``subsequence``: 1 when H occurs in P as a contiguous run of words;
    * ``overlap_rate``: fraction of H's words that occur in P;
    * ``mean_max_similarity`` / ``min_max_similarity``: mean / minimum over H's words of the best
      cosine similarity to a word of P (identical words count as 1, words without a vector as 0);
    * ``log_length_ratio``: the signed log-ratio ``log(1 + |P|) - log(1 + |H|)``.

    An empty H gets zeros in the first five columns.
    """
    pairs = [_pair_words(ex, "overlap") for ex in examples]
    vectors, index = _embed_vocabulary([w for p, h in pairs for w in (*p, *h)], context)
    out = np.zeros((len(pairs), len(OVERLAP_COLUMNS)))
    for row, (p, h) in enumerate(pairs):
        out[row, 5] = np.log1p(len(p)) - np.log1p(len(h))
        if not h:
            continue
        premise = set(p)
        out[row, 0], out[row, 1] = heuristic_indicators(p, h)
        out[row, 2] = np.mean([w in premise for w in h])
        if p:
            best = _best_similarity(h, p, vectors, index)
            out[row, 3], out[row, 4] = best.mean(), best.min()
    return out


@register_feature(
    "overlap_shortcut",
    per_fold=StandardScaler,
    needs_pairs=True,
    help="only the HANS heuristics: hypothesis fully contained in / a contiguous run of the premise",
)
def overlap_shortcut_features(examples: Sequence[Example], context: FeatureContext) -> np.ndarray:
    """The two indicator columns of ``overlap`` (``contained``, ``subsequence``) and nothing else.

    A bias model that knows only the shortcut, not the word-similarity and length cues that
    partly solve the task: use it when the full ``overlap`` set is too strong a teacher of the
    task itself (product-of-experts then has nothing left to learn on the examples it explains).
    """
    rows = [heuristic_indicators(*_pair_words(ex, "overlap_shortcut")) for ex in examples]
    return np.array(rows, dtype=np.float64).reshape(len(rows), 2)


def _pair_words(ex: Example, feature: str) -> tuple[list[str], list[str]]:
    if ex.text_b is None:
        raise SrnetError(f"bias feature '{feature}' needs text pairs; example '{ex.id}' has one text")
    return words(ex.text_a), words(ex.text_b)


def heuristic_indicators(p: list[str], h: list[str]) -> tuple[float, float]:
    """(every word of ``h`` is in ``p``, ``h`` is a contiguous run of ``p``); zeros for an empty ``h``."""
    if not h:
        return 0.0, 0.0
    premise = set(p)
    contained = all(w in premise for w in h)
    contiguous = any(p[i : i + len(h)] == h for i in range(len(p) - len(h) + 1))
    return float(contained), float(contiguous)


def _embed_vocabulary(tokens: list[str], context: FeatureContext) -> tuple[np.ndarray, dict[str, int]]:
    """Vectors of the distinct ``tokens`` in one lookup, and each word's row."""
    vocab = sorted(set(tokens))
    return context.word_vectors.embed(vocab), {w: i for i, w in enumerate(vocab)}


def _best_similarity(h: list[str], p: list[str], vectors: np.ndarray, index: dict[str, int]) -> np.ndarray:
    """For each word of ``h``, its highest cosine similarity to a word of ``p``."""
    sims = cosine_matrix(vectors[[index[w] for w in h]], vectors[[index[w] for w in p]])
    sims[np.equal.outer(np.array(h, dtype=object), np.array(p, dtype=object))] = 1.0
    return sims.max(axis=1)


@register_feature(
    "claim_only",
    per_fold=StandardScaler,
    help="max-pooled word vectors of the claim (text_a) alone (fact verification)",
)
def claim_only_features(examples: Sequence[Example], context: FeatureContext) -> np.ndarray:
    """Element-wise maximum over the vectors of the claim's words (zeros for an empty claim)."""
    claims = [words(ex.text_a) for ex in examples]
    vectors, index = _embed_vocabulary([w for claim in claims for w in claim], context)
    out = np.zeros((len(claims), vectors.shape[1]), dtype=np.float32)
    for row, claim in enumerate(claims):
        if claim:
            out[row] = vectors[[index[w] for w in claim]].max(axis=0)
    return out


_HASHER = HashingVectorizer(
    analyzer=words, n_features=2**18, alternate_sign=False, norm=None, dtype=np.float64
)


def _vocabulary_and_idf() -> Pipeline:
    """Per fold: keep the words seen in the fold's training data, then weight them by IDF."""
    return make_pipeline(VarianceThreshold(), TfidfTransformer())


@register_feature(
    "hypothesis_bow",
    per_fold=_vocabulary_and_idf,
    needs_pairs=True,
    help="bag of words of the hypothesis (text_b, or text_a when there is none); vocabulary per fold",
)
def hypothesis_bow_features(examples: Sequence[Example], context: FeatureContext) -> sparse.csr_matrix:
    """Hashed word counts (2**18 buckets); vocabulary and IDF weights are learnt inside each fold."""
    return _HASHER.transform([ex.text_a if ex.text_b is None else ex.text_b for ex in examples])
