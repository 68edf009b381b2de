"""A character-level attack in the style of DeepWordBug (Gao et al. 2018)."""

from __future__ import annotations

import string

import numpy as np
from pydantic import Field

from srnet.evaluation.attacks.base import Attack, Candidate, FractionBudget, register_attack
from srnet.evaluation.attacks.resources.text import Words

LETTERS = string.ascii_lowercase


class CharSwapParams(FractionBudget):
    """DeepWordBug: one character edit per word, a few random variants of each edit kind."""

    per_op: int = Field(
        2, ge=1, description="Random variants per edit kind (swap, substitute, delete, insert) per word."
    )


def char_edits(word: str, per_op: int, rng: np.random.Generator) -> list[str]:
    """Distinct one-edit variants of ``word``: swap two neighbours, substitute, delete, insert."""
    n = len(word)
    out: list[str] = []
    for _ in range(per_op):
        if n >= 2:
            i = int(rng.integers(n - 1))
            out.append(word[:i] + word[i + 1] + word[i] + word[i + 2 :])
        i = int(rng.integers(n))
        out.append(word[:i] + LETTERS[int(rng.integers(26))] + word[i + 1 :])
        if n >= 2:
            i = int(rng.integers(n))
            out.append(word[:i] + word[i + 1 :])
        i = int(rng.integers(n + 1))
        out.append(word[:i] + LETTERS[int(rng.integers(26))] + word[i:])
    return [w for w in dict.fromkeys(out) if w != word]


@register_attack("charswap")
class CharSwap(Attack):
    """Greedy word importance, then swap / substitute / delete / insert one character per word."""

    params_model = CharSwapParams
    params: CharSwapParams

    def candidates(
        self, original: Words, current: Words, index: int, rng: np.random.Generator
    ) -> list[Candidate]:
        word = current.words[index]
        return [Candidate(current.replace(index, w)) for w in char_edits(word, self.params.per_op, rng)]
