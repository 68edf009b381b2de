"""Texts as words and separators, so an attack edits words and rebuilds the text around them."""

from __future__ import annotations

import re
from dataclasses import dataclass

WORD = re.compile(r"[^\W\d_]+(?:[-'’][^\W\d_]+)*")
"""A word: a run of letters (any script), hyphens and apostrophes inside it kept ("self-absorption",
"amélie", "isn't"); digits, underscores and everything else separate words."""
APOSTROPHE = re.compile(r"['’]")

_STOP_WORDS = """
a about above across after afterwards again against all almost alone along already also although
always am among amongst an and another any anyhow anyone anything anyway anywhere are around as at
be became because been before beforehand behind being below beside besides between beyond both but
by can cannot could couldn d didn doesn don down due during either else elsewhere empty enough even
ever everyone everything everywhere except first for former formerly from hadn has hasn haven having
he hence her here hereafter hereby herein hereupon hers herself him himself his how however hundred
i if in indeed into is isn it its itself just latter latterly least ll may me meanwhile mightn mine
more moreover most mostly must mustn my myself namely needn neither never nevertheless next no nobody
none noone nor not nothing now nowhere o of off on once one only onto or other others otherwise our
ours ourselves out over per please s same shan shouldn should so some somehow something sometime
somewhere such t than that the their theirs them themselves then thence there thereafter thereby
therefore therein thereupon these they this those through throughout thru thus to too toward towards
under unless until up upon us used ve was wasn we were weren what whatever when whence whenever where
whereafter whereas whereby wherein whereupon wherever whether which while whither who whoever whole
whom whose why with within without won would wouldn y yet you your yours yourself yourselves re m
ain aren few little less many much several
"""
STOP_WORDS = frozenset(_STOP_WORDS.split())
"""Words an attack never edits (a short English list in the spirit of TextFooler's, with the
quantifiers: "little humor" -> "small humor" changes the amount)."""


@dataclass(frozen=True)
class Words:
    """A text split into ``words`` (see :data:`WORD`) and the ``seps`` around them.

    ``text == seps[0] + words[0] + seps[1] + ... + words[-1] + seps[-1]``.
    """

    words: tuple[str, ...]
    seps: tuple[str, ...]

    @classmethod
    def split(cls, text: str) -> Words:
        words, seps, last = [], [], 0
        for match in WORD.finditer(text):
            seps.append(text[last : match.start()])
            words.append(match.group())
            last = match.end()
        seps.append(text[last:])
        return cls(tuple(words), tuple(seps))

    @property
    def text(self) -> str:
        parts = [self.seps[0]]
        for word, sep in zip(self.words, self.seps[1:], strict=True):
            parts += [word, sep]
        return "".join(parts)

    def starts(self) -> list[int]:
        """The character offset in :attr:`text` where each word starts."""
        out, at = [], 0
        for sep, word in zip(self.seps, self.words, strict=False):
            out.append(at + len(sep))
            at += len(sep) + len(word)
        return out

    def replace(self, index: int, word: str) -> Words:
        """The same text with word ``index`` replaced (an empty ``word`` deletes it)."""
        words = list(self.words)
        words[index] = word
        return Words(tuple(words), self.seps)

    def changed(self, other: Words) -> list[int]:
        """Indices of the words that differ from ``other`` (same word count)."""
        return [i for i, (a, b) in enumerate(zip(self.words, other.words, strict=True)) if a != b]

    def editable(self) -> list[int]:
        """Indices of the words an attack may edit (see :func:`editable`)."""
        return [i for i, w in enumerate(self.words) if editable(w)]

    def window(self, index: int, size: int) -> Words:
        """The ``size`` words around word ``index`` (TextAttack's window: centred, shifted to fit at the
        text's ends; all words when fewer), with the text's separators between them and at its ends."""
        n = len(self.words)
        start = max(0, min(index - (size - 1) // 2, n - size))
        end = min(n, start + size)
        first = self.seps[start] if start == 0 else ""
        last = self.seps[end] if end == n else ""
        return Words(self.words[start:end], (first, *self.seps[start + 1 : end], last))


def editable(word: str) -> bool:
    """Whether an attack may edit ``word``: its part before any apostrophe is neither a stop word nor a
    single letter (so not ``n't``, ``isn't``, ``it's``)."""
    head = APOSTROPHE.split(word.lower(), maxsplit=1)[0]
    return len(head) > 1 and head not in STOP_WORDS


def match_case(word: str, like: str) -> str:
    """``word`` in the case pattern of ``like`` (lower, Title or UPPER)."""
    if like.isupper() and len(like) > 1:
        return word.upper()
    if like[:1].isupper():
        return word[:1].upper() + word[1:]
    return word
