"""``<out>/<attack>_examples.md``: the first successful perturbations of an attack run, for review.

One numbered entry per success (in example order): id, gold label, prediction before → after,
similarity (when measured), queries, then the original text with the changed words struck
(``~~old~~``) above the adversarial text with the new words in bold (``**new**``); a pair's
untouched premise comes first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from srnet.evaluation.attacks import AttackOutcome
from srnet.evaluation.attacks.resources.text import Words
from srnet.io import atomic_write_text
from srnet.tasks.base import Example

_MARKDOWN = re.compile(r"([\\`*_~\[\]<>|#])")


def write_examples(path: Path, summary: dict, examples: Sequence[Example], outcomes: Sequence[AttackOutcome],
                   names: Sequence[str], limit: int) -> Path:
    """Write the first ``limit`` successful ``outcomes`` of ``examples`` (``summary``: the run's)."""
    return atomic_write_text(path, render_examples(summary, examples, outcomes, names, limit))


def render_examples(summary: dict, examples: Sequence[Example], outcomes: Sequence[AttackOutcome],
                    names: Sequence[str], limit: int) -> str:
    """The Markdown of :func:`write_examples`."""
    hits = [(ex, o) for ex, o in zip(examples, outcomes, strict=True) if o.result == "successful"]
    lines = [f"# {summary['attack']} examples", "", _header(summary, min(limit, len(hits)), limit), ""]
    for number, (example, outcome) in enumerate(hits[:limit], 1):
        lines += _entry(number, example, outcome, names)
    return "\n".join(lines) + "\n"


def _header(summary: dict, shown: int, limit: int) -> str:
    """Model, attack and its parameters, split, the success count, and how many entries follow."""
    params = ", ".join(f"{k}={v}" for k, v in summary["params"].items())
    counts = (f"{summary['successful']} successful, {summary['failed']} failed, {summary['skipped']} skipped "
              f"of {summary['total']} examples")
    note = f"the first {shown} below" if shown == limit else f"only {shown} to show ({limit} asked for)"
    return (f"Model `{summary['model']}`, attack `{summary['attack']}` ({params}), split "
            f"`{summary['split']}`: {counts}; {note}.")


def _entry(number: int, example: Example, outcome: AttackOutcome, names: Sequence[str]) -> list[str]:
    """One list item: the facts on a line, then premise (pairs), original and adversarial text."""
    facts = [f"`{example.id}`", f"gold {names[outcome.gold]}",
             f"{names[outcome.pred_before]} → {names[outcome.pred_after]}"]
    if outcome.similarity is not None:
        facts.append(f"similarity {outcome.similarity:.3f}")
    facts.append(f"{outcome.queries} queries")
    struck, bold = highlight(outcome.original, outcome.perturbed, outcome.changed_words)
    lines = [f"{number}. " + " · ".join(facts)]
    if example.text_b is not None:
        lines.append(f"   - premise: {escape(example.text_a)}")
    return [*lines, f"   - original: {struck}", f"   - adversarial: {bold}"]


def highlight(original: str, perturbed: str, changed: Sequence[int]) -> tuple[str, str]:
    """``original`` with the ``changed`` words as ``~~old~~`` and ``perturbed`` with them as ``**new**``
    (Markdown-escaped; word indices as :meth:`Words.split` counts them)."""
    return _mark(original, changed, "~~"), _mark(perturbed, changed, "**")


def _mark(text: str, indices: Sequence[int], wrap: str) -> str:
    words = Words.split(text)
    marked = Words(tuple(escape(w) for w in words.words), tuple(escape(s) for s in words.seps))
    for i in indices:
        if i < len(marked.words):
            marked = marked.replace(i, f"{wrap}{marked.words[i]}{wrap}")
    return marked.text


def escape(text: str) -> str:
    """``text`` with Markdown's emphasis, code, link, table and heading characters backslash-escaped."""
    return _MARKDOWN.sub(r"\\\1", text)
