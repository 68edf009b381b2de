"""A word-substitution attack in the style of TextFooler (Jin et al. 2020)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch
from pydantic import Field

from srnet.evaluation.attacks.base import Attack, AttackParams, Candidate, register_attack
from srnet.evaluation.attacks.neighbours import EmbeddingNeighbours, Neighbours, Union, WordNetSynonyms
from srnet.evaluation.attacks.similarity import SentenceEncoder
from srnet.evaluation.attacks.text import Words, match_case


class WordSwapParams(AttackParams):
    """TextFooler-style substitution with static neighbours and a sentence-similarity constraint."""

    neighbours: Literal["wordnet", "embedding", "both"] = Field(
        "wordnet", description="Candidate source: WordNet synonyms, the backbone's input-embedding "
        "nearest neighbours, or both."
    )
    max_candidates: int = Field(30, ge=1, description="Most substitutes tried per word.")
    embedding_k: int = Field(15, ge=1, description="Embedding neighbours looked at per word.")
    embedding_min_cos: float = Field(
        0.5, ge=-1.0, le=1.0, description="Least cosine of an embedding neighbour."
    )
    min_similarity: float = Field(
        0.8, ge=-1.0, le=1.0,
        description="Least cosine between the original and the edited field (mean-pooled sentence encoder).",
    )
    similarity_model: str = Field(
        "default", description="Sentence encoder: 'default' (all-MiniLM-L6-v2) or a path."
    )


@register_attack("wordswap")
class WordSwap(Attack):
    """Greedy word importance, then the most damaging synonym that keeps the sentence similar."""

    params_model = WordSwapParams
    params: WordSwapParams

    def __init__(
        self,
        params: WordSwapParams | None = None,
        neighbours: Neighbours | None = None,
        encoder: SentenceEncoder | None = None,
    ) -> None:
        super().__init__(params)
        self.neighbours = neighbours
        self.encoder = encoder

    def prepare(self, model: torch.nn.Module, tokenizer) -> None:
        """Build the neighbours source the params name (unless given) and the sentence encoder."""
        p = self.params
        if self.neighbours is None:
            sources: list[Neighbours] = []
            if p.neighbours in ("wordnet", "both"):
                sources.append(WordNetSynonyms())
            if p.neighbours in ("embedding", "both"):
                sources.append(EmbeddingNeighbours(model, tokenizer, p.embedding_k, p.embedding_min_cos))
            self.neighbours = sources[0] if len(sources) == 1 else Union(*sources)
        if self.encoder is None:
            self.encoder = SentenceEncoder(p.similarity_model)

    def candidates(
        self, original: Words, current: Words, index: int, rng: np.random.Generator
    ) -> list[Candidate]:
        if self.neighbours is None or self.encoder is None:
            raise RuntimeError("wordswap: call prepare(model, tokenizer) before attacking")
        word = current.words[index]
        subs = self.neighbours(word)[: self.params.max_candidates]
        edited = [current.replace(index, match_case(s, word)) for s in subs]
        if not edited:
            return []
        sims = self.encoder.similarity(original.text, [e.text for e in edited])
        return [Candidate(e, s) for e, s in zip(edited, sims, strict=True) if s >= self.params.min_similarity]
