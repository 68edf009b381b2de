"""Static word neighbours for word substitution: WordNet synonyms, embedding neighbours, a table."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import torch

from srnet.errors import SrnetError

WORDNET_ENV = "SRNET_WORDNET_DIR"
WORDNET_DIRS = ("/usr/share/wordnet",)
WORDNET_FILES = ("data.noun", "data.verb", "data.adj", "data.adv")


class Neighbours(Protocol):
    """Where substitutes for a word come from."""

    def __call__(self, word: str) -> list[str]:
        """Candidate substitutes for ``word`` (lower case, best first), never ``word`` itself."""


class SynonymTable:
    """A fixed word -> substitutes table (tests, or a user's own list)."""

    def __init__(self, table: Mapping[str, Sequence[str]]) -> None:
        self.table = {k.lower(): [w.lower() for w in v] for k, v in table.items()}

    def __call__(self, word: str) -> list[str]:
        return [w for w in self.table.get(word.lower(), []) if w != word.lower()]


def wordnet_dir() -> Path:
    """The folder of WordNet's ``data.*`` files (``$SRNET_WORDNET_DIR`` or Debian's wordnet-base)."""
    for folder in ([os.environ[WORDNET_ENV]] if os.environ.get(WORDNET_ENV) else list(WORDNET_DIRS)):
        path = Path(folder)
        if all((path / name).is_file() for name in WORDNET_FILES):
            return path
    raise SrnetError(
        "WordNet data files not found (looked in "
        f"{os.environ.get(WORDNET_ENV) or ', '.join(WORDNET_DIRS)}); install Debian's package: "
        f"apt-get install wordnet-base, or set {WORDNET_ENV} to a folder holding {', '.join(WORDNET_FILES)}"
    )


@lru_cache(maxsize=2)
def read_wordnet(folder: Path) -> dict[str, tuple[str, ...]]:
    """Single-word lemma -> the other single-word lemmas of its synsets, in file order."""
    synonyms: dict[str, dict[str, None]] = {}
    for name in WORDNET_FILES:
        with open(folder / name, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("  "):  # licence header
                    continue
                fields = line.split(" ", 4)
                count = int(fields[3], 16)
                parts = fields[4].split(" ", 2 * count)
                lemmas = [parts[2 * i].split("(")[0].lower() for i in range(count)]
                words = [w for w in dict.fromkeys(lemmas) if w.isalpha()]
                for word in words:
                    synonyms.setdefault(word, {}).update(dict.fromkeys(w for w in words if w != word))
    return {word: tuple(others) for word, others in synonyms.items() if others}


class WordNetSynonyms:
    """Synonyms from WordNet's synsets (all parts of speech)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.table = read_wordnet(folder or wordnet_dir())

    def __call__(self, word: str) -> list[str]:
        return list(self.table.get(word.lower(), ()))


class EmbeddingNeighbours:
    """Nearest whole-word tokens in a model's input embeddings (cosine), above ``min_cos``."""

    def __init__(self, model: torch.nn.Module, tokenizer, k: int = 15, min_cos: float = 0.5) -> None:
        vocab = tokenizer.get_vocab()
        ids = sorted(i for t, i in vocab.items() if t.isalpha() and t.islower() and len(t) > 1)
        self.words = [tokenizer.convert_ids_to_tokens(i) for i in ids]
        self.index = {w: n for n, w in enumerate(self.words)}
        weight = model.get_input_embeddings().weight.detach().float().cpu()[ids]
        self.vectors = torch.nn.functional.normalize(weight, dim=1)
        self.k, self.min_cos = k, min_cos

    def __call__(self, word: str) -> list[str]:
        row = self.index.get(word.lower())
        if row is None:
            return []
        cos = self.vectors @ self.vectors[row]
        cos[row] = -1.0
        values, order = cos.topk(self.k)
        return [self.words[int(i)] for v, i in zip(values, order, strict=True) if float(v) >= self.min_cos]


class Union:
    """Substitutes from several sources, first source first, without repeats."""

    def __init__(self, *sources: Neighbours) -> None:
        self.sources = sources

    def __call__(self, word: str) -> list[str]:
        return list(dict.fromkeys(w for source in self.sources for w in source(word)))
