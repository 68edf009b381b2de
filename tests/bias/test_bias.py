"""Bias features, word vectors and the out-of-fold bias model."""

from __future__ import annotations

import json
import math
from itertools import islice

import numpy as np
import pytest
from pydantic import ValidationError
from sklearn.preprocessing import StandardScaler

from srnet.bias import (
    FEATURES,
    BiasConfig,
    BiasFeature,
    FeatureContext,
    extract_features,
    fit_bias_model,
    load_bias_log_probs,
    read_bias_header,
)
from srnet.bias.features import OVERLAP_COLUMNS, words
from srnet.bias.model import assign_folds, split_accuracy
from srnet.bias.word_vectors import EmbeddingWordVectors, FileWordVectors
from srnet.errors import SrnetError
from srnet.tasks.base import Example, LabelSpace

NLI = ("entailment", "neutral", "contradiction")
HANS = LabelSpace(
    ("entailment", "non-entailment"),
    {"entailment": "entailment", "neutral": "non-entailment", "contradiction": "non-entailment"},
)


@pytest.fixture
def vector_file(tmp_path):
    path = tmp_path / "vectors.vec"
    path.write_text("4 2\ndog 1 0\ncat 0.6 0.8\nmat 0 1\nsat 0.5 0.5 \n", encoding="utf-8")
    return path


def pair(i: int, premise: str, hypothesis: str | None, label: int = 0) -> Example:
    return Example(str(i), premise, hypothesis, label)


def synthetic_nli(n_per_class: int = 20) -> list[Example]:
    """Hypotheses whose cue word gives the label away: 'not' -> contradiction, 'maybe' -> neutral."""
    cues = ("", "maybe ", "not ")
    nouns = ["cat", "dog", "man", "girl", "boy", "bird", "horse", "child", "woman", "car"]
    out = []
    for label, cue in enumerate(cues):
        for i in range(n_per_class):
            noun = nouns[i % len(nouns)]
            out.append(pair(len(out), f"the {noun} is here", f"the {noun} is {cue}outside", label))
    return out


# --- word vectors -------------------------------------------------------------------------------


def test_words_lowercases_and_strips_punctuation():
    assert words("Don't STOP, the U.S. man!") == ["dont", "stop", "the", "us", "man"]
    assert words(None) == []


def test_file_vectors_with_fasttext_header(vector_file):
    vectors = FileWordVectors(vector_file)
    assert vectors.dim == 2
    got = vectors.embed(["cat", "unknown", "dog", "cat"])
    np.testing.assert_allclose(got, [[0.6, 0.8], [0, 0], [1, 0], [0.6, 0.8]])


def test_file_vectors_glove_layout_and_spaced_words(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_text("the 0.1 0.2 0.3\nat name 1 2 3\n", encoding="utf-8")
    vectors = FileWordVectors(path)
    assert vectors.dim == 3
    np.testing.assert_allclose(vectors.embed(["the", "at name"]), [[0.1, 0.2, 0.3], [1, 2, 3]], rtol=1e-6)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2 3\ncat 1 2 3\ndog 1 2\n", "vec.txt:3: 2 values after the word; expected 3"),
        ("2 3\ncat 1 2 3\ndog 1 2 3 4\n", "vec.txt:3: 4 values after the word; expected 3"),
        ("cat 1 2 3\ndog 1 x 3\n", "vec.txt:2: value 'x' is not a number"),
        ("cat\n", "vec.txt:1: no values after the word"),
    ],
)
def test_file_vectors_malformed_line_names_file_and_line(tmp_path, text, message):
    path = tmp_path / "vec.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SrnetError, match=message):
        FileWordVectors(path).embed(["dog"])


def test_file_vectors_missing_file(tmp_path):
    with pytest.raises(SrnetError, match="does not exist"):
        FileWordVectors(tmp_path / "nope.vec")


