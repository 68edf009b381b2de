"""Lemmas and inflections of English words (lemminflect's tables, offline)."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from types import ModuleType

from srnet.evaluation.attacks.resources.extra import import_extra

UPOS = {"n": "NOUN", "v": "VERB", "a": "ADJ", "r": "ADV"}
"""WordNet part of speech -> lemminflect's universal tag."""
BASE_TAGS = frozenset({"NN", "VB", "JJ", "RB"})
"""Penn tags whose form is the lemma itself (so WordNet lemmas unknown to lemminflect still fit)."""


@lru_cache(maxsize=1)
def lemminflect() -> ModuleType:
    """The lemminflect module (imported once; a one-line error when the ``attack`` extra is missing)."""
    return import_extra("lemminflect")


def lemma(word: str, pos: str, guess: bool = True) -> str | None:
    """The lemma of lower-case ``word`` as a ``pos`` (WordNet's n, v, a, r): "movies", n -> "movie".
    For a word lemminflect does not know as a ``pos``: its rules' guess, or None without ``guess``."""
    found = lemminflect().getLemma(word, UPOS[pos], lemmatize_oov=guess)
    return found[0] if found else None


def inflect(lemma: str, tag: str) -> str | None:
    """``lemma`` in the form of Penn ``tag`` ("film", NNS -> "films"); None when lemminflect knows no
    such form of it (e.g. a verb tag for a noun)."""
    if tag in BASE_TAGS:
        return lemma
    forms = lemminflect().getInflection(lemma, tag, inflect_oov=False)
    return forms[0] if forms else None


def inflections(lemmas: Iterable[str], tag: str, word: str) -> list[str]:
    """The forms of ``lemmas`` for Penn ``tag`` in order, without repeats, uninflectable ones or ``word``."""
    forms = (inflect(lemma, tag) for lemma in lemmas)
    return [f for f in dict.fromkeys(forms) if f is not None and f != word]
