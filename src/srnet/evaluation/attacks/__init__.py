"""Built-in text attacks, offline and batched.

``charswap`` (DeepWordBug-style), ``wordswap`` and ``textfooler`` (TextFooler-style) and
``strict_synonym`` (strict synonyms with a label judge).
"""

from srnet.evaluation.attacks import charswap, strict, wordswap  # noqa: F401  (registers the attacks)
from srnet.evaluation.attacks.base import (
    Attack,
    AttackOutcome,
    AttackParams,
    Candidate,
    available_attacks,
    build_attack,
    get_attack,
    register_attack,
)
from srnet.evaluation.attacks.metrics import attack_metrics
from srnet.evaluation.attacks.resources.neighbours import EmbeddingNeighbours, SynonymTable, WordNetSynonyms
from srnet.evaluation.attacks.victim import Victim

__all__ = [
    "Attack",
    "AttackOutcome",
    "AttackParams",
    "Candidate",
    "EmbeddingNeighbours",
    "SynonymTable",
    "Victim",
    "WordNetSynonyms",
    "attack_metrics",
    "available_attacks",
    "build_attack",
    "get_attack",
    "register_attack",
]
