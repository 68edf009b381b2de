"""Fact verification (FEVER) and its FEVER-Symmetric challenge set."""

from __future__ import annotations

from srnet.tasks.base import LabelSpace
from srnet.tasks.spec import LabelScheme, Task

FEVER_LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")

FEVER_SYMMETRIC = LabelScheme(
    space=LabelSpace(
        ("SUPPORTS", "REFUTES"), from_model={"SUPPORTS": "SUPPORTS", "REFUTES": "REFUTES"}
    ),
    metric="accuracy",
)
"""FEVER-Symmetric (Schuster et al. 2019) has no NOT ENOUGH INFO class: the model's argmax is
taken over SUPPORTS and REFUTES only."""

TASK = Task(
    name="factver",
    labels=FEVER_LABELS,
    columns={
        "text_a": ("claim",),
        "text_b": ("evidence", "sentence2"),
        "label": ("label", "gold_label"),
        "id": ("id",),
    },
    aliases={"NEI": "NOT ENOUGH INFO", "NOT_ENOUGH_INFO": "NOT ENOUGH INFO"},
    primary_metric="accuracy",
    challenge_sets={"fever_symmetric": FEVER_SYMMETRIC},
    description="3-way claim verification against evidence (FEVER); challenge: FEVER-Symmetric",
)
