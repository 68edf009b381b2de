"""Binary sentiment classification of single sentences (SST-2, IMDB)."""

from __future__ import annotations

from srnet.tasks.spec import Task

TASK = Task(
    name="sentiment",
    labels=("negative", "positive"),
    columns={"text_a": ("sentence", "text"), "label": ("label",), "id": ("id", "idx")},
    aliases={"0": "negative", "1": "positive", "neg": "negative", "pos": "positive"},
    primary_metric="accuracy",
    description="2-way sentiment of one text (SST-2, IMDB)",
)