def test_embedding_vectors_average_word_pieces(tiny_model_dir):
    from transformers import AutoModel, AutoTokenizer

    vectors = EmbeddingWordVectors(str(tiny_model_dir))
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    table = AutoModel.from_pretrained(tiny_model_dir).get_input_embeddings().weight.detach().numpy()
    word = "unbelievableness"
    ids = tokenizer(word, add_special_tokens=False)["input_ids"]
    assert len(ids) > 1
    got = vectors.embed([word, "cat"])
    np.testing.assert_allclose(got[0], table[ids].mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(got[1], table[tokenizer.convert_tokens_to_ids("cat")], rtol=1e-6)
    assert vectors.dim == 32


# --- features -----------------------------------------------------------------------------------


def test_overlap_features_by_hand(vector_file):
    premise = "The cat sat on the mat."
    examples = [
        pair(0, premise, "The cat sat."),
        pair(1, premise, "The mat sat"),
        pair(2, premise, "A dog sat!"),
        pair(3, premise, ""),
    ]
    got = extract_features("overlap", examples, FeatureContext(vectors_file=vector_file))
    assert got.shape == (4, len(OVERLAP_COLUMNS))
    ratio = math.log(7) - math.log(4)
    expected = [
        [1, 1, 1, 1, 1, ratio],
        [1, 0, 1, 1, 1, ratio],
        # a: no vector -> 0; dog (1,0): cat 0.6, mat 0, sat (.5,.5) 1/sqrt(2); sat: identical -> 1
        [0, 0, 1 / 3, (0 + 1 / math.sqrt(2) + 1) / 3, 0, ratio],
        [0, 0, 0, 0, 0, math.log(7) - math.log(1)],
    ]
    np.testing.assert_allclose(got, expected, atol=1e-6)


def test_overlap_needs_pairs(vector_file):
    with pytest.raises(SrnetError, match="example '7' has one text"):
        extract_features("overlap", [pair(7, "a claim", None)], FeatureContext(vectors_file=vector_file))


def test_claim_only_max_pools_claim_vectors(vector_file):
    examples = [pair(0, "Cat dog", "evidence ignored"), pair(1, "", None)]
    got = extract_features("claim_only", examples, FeatureContext(vectors_file=vector_file))
    np.testing.assert_allclose(got, [[1, 0.8], [0, 0]], rtol=1e-6)


def test_hypothesis_bow_counts_hypothesis_or_single_text():
    examples = [pair(0, "premise words", "Not, not here"), pair(1, "not not here", None)]
    got = extract_features("hypothesis_bow", examples).toarray()
    np.testing.assert_array_equal(got[0], got[1])
    assert got[0].sum() == 3 and got[0].max() == 2


def test_unknown_feature_lists_known():
    with pytest.raises(SrnetError, match=r"unknown bias feature 'nope'; known: \["):
        extract_features("nope", [pair(0, "a", "b")])


# --- bias model ---------------------------------------------------------------------------------


def test_folds_are_stratified_seeded_and_cover_everything():
    gold = np.repeat([0, 1, 2], [10, 15, 20])
    folds = assign_folds(gold, 5, seed=3, labels=NLI)
    assert sorted(np.unique(folds)) == [0, 1, 2, 3, 4]
    for fold in range(5):
        assert np.bincount(gold[folds == fold], minlength=3).tolist() == [2, 3, 4]
    np.testing.assert_array_equal(folds, assign_folds(gold, 5, seed=3, labels=NLI))
    assert not np.array_equal(folds, assign_folds(gold, 5, seed=4, labels=NLI))


def test_out_of_fold_predictions_never_see_their_own_example():
    """One-hot example ids let a model memorise the examples it was fit on.

    Out of fold, an example's id column is all zeros in its training data, so its weight is
    exactly 0 and every held-out example of a fold gets the same (intercept-only) score.  If an
    example were in its own training fold, its own column would push it towards its label.
    """
    n = 30

    def ids(examples, context):
        out = np.zeros((len(examples), n))
        out[np.arange(len(examples)), [int(ex.id) for ex in examples]] = 1
        return out

    with FEATURES.scoped():
        FEATURES.add("example_id", BiasFeature("example_id", ids, StandardScaler, "ids"))
        examples = [pair(i, "p", "h", label=i % 3) for i in range(n)]
        model = fit_bias_model(examples, NLI, feature="example_id", k_folds=5, seed=0, C=100.0)
        for fold in range(5):
            held = model.train.log_probs[model.folds == fold]
            np.testing.assert_allclose(held, np.broadcast_to(held[0], held.shape), atol=1e-9)
        # The same feature does memorise what it is fit on: the final model scores its training set perfectly.
        assert np.mean(model.predict_log_probs(examples).argmax(1) == [ex.label for ex in examples]) == 1.0
        assert model.train.accuracy < 0.5


def test_bias_model_learns_cue_words_in_task_label_order(tmp_path):
    train = synthetic_nli()
    model = fit_bias_model(train, NLI, feature="hypothesis_bow", k_folds=4, seed=1)
    assert model.train.accuracy == model.accuracies["train"] > 0.9
    assert model.train.ids == tuple(ex.id for ex in train)
    np.testing.assert_allclose(np.exp(model.train.log_probs).sum(1), 1, atol=1e-9)
    dev = [pair(100, "x", "the man is not there", 2), pair(101, "x", "the man is maybe there", 1)]
    preds = model.predict_split(dev, "dev")
    assert preds.log_probs.argmax(1).tolist() == [2, 1]
    assert preds.accuracy == 1.0 and model.accuracies["dev"] == 1.0
    hans = [pair(200, "x", "the man is not there", 1), pair(201, "x", "the man is there", 0)]
    assert model.predict_split(hans, "hans", HANS).accuracy == 1.0
    path = model.write(tmp_path / "train.jsonl", model.train)
    assert read_bias_header(path)["accuracy"] == pytest.approx(model.train.accuracy)
    loaded = load_bias_log_probs(path, list(model.train.ids), 3, labels=NLI)
    np.testing.assert_allclose(loaded, model.train.log_probs, atol=1e-5)


def test_collapse_sums_mapped_classes_and_drops_omitted():
    probs = np.array([[0.6, 0.3, 0.1], [0.3, 0.5, 0.2]])
    np.testing.assert_allclose(HANS.collapse(probs, NLI), [[0.6, 0.4], [0.3, 0.7]])
    fever = LabelSpace(("SUPPORTS", "REFUTES"), {"entailment": "SUPPORTS", "contradiction": "REFUTES"})
    np.testing.assert_allclose(fever.collapse(probs, NLI), [[0.6, 0.1], [0.3, 0.2]])
    examples = [pair(0, "a", "b", 0), pair(1, "a", "b", 0)]
    assert split_accuracy(np.log(probs), examples, NLI, fever) == 1.0
    assert split_accuracy(np.log(probs), examples, NLI) == 0.5
    broken = LabelSpace(("yes", "no"), {"entailment": "maybe"})
    with pytest.raises(SrnetError, match="maps 'entailment' to 'maybe'"):
        broken.collapse(probs, NLI)


@pytest.mark.parametrize(
    ("examples", "kwargs", "message"),
    [
        ([pair(i, "a", "b", i % 3) for i in range(9)], {"k_folds": 1}, "k_folds=1; need at least 2"),
        ([pair(i, "a", "b", i % 3) for i in range(9)], {}, "class 'entailment' has 3 training examples"),
        ([pair(0, "a", "b", 5)], {}, "example '0' has label 5; expected 0..2"),
        ([pair(i, "a", "b", 0) for i in range(9)], {}, "cover 1 class"),
        ([], {}, "no training examples"),
        ([pair(i, "a", "same", i % 3) for i in range(15)], {}, "feature 'hypothesis_bow' cannot be fit"),
    ],
)
def test_fit_rejects_bad_input(examples, kwargs, message):
    with pytest.raises(SrnetError, match=message):
        fit_bias_model(examples, NLI, feature="hypothesis_bow", **kwargs)


def test_bias_config_validates_and_fits():
    with pytest.raises(ValidationError, match="unknown bias feature 'nope'"):
        BiasConfig(feature="nope")
    with pytest.raises(ValidationError, match="extra"):
        BiasConfig(folds=3)
    config = BiasConfig(feature="hypothesis_bow", k_folds=3)
    model = config.fit(synthetic_nli(9), NLI, model_name="default")
    assert model.feature == "hypothesis_bow" and model.context.model_name == "default"
    assert np.unique(model.folds).tolist() == [0, 1, 2]


# --- real data ----------------------------------------------------------------------------------


def _read_jsonl(path, step: int = 1, limit: int | None = None) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in islice(f, 0, limit, step)]


