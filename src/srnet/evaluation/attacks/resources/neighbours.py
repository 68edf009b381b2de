"""Where substitutes come from: WordNet synonyms, fixed pre-trained embedding neighbours, a table.

A source maps a word and its Penn tag to substitutes already in the word's form (``movies`` ->
``films``): the word's lemma for its part of speech, the source's lemmas, inflected back to the tag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Protocol

import torch

from srnet.evaluation.attacks.resources.inflection import inflections, lemma
from srnet.evaluation.attacks.resources.pos import wordnet_pos
from srnet.evaluation.attacks.resources.wordnet import WordNet
from srnet.models.loading import load_tokenizer, resolve_model_name


class Neighbours(Protocol):
    """Where substitutes for a word come from."""

    def __call__(self, word: str, tag: str) -> list[str]:
        """Substitutes for lower-case ``word`` with Penn ``tag``, in its form, best first, never ``word``."""


class SynonymTable:
    """A fixed word -> substitutes table, used as given whatever the tag (tests, or a user's own list)."""

    def __init__(self, table: Mapping[str, Sequence[str]]) -> None:
        self.table = {k.lower(): [w.lower() for w in v] for k, v in table.items()}

    def __call__(self, word: str, tag: str) -> list[str]:
        return [w for w in self.table.get(word.lower(), []) if w != word.lower()]


class WordNetSynonyms:
    """Synonyms from the ``senses`` most frequent WordNet senses of the word's lemma and part of speech."""

    def __init__(self, wordnet: WordNet, senses: int = 2, mutual: int | None = None) -> None:
        self.wordnet, self.senses, self.mutual = wordnet, senses, mutual

    def __call__(self, word: str, tag: str) -> list[str]:
        pos = wordnet_pos(tag)
        if pos is None:
            return []
        own = lemma(word, pos) or word
        return inflections(self.wordnet.synonyms(own, pos, self.senses, self.mutual), tag, word)


@lru_cache(maxsize=2)
def input_embeddings(name: str) -> tuple[tuple[str, ...], torch.Tensor]:
    """The whole-word vocabulary entries of model ``name`` (lower-case letters, 2 or more) and their
    unit-norm input embeddings."""
    from transformers import AutoModel

    tokenizer = load_tokenizer(name)
    ids = sorted(i for t, i in tokenizer.get_vocab().items() if t.isalpha() and t.islower() and len(t) > 1)
    model = AutoModel.from_pretrained(resolve_model_name(name))
    weight = model.get_input_embeddings().weight.detach().float().cpu()[ids]
    return tuple(tokenizer.convert_ids_to_tokens(ids)), torch.nn.functional.normalize(weight, dim=1)


class EmbeddingNeighbours:
    """The ``k`` nearest whole words (cosine >= ``min_cos``) in the input embeddings of the fixed
    pre-trained model ``name`` (the same for every attacked model), kept when lemminflect knows them as
    the word's part of speech and their lemma is a WordNet lemma of it, not the word's, not its opposite."""

    def __init__(self, wordnet: WordNet, name: str = "default", k: int = 15, min_cos: float = 0.5) -> None:
        self.words, self.vectors = input_embeddings(name)
        self.row = {w: n for n, w in enumerate(self.words)}
        self.wordnet, self.k, self.min_cos = wordnet, k, min_cos

    def nearest(self, word: str) -> list[str]:
        """The vocabulary entries nearest to ``word``, best first (none when it is not one)."""
        row = self.row.get(word)
        if row is None:
            return []
        cos = self.vectors @ self.vectors[row]
        cos[row] = -1.0
        values, order = cos.topk(self.k)
        return [self.words[int(i)] for v, i in zip(values, order, strict=True) if float(v) >= self.min_cos]

    def __call__(self, word: str, tag: str) -> list[str]:
        pos = wordnet_pos(tag)
        if pos is None:
            return []
        own = lemma(word, pos) or word
        lemmas = dict.fromkeys(lemma(n, pos, guess=False) for n in self.nearest(word))
        kept = [m for m in lemmas if m is not None and m != own and self.wordnet.senses(m, pos)
                and not self.wordnet.opposed(own, m, pos)]
        return inflections(kept, tag, word)


class CounterFittedNeighbours:
    """TextFooler's substitutes: the ``k`` nearest words (cosine >= ``min_cos``) of the word itself in a
    counter-fitted space (:mod:`srnet.evaluation.attacks.resources.counterfit`), in the forms the space holds
    (movies -> films), never a WordNet opposite of the word (any sense, by lemma); with
    ``wordnet_kin``, only words WordNet also relates to it (a shared synset in any sense, or an
    adjective's similar-to cluster)."""

    def __init__(self, space, wordnet: WordNet, k: int = 50, min_cos: float = 0.5,
                 wordnet_kin: bool = False) -> None:
        self.space, self.wordnet, self.k, self.min_cos = space, wordnet, k, min_cos
        self.wordnet_kin = wordnet_kin

    def __call__(self, word: str, tag: str) -> list[str]:
        pos = wordnet_pos(tag)
        if pos is None:
            return []
        own = lemma(word, pos) or word
        kin = self.wordnet.kin(own, pos) if self.wordnet_kin else None
        return [n for n in self.space.nearest(word, self.k, self.min_cos)
                if not self.wordnet.opposed(own, lemma(n, pos) or n, pos)
                and (kin is None or (lemma(n, pos) or n) in kin)]


class Union:
    """Substitutes from several sources, first source first, without repeats."""

    def __init__(self, *sources: Neighbours) -> None:
        self.sources = sources

    def __call__(self, word: str, tag: str) -> list[str]:
        return list(dict.fromkeys(w for source in self.sources for w in source(word, tag)))
