"""Natural language inference (MNLI, SNLI) and its HANS challenge set."""

from __future__ import annotations

from srnet.tasks.base import LabelSpace
from srnet.tasks.spec import LabelScheme, Shortcut, Task

NLI_LABELS = ("entailment", "neutral", "contradiction")
"""Model class order; GLUE/HF integer labels 0, 1, 2 follow it."""

HANS_LABELS = ("entailment", "non-entailment")

HANS = LabelScheme(
    space=LabelSpace(
        HANS_LABELS,
        from_model={
            "entailment": "entailment",
            "neutral": "non-entailment",
            "contradiction": "non-entailment",
        },
    ),
    metric="accuracy",
    aliases={"0": "entailment", "1": "non-entailment", "non_entailment": "non-entailment"},
    columns={"heuristic": ("heuristic",), "subcase": ("subcase",), "template": ("template",)},
    groups={"by_heuristic": ("heuristic",), "by_subcase": ("subcase",)},
    shortcut=Shortcut(
        heuristics=("lexical_overlap", "subsequence", "constituent"),
        follows="entailment",
        against="non-entailment",
    ),
    prediction_file="hans",
)
"""HANS (McCoy et al. 2019): 3-way predictions collapse to entailment vs non-entailment."""

NLI_COLUMNS = {
    "text_a": ("premise", "sentence1"),
    "text_b": ("hypothesis", "sentence2"),
    "label": ("label", "gold_label"),
    "id": ("pairID", "id", "idx"),
    "genre": ("genre",),
}

TASK = Task(
    name="nli",
    labels=NLI_LABELS,
    columns=NLI_COLUMNS,
    aliases={"0": "entailment", "1": "neutral", "2": "contradiction"},
    primary_metric="accuracy",
    challenge_sets={"hans": HANS},
    description="3-way NLI (MNLI/SNLI); challenge: HANS",
)
