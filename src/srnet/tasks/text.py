"""Raw text (task-agnostic pre-training data): documents without labels.

The ``text`` task family reads one text column per row: ``text`` by default (plain ``.txt``
files, most JSON Lines and hub corpora such as WikiText), or the column a split names with
``columns: {text_a: premise}``.  Blank documents are skipped.  Packing the documents into
fixed-length token blocks is :mod:`srnet.training.packing`'s job.
"""

from __future__ import annotations

from pathlib import Path

from srnet.errors import SrnetError
from srnet.tasks.readers import open_split
from srnet.tasks.spec import DataSpec, Task

TASK = Task(
    name="text",
    labels=(),
    columns={"text_a": ("text", "sentence", "premise")},
    primary_metric="mlm_dev_loss",
    description="raw text, no labels: task-agnostic mask training (TAMT) with mlm/distill objectives",
    run_kind="text",
)


def load_texts(spec: DataSpec, *, base_dir: str | Path | None = None) -> list[str]:
    """The non-blank documents of a text split (a ``.txt``/JSON Lines/CSV file or a hub dataset).

    The text column is ``spec.columns['text_a']`` when given, else the first of the task's
    defaults that the source has.  ``spec.n`` keeps the first ``n`` documents.
    """
    if spec.synthetic is not None:
        raise SrnetError("the text task reads files or hub datasets, not the synthetic generator")
    raw = open_split(spec, base_dir)
    candidates = (spec.columns["text_a"],) if "text_a" in spec.columns else TASK.columns["text_a"]
    unknown = set(spec.columns) - {"text_a"}
    if unknown:
        raise SrnetError(f"{raw.source}: the text task reads one column (text_a), not {sorted(unknown)}")
    texts: list[str] = []
    column: str | None = None
    for row in raw.rows:
        if column is None or column not in row.fields:
            column = next((c for c in candidates if c in row.fields), None)
            if column is None:
                names = " or ".join(f"'{c}'" for c in candidates)
                raise SrnetError(
                    f"{raw.source}:{row.line}: text column {names} not found; columns are "
                    f"{list(row.fields)} (set columns: {{text_a: COLUMN}})"
                )
        text = row.fields[column].strip()
        if text:
            texts.append(text)
        if spec.n is not None and len(texts) >= spec.n:
            break
    if not texts:
        raise SrnetError(f"{raw.source}: empty corpus (no non-blank text)")
    return texts
