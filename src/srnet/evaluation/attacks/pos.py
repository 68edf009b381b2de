"""Part-of-speech tags of a text's words (TextBlob's PatternTagger: Penn tags, offline) and the
WordNet class each tag allows swapping within."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from srnet.evaluation.attacks.extra import import_extra
from srnet.evaluation.attacks.text import Words

WORDNET_POS = {"NN": "n", "VB": "v", "JJ": "a", "RB": "r"}
"""Penn tag prefix -> WordNet part of speech (NN* nouns, VB* verbs, JJ* adjectives, RB* adverbs)."""
NEVER_SWAPPED = frozenset({"NNP", "NNPS"})
"""Proper nouns: names are never swapped (numbers, CD, and function words map to no class)."""


@lru_cache(maxsize=1)
def tagger() -> Any:
    """TextBlob's PatternTagger (its bundled lexicon; NLTK's tagger would need downloaded data)."""
    return import_extra("textblob.en.taggers").PatternTagger()


def wordnet_pos(tag: str | None) -> str | None:
    """The WordNet class (n, v, a, r) of Penn ``tag``; None for tags whose words are never swapped."""
    if tag is None or tag in NEVER_SWAPPED:
        return None
    return WORDNET_POS.get(tag[:2])


@lru_cache(maxsize=4096)
def penn_tags(words: Words) -> tuple[str | None, ...]:
    """The Penn tag of each of ``words``: that of the tagger's token starting where the word starts,
    None where none does (e.g. ``nd`` of ``2nd``)."""
    text = words.text
    tags: dict[int, str] = {}
    at = 0
    for token, tag in tagger().tag(text):
        found = text.find(token, at)
        if found >= 0:
            tags.setdefault(found, tag)
            at = found + len(token)
    return tuple(tags.get(start) for start in words.starts())
