"""The attack interface, the greedy word-importance search both attacks share, and the registry.

An attack edits one text field of an example (the hypothesis ``text_b`` of a pair, else
``text_a``).  The search (TextAttack's greedy word-importance ranking, "delete" variant):

1. score the clean text; a wrong prediction is *skipped*;
2. score every leave-one-out text of the editable words in one batch; rank the words by how much
   their removal lowers the gold probability;
3. in that order, score all candidate edits of the word in one batch; stop at the first edit that
   flips the prediction (*successful*), else keep the edit that lowers the gold probability most;
4. stop when the words-changed budget is spent (*failed*).

Adding an attack is one class with ``@register_attack("name")``, a pydantic ``params_model`` and
``candidates``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from srnet.evaluation.attacks.resources.text import Words
from srnet.evaluation.attacks.victim import Pair, Victim
from srnet.registry import Registry

Result = Literal["successful", "failed", "skipped"]


class AttackParams(BaseModel):
    """An attack's settings (unknown keys refused). None is common to every attack: even the word
    budget is an attack's own (:class:`FractionBudget`, or a count such as ``strict_synonym``'s)."""

    model_config = ConfigDict(extra="forbid")


class FractionBudget(AttackParams):
    """A word budget as a fraction of the field's words (:meth:`Attack.budget`)."""

    max_fraction: float = Field(
        0.3, gt=0.0, le=1.0,
        description="Most words changed, as a fraction of the field's words (at least 1).",
    )


@dataclass(frozen=True)
class Candidate:
    """One edited text, with its sentence similarity to the original when the attack measures it."""

    words: Words
    similarity: float | None = None


@dataclass
class AttackOutcome:
    """What happened to one example."""

    result: Result
    original: str
    perturbed: str | None
    gold: int
    pred_before: int
    pred_after: int
    queries: int
    changed_words: list[int] = field(default_factory=list)
    similarity: float | None = None


