"""Word-level facts for substitution constraints: a word's prior sentiment (the Pattern lexicon that
TextBlob bundles) and its frequency (wordfreq's English Zipf scale), both offline."""

from __future__ import annotations

from functools import lru_cache

from srnet.evaluation.attacks.resources.extra import import_extra


@lru_cache(maxsize=65536)
def polarity(word: str) -> float:
    """Prior polarity of ``word`` in [-1, 1] from TextBlob's Pattern lexicon (0 when not listed)."""
    return float(import_extra("textblob.en").sentiment(word.lower())[0])


def sentiment_kept(original: str, substitute: str, margin: float) -> bool:
    """False when either word carries a sentiment of at least ``margin`` that the other does not share
    (cheap 0.4 -> inexpensive 0.0, brilliant 0.9 -> brainy 0.0, smooth 0.4 -> bland -0.17)."""
    a, b = polarity(original), polarity(substitute)
    return a * b > 0 or (abs(a) < margin and abs(b) < margin)


@lru_cache(maxsize=65536)
def zipf(word: str) -> float:
    """``word``'s frequency on the Zipf scale (log10 of uses per billion words; 0 when unseen): 'make'
    6.1, 'result' 5.2, 'sake' 4.4, 'handwriting' 3.6, 'festivity' 2.5."""
    return float(import_extra("wordfreq").zipf_frequency(word, "en"))