@pytest.mark.real_data
def test_overlap_bias_model_on_mnli_predicts_hans_as_entailment(shared_data):
    train = [
        Example(str(i), r["premise"], r["hypothesis"], NLI.index(r["label"]))
        for i, r in enumerate(_read_jsonl(shared_data / "mnli" / "train.jsonl", limit=2000))
    ]
    hans = [
        Example(r["pairID"], r["premise"], r["hypothesis"], HANS.index(r["label"]))
        for r in _read_jsonl(shared_data / "hans" / "train.jsonl", step=20)
    ]
    model = fit_bias_model(train, NLI, feature="overlap", context=FeatureContext("default"))
    assert model.train.accuracy > 0.4  # above the 1/3 of chance, out of fold
    preds = model.predict_split(hans, "hans", HANS)
    entailment = HANS.collapse(np.exp(preds.log_probs), NLI).argmax(1) == 0
    assert entailment.mean() > 0.8  # the lexical-overlap shortcut: HANS pairs overlap fully
    assert 0.4 < preds.accuracy < 0.6  # HANS is half entailment, half not


def test_rmc_proxy_agreement_with_a_bias_split():
    from srnet.bias.difficulty import proxy_agreement

    difficulty = np.array([0.1, 0.9, 0.2, 0.8, 0.3, 0.7])
    assert proxy_agreement(difficulty, np.array([1, 0, 1, 0, 1, 0]))["agreement"] == 1.0
    flipped = proxy_agreement(difficulty, np.array([0, 1, 0, 1, 0, 1]))
    assert flipped == {"agreement": 0.0, "n": 6, "n_easy": 3}
    assert proxy_agreement(difficulty, np.array([1, 0, 0, 0, 1, 1]))["agreement"] == pytest.approx(4 / 6)
    with pytest.raises(SrnetError, match="6 difficulties for 2 bias-model labels"):
        proxy_agreement(difficulty, np.array([1, 0]))
