"""Data formats behind one registry: how a file of each is read, where it keeps its fields, and
the label scheme its splits are scored under.

A format declares its *layout* (how :mod:`srnet.tasks.readers` reads it: ``jsonl``, ``csv``,
``tsv``, ``txt``, ``txt_paragraphs``, or the non-file sources ``hub`` and ``synthetic``), its
default columns, and, for a challenge set's own format, the challenge set whose label scheme its
labels follow (HANS files hold two-way entailment/non-entailment labels, so a ``hans`` split is
scored as the task's ``hans`` challenge set unless the recipe says otherwise).  ``format: auto``
picks a format from the file name (:attr:`DataFormat.file_pattern`) or its suffix.  Adding a
format is one :func:`register_format` call here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath

from srnet.registry import Registry

ColumnMap = Mapping[str, tuple[str, ...]]
"""srnet field -> file columns to try in order (``text_a``, ``text_b``, ``label``, ``id`` or meta)."""

JSONL_SUFFIXES = (".jsonl", ".json")
LAYOUTS = ("jsonl", "csv", "tsv", "txt", "txt_paragraphs", "hub", "synthetic")
HANS_FILE = re.compile(r"heuristics_(?P<part>\w+?)_set\.txt")
"""The file names of the HANS release (``heuristics_evaluation_set.txt``...)."""


@dataclass(frozen=True)
class DataFormat:
    """A named data format: its layout, default columns and the label scheme of its splits."""

    name: str
    layout: str
    """How the file is read (one of :data:`LAYOUTS`); ``hub`` and ``synthetic`` are not files."""
    columns: ColumnMap = field(default_factory=dict)
    """Default columns; they override the task's."""
    challenge: str | None = None
    """The challenge set whose label scheme this format's labels follow (a key of
    ``Task.challenge_sets``, e.g. ``hans``); a split of it is scored so unless it names another.
    None: the task's own labels."""
    suffixes: tuple[str, ...] = ()
    """File suffixes that select this format under ``format: auto``."""
    file_pattern: re.Pattern[str] | None = None
    """File names that select this format under ``format: auto`` (before any suffix)."""
    jsonl_by_suffix: bool = False
    """Whether a ``.jsonl``/``.json`` file of this format is read as JSON Lines, whatever
    ``layout`` says (a format published both ways)."""

    @property
    def source(self) -> str:
        """What a recipe's split of this format names: ``path``, ``hub`` or ``synthetic``."""
        return self.layout if self.layout in ("hub", "synthetic") else "path"

    def layout_of(self, path: PurePath) -> str:
        """The layout a file of this format is read with."""
        if self.jsonl_by_suffix and path.suffix.lower() in JSONL_SUFFIXES:
            return "jsonl"
        return self.layout


FORMATS: Registry[DataFormat] = Registry("data format")


def register_format(fmt: DataFormat) -> DataFormat:
    """Add ``fmt`` to :data:`FORMATS` (ValueError for a duplicate name or an unknown layout)."""
    if fmt.layout not in LAYOUTS:
        raise ValueError(f"data format '{fmt.name}': unknown layout '{fmt.layout}'; known: {list(LAYOUTS)}")
    return FORMATS.add(fmt.name, fmt)


def file_formats() -> list[str]:
    """The formats read from a file (not the hub or the generator), in registration order."""
    return [name for name, fmt in FORMATS.items() if fmt.source == "path"]


def detect_format(path: str) -> str:
    """The format of ``path`` under ``format: auto``: by file name, then by suffix."""
    file = PurePath(path)
    for fmt in FORMATS.values():
        if fmt.file_pattern is not None and fmt.file_pattern.fullmatch(file.name):
            return fmt.name
    for fmt in FORMATS.values():
        if file.suffix.lower() in fmt.suffixes:
            return fmt.name
    raise ValueError(
        f"cannot tell the format of '{path}' from its suffix; set format "
        f"(one of {', '.join(file_formats())})"
    )


register_format(DataFormat("jsonl", "jsonl", suffixes=JSONL_SUFFIXES))
register_format(DataFormat("csv", "csv", suffixes=(".csv",)))
register_format(DataFormat("tsv", "tsv", suffixes=(".tsv",)))
register_format(DataFormat("txt", "txt", suffixes=(".txt",)))
register_format(DataFormat("txt_paragraphs", "txt_paragraphs"))
register_format(DataFormat("glue_mnli", "tsv", columns={
    "text_a": ("sentence1",), "text_b": ("sentence2",), "label": ("gold_label",),
    "id": ("pairID",), "genre": ("genre",),
}))
register_format(DataFormat("glue_qqp", "tsv", columns={
    "text_a": ("question1",), "text_b": ("question2",), "label": ("is_duplicate",), "id": ("id",),
}))
register_format(DataFormat("hans", "tsv", columns={
    "text_a": ("sentence1", "premise"), "text_b": ("sentence2", "hypothesis"),
    "label": ("gold_label", "label"), "id": ("pairID",), "heuristic": ("heuristic",),
    "subcase": ("subcase",), "template": ("template",),
}, challenge="hans", file_pattern=HANS_FILE, jsonl_by_suffix=True))
register_format(DataFormat("paws", "tsv", columns={
    "text_a": ("sentence1",), "text_b": ("sentence2",), "label": ("label",), "id": ("id",),
}))
register_format(DataFormat("fever", "jsonl", columns={
    "text_a": ("claim",), "text_b": ("evidence", "sentence2"), "label": ("label", "gold_label"),
    "id": ("id",),
}))
register_format(DataFormat("hub", "hub"))
register_format(DataFormat("synthetic", "synthetic"))