class Attack(ABC):
    """A registered attack; ``attack(victim, pair, gold, rng)`` attacks one example."""

    name: ClassVar[str] = ""
    params_model: ClassVar[type[AttackParams]] = AttackParams

    def __init__(self, params: AttackParams | None = None) -> None:
        self.params = params if params is not None else self.params_model()

    def prepare(self, model: Any, tokenizer: Any) -> None:
        """Load what depends on the attacked model (e.g. its embedding neighbours); default none."""
        return None

    def budget(self, words: int) -> int:
        """Most words changed in a field of ``words`` words: ``max_fraction`` of them, at least 1 (an
        attack whose params are not a :class:`FractionBudget` defines its own)."""
        if not isinstance(self.params, FractionBudget):
            raise TypeError(f"{type(self).__name__}: its params have no max_fraction; define budget()")
        return max(1, math.floor(self.params.max_fraction * words))

    def resources(self) -> dict[str, Any]:
        """What the attack was built from (files, their checksums, models), for its summary."""
        return {}

    def shared(self) -> dict[str, Any]:
        """Victim-independent state, as constructor keywords, that a later attack of the same name and
        params may take (the sweep's attack stage hands it from one run to the next); default none."""
        return {}

    @abstractmethod
    def candidates(
        self, original: Words, current: Words, index: int, rng: np.random.Generator
    ) -> list[Candidate]:
        """Edits of word ``index`` of ``current`` that satisfy the attack's constraints."""

    def ready(self, task: Any, data_dir: Path | None) -> None:
        """Load and check the attack's own resources (lexicons, a label judge) for ``task`` (its
        labels), relative data paths under ``data_dir``: called before the victim loads, so bad
        input fails first.  Default: nothing."""
        return None

    def accept(self, original: Pair, edited: list[Pair], gold: int) -> list[bool]:
        """Which of the ``edited`` pairs that flip the victim count as successes (default: all); an
        attack with a label judge rejects those the judge no longer gives ``gold``."""
        return [True] * len(edited)

    def report(self) -> dict[str, Any]:
        """What the attack measured while attacking (e.g. its judge's agreement), for its summary."""
        return {}

    def beam_width(self) -> int:
        """Partial perturbations kept between words (1: TextAttack's greedy search)."""
        return 1

    def attack(self, victim: Victim, pair: Pair, gold: int, rng: np.random.Generator) -> AttackOutcome:
        """Word-importance attack on the edited field of ``pair``: greedy, or a beam of
        :meth:`beam_width` partial perturbations (the greedy search is the beam of width 1)."""
        start = victim.queries
        field_b = pair[1] is not None
        text = pair[1] if field_b else pair[0]

        def as_pair(words: Words) -> Pair:
            return (pair[0], words.text) if field_b else (words.text, None)

        clean = victim.probs([pair])[0]
        pred = int(clean.argmax())
        outcome = AttackOutcome("failed", text, None, gold, pred, pred, 0)
        if pred != gold:
            outcome.result = "skipped"
            outcome.queries = victim.queries - start
            return outcome
        original = Words.split(text)
        editable = original.editable()
        budget = self.budget(len(original.words))
        if editable:
            dropped = victim.probs([as_pair(original.replace(i, "")) for i in editable])
            order = [editable[j] for j in np.argsort(dropped[:, gold], kind="stable")]
        else:
            order = []
        beam: list[_State] = [_State(original, float(clean[gold]), None)]
        for index in order:
            open_states = [state for state in beam if len(state.words.changed(original)) < budget]
            if not open_states:
                break
            pool = list(beam)
            for state in open_states:
                options = self.candidates(original, state.words, index, rng)
                if not options:
                    continue
                probs = victim.probs([as_pair(c.words) for c in options])
                flipped = np.flatnonzero(probs.argmax(axis=1) != gold)
                if flipped.size:
                    verdicts = self.accept(pair, [as_pair(options[j].words) for j in flipped], gold)
                    valid = [int(j) for j, ok in zip(flipped, verdicts, strict=True) if ok]
                    if valid:
                        best = max(valid, key=lambda j: (options[j].similarity or 0.0, -probs[j, gold]))
                        outcome.result = "successful"
                        outcome.pred_after = int(probs[best].argmax())
                        return self._finish(outcome, options[best].words, options[best].similarity,
                                            original, victim.queries - start)
                rejected = set(flipped.tolist())
                pool += [_State(options[j].words, float(probs[j, gold]), options[j].similarity)
                         for j in range(len(options)) if j not in rejected and probs[j, gold] < state.gold]
            beam = sorted(pool, key=lambda s: s.gold)[: self.beam_width()]  # stable: a tie keeps the older
        last = beam[0]
        return self._finish(outcome, last.words, last.similarity, original, victim.queries - start)

    @staticmethod
    def _finish(outcome: AttackOutcome, words: Words, similarity: float | None, original: Words,
                queries: int) -> AttackOutcome:
        outcome.perturbed = words.text
        outcome.changed_words = words.changed(original)
        outcome.similarity = similarity
        outcome.queries = queries
        return outcome


@dataclass(frozen=True)
class _State:
    """A partial perturbation in the search: its words, gold probability and similarity."""

    words: Words
    gold: float
    similarity: float | None


ATTACKS: Registry[type[Attack]] = Registry("attack")
register_attack = ATTACKS.register
"""Class decorator that registers an :class:`Attack` under a unique name."""
available_attacks = ATTACKS.names
get_attack = ATTACKS.get


def build_attack(name: str, params: dict[str, Any] | None = None, **resources: Any) -> Attack:
    """Instantiate attack ``name`` with validated ``params`` (and resources such as a synonym table)."""
    cls = ATTACKS.get(name)
    parsed = ATTACKS.params(name, params)
    return cls(parsed, **resources) if resources else cls(parsed)
