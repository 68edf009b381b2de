"""Paraphrase identification (QQP) and its PAWS challenge set."""

from __future__ import annotations

from srnet.tasks.base import LabelSpace
from srnet.tasks.spec import LabelScheme, Task

PARAPHRASE_LABELS = ("not_paraphrase", "paraphrase")
_ALIASES = {"0": "not_paraphrase", "1": "paraphrase", "not_duplicate": "not_paraphrase",
            "duplicate": "paraphrase"}

PAWS = LabelScheme(
    space=LabelSpace(PARAPHRASE_LABELS), metric="weighted_f1", aliases=_ALIASES
)
"""PAWS (Zhang et al. 2019): same two classes, scored by weighted F1."""

TASK = Task(
    name="paraphrase",
    labels=PARAPHRASE_LABELS,
    columns={
        "text_a": ("sentence1", "question1"),
        "text_b": ("sentence2", "question2"),
        "label": ("label", "is_duplicate"),
        "id": ("id", "idx"),
    },
    aliases=_ALIASES,
    primary_metric="weighted_f1",
    challenge_sets={"paws": PAWS},
    description="2-way paraphrase identification (QQP); challenge: PAWS",
)
