"""Word vectors for bias features: a backbone's own input embeddings, or a text vector file.

Both sources answer ``embed(words) -> [len(words), dim]`` and cache every word they have
looked up.  A word without a vector gets the zero vector.

* :class:`EmbeddingWordVectors` (the default): a word's vector is the mean of the input
  embeddings of its word pieces under the backbone's own tokenizer (any model name
  ``srnet.models.loading.load_tokenizer`` accepts, ``default`` included).
* :class:`FileWordVectors`: the fastText/GloVe text format, one ``word v1 v2 ...`` per line
  with an optional fastText header line ``count dim``.  The file is scanned on demand for the
  words asked for, so a multi-gigabyte file never has to fit in memory.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from srnet.errors import SrnetError


class WordVectors(ABC):
    """A cached word -> vector lookup; unknown words map to zeros."""

    def __init__(self) -> None:
        self._cache: dict[str, np.ndarray | None] = {}

    @property
    @abstractmethod
    def dim(self) -> int:
        """Vector width."""

    @abstractmethod
    def _lookup(self, words: list[str]) -> dict[str, np.ndarray]:
        """Vectors for those of ``words`` that the source knows."""

    def embed(self, words: Iterable[str]) -> np.ndarray:
        """Vectors [len(words), dim] (float32) in the order of ``words``."""
        words = list(words)
        missing = [w for w in dict.fromkeys(words) if w not in self._cache]
        if missing:
            found = self._lookup(missing)
            self._cache.update({w: found.get(w) for w in missing})
        out = np.zeros((len(words), self.dim), dtype=np.float32)
        for i, word in enumerate(words):
            vector = self._cache[word]
            if vector is not None:
                out[i] = vector
        return out


class EmbeddingWordVectors(WordVectors):
    """Mean input embedding of a word's pieces under a backbone's tokenizer."""

    def __init__(self, model_name: str = "default") -> None:
        super().__init__()
        from transformers import AutoModel

        from srnet.models.loading import load_tokenizer, resolve_model_name

        self.model_name = model_name
        self._tokenizer = load_tokenizer(model_name)  # SrnetError when the model is unreachable
        try:
            model = AutoModel.from_pretrained(resolve_model_name(model_name))
        except (OSError, ValueError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise SrnetError(f"cannot load the embeddings of model '{model_name}': {first}") from exc
        self._table = model.get_input_embeddings().weight.detach().float().cpu().numpy()

    @property
    def dim(self) -> int:
        return int(self._table.shape[1])

    def _lookup(self, words: list[str]) -> dict[str, np.ndarray]:
        # A leading space gives byte-level BPE tokenizers (RoBERTa) the in-sentence pieces.
        pieces = self._tokenizer([" " + w for w in words], add_special_tokens=False)["input_ids"]
        return {w: self._table[ids].mean(axis=0) for w, ids in zip(words, pieces, strict=True) if ids}


class FileWordVectors(WordVectors):
    """Vectors from a fastText/GloVe text file (``word v1 v2 ...``; optional ``count dim`` header)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        if not self.path.is_file():
            raise SrnetError(f"word-vector file {self.path} does not exist")
        self._dim, self._first_line = self._read_layout()

    @property
    def dim(self) -> int:
        return self._dim

    def _read_layout(self) -> tuple[int, int]:
        """(dim, 1-based number of the first vector line), from the header or first line."""
        with self.path.open(encoding="utf-8", errors="replace") as f:
            first = f.readline().rstrip("\n").split()
        if not first:
            raise SrnetError(f"{self.path}:1: empty line; expected 'word v1 v2 ...' or 'count dim'")
        if len(first) == 2 and all(tok.isdigit() for tok in first):
            return int(first[1]), 2
        if len(first) < 2:
            raise SrnetError(f"{self.path}:1: no values after the word; expected 'word v1 v2 ...'")
        return len(first) - 1, 1

    def _lookup(self, words: list[str]) -> dict[str, np.ndarray]:
        """Scan the file once; every line's width is checked, only wanted words are parsed."""
        wanted = set(words)
        found: dict[str, np.ndarray] = {}
        with self.path.open(encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, start=1):
                if lineno < self._first_line or not line.strip():
                    continue
                word, values = self._split(line, lineno)
                if word in wanted:
                    found[word] = self._vector(values, lineno)
        return found

    def _split(self, line: str, lineno: int) -> tuple[str, list[str]]:
        """(word, value strings); the word may contain spaces (as some GloVe 840B words do)."""
        parts = line.split()
        n_values = len(parts) - 1
        if n_values < self._dim or (n_values > self._dim and _is_float(parts[1])):
            raise SrnetError(f"{self.path}:{lineno}: {n_values} values after the word; expected {self._dim}")
        cut = len(parts) - self._dim
        return " ".join(parts[:cut]), parts[cut:]

    def _vector(self, values: list[str], lineno: int) -> np.ndarray:
        try:
            return np.asarray(values, dtype=np.float32)
        except ValueError as exc:
            bad = next(v for v in values if not _is_float(v))
            raise SrnetError(f"{self.path}:{lineno}: value '{bad}' is not a number") from exc


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise cosine similarities [len(a), len(b)]; a zero vector has similarity 0."""
    na = np.linalg.norm(a, axis=1, keepdims=True)
    nb = np.linalg.norm(b, axis=1, keepdims=True)
    a = np.divide(a, na, out=np.zeros_like(a), where=na > 0)
    b = np.divide(b, nb, out=np.zeros_like(b), where=nb > 0)
    return a @ b.T


def load_word_vectors(source: str | Path | None, model_name: str = "default") -> WordVectors:
    """``source`` None: the backbone ``model_name``'s embeddings; else a vector file path."""
    if source is None:
        return EmbeddingWordVectors(model_name)
    return FileWordVectors(source)
