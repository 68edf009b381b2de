"""The synthetic controlled-bias NLI task: determinism, realised bias, the broken shortcut."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from srnet.errors import SrnetError
from srnet.tasks import DataSpec, generate_synthetic, load_split, word_overlap
from srnet.tasks.synthetic import (
    ADJECTIVES,
    CONSTRUCTIONS,
    HIGH_OVERLAP,
    INTRANSITIVE,
    LOW_OVERLAP,
    NOUNS,
    PLACES,
    STATES,
    VERBS,
    _Scene,
)

ENTAILMENT = 0


def high_overlap_entailment_rate(examples) -> float:
    high = [e for e in examples if word_overlap(e.text_a, e.text_b) >= HIGH_OVERLAP]
    return sum(e.label == ENTAILMENT for e in high) / len(high)


def is_contiguous(premise: str, hypothesis: str) -> bool:
    p, h = premise.lower().split()[:-1], hypothesis.lower().split()[:-1]
    return any(p[i : i + len(h)] == h for i in range(len(p) - len(h) + 1))


def test_word_overlap():
    assert word_overlap("The doctor saw the artist .", "The artist saw the doctor .") == 1.0
    assert word_overlap("The doctor saw the artist .", "The physician noticed the painter .") == 0.4
    assert word_overlap("a b", ". ,") == 0.0


def test_deterministic_by_seed_and_split():
    train = generate_synthetic("train", 60, 0.9, seed=1)
    assert train == generate_synthetic("train", 60, 0.9, seed=1)
    assert train != generate_synthetic("train", 60, 0.9, seed=2)
    assert train != generate_synthetic("dev", 60, 0.9, seed=1)
    assert len({e.id for e in train}) == 60
    assert train[0].text_a[0].isupper() and train[0].text_a.endswith(" .")


def test_lexicon_words_are_distinct():
    words = [w for pair in NOUNS for w in pair] + [w for triple in VERBS for w in triple]
    words += [*INTRANSITIVE, *ADJECTIVES, *STATES, *PLACES]
    assert len(words) == len(set(words))


def test_every_construction_has_its_declared_overlap_class():
    rng = random.Random(0)
    for construction in CONSTRUCTIONS:
        for _ in range(30):
            premise, hypothesis = construction.build(_Scene.draw(rng))
            overlap = word_overlap(premise, hypothesis)
            if construction.overlap == "high":
                assert overlap >= HIGH_OVERLAP, (construction.name, premise, hypothesis)
            else:
                assert overlap <= LOW_OVERLAP, (construction.name, premise, hypothesis)


@pytest.mark.parametrize("bias", [0.0, 1 / 3, 0.6, 0.9, 1.0])
def test_bias_strength_is_realised_in_the_id_split(bias):
    examples = generate_synthetic("train", 900, bias, seed=0)
    assert Counter(e.label for e in examples) == {0: 300, 1: 300, 2: 300}
    assert high_overlap_entailment_rate(examples) == pytest.approx(bias, abs=0.01)
    for e in examples:
        assert (word_overlap(e.text_a, e.text_b) >= HIGH_OVERLAP) == (e.meta["overlap"] == "high")


def test_labels_are_a_function_of_the_text():
    seen: dict[tuple[str, str], int] = {}
    for e in generate_synthetic("train", 3000, 1 / 3, seed=5):
        assert seen.setdefault((e.text_a, e.text_b), e.label) == e.label


def test_challenge_split_breaks_the_shortcut():
    examples = generate_synthetic("challenge", 800, seed=0)
    cells = Counter((e.meta["heuristic"], e.label) for e in examples)
    heuristics = ("lexical_overlap", "subsequence", "constituent", "synonym")
    assert cells == {(h, label): 100 for h in heuristics for label in (0, 1)}
    for e in examples:
        overlap = word_overlap(e.text_a, e.text_b)
        if e.meta["heuristic"] == "synonym":
            assert overlap <= LOW_OVERLAP
        else:
            assert overlap >= HIGH_OVERLAP
        if e.meta["heuristic"] in ("subsequence", "constituent"):
            assert is_contiguous(e.text_a, e.text_b), e
    # the ID shortcut says "high overlap => entailment"; on the challenge split it is at chance
    assert high_overlap_entailment_rate(examples) == pytest.approx(0.5)
    assert len({e.meta["subcase"] for e in examples}) == 19


def test_synthetic_data_spec(tmp_path):
    challenge = DataSpec(synthetic={"split": "challenge", "n": 40, "seed": 3})
    assert challenge.challenge == "hans" and challenge.resolved_format == "synthetic"
    split = load_split("synthetic_nli", challenge)
    assert split.examples == generate_synthetic("challenge", 40, seed=3)
    assert split.scheme.space.names == ("entailment", "non-entailment")
    sub = load_split("synthetic_nli", DataSpec(synthetic={"split": "train", "n": 90}, n=30))
    assert len(sub.examples) == 30 and Counter(e.label for e in sub.examples) == {0: 10, 1: 10, 2: 10}
    with pytest.raises(SrnetError, match=r"synthetic train split has labels \['entailment', 'neutral', "
                                         r"'contradiction'\], but task sentiment expects"):
        load_split("sentiment", DataSpec(synthetic={"split": "train", "n": 9}))


def test_generator_argument_errors():
    with pytest.raises(SrnetError, match="synthetic split 'test' is not one of"):
        generate_synthetic("test", 10)
    with pytest.raises(SrnetError, match=r"bias_strength must be in \[0, 1\], got 1.5"):
        generate_synthetic("train", 10, 1.5)
