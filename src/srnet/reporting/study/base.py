"""The report-section registry and what sections share: the study (runs found, their sets of
comparable runs, where the report goes), one set, a section's rendered part, and table helpers.

A section is one class registered with ``@register_section("name")``; it decides from the runs
whether it :meth:`applies` and :meth:`renders <SetSection.render>` a :class:`Part` (Markdown
lines, figures it drew, tables for the console, further files it wrote).  Two scopes:

* :class:`SetSection`: once per set of comparable runs (same task, same evaluation splits and
  sizes: :func:`srnet.reporting.stats.cohorts`), under that set's ``## i.`` heading; its
  lines go to the set's body, its figures to the set's ``### Figures`` list.
* :class:`StudySection`: once per report, after the sets, for results that join runs of several
  sets or files beside the runs (a sweep's ``bench.json``): it writes its own ``##`` heading.

Sections run in ``order`` (then name), so the report's layout is fixed whatever the import order.
"""

from __future__ import annotations

import os
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from srnet.registry import Registry
from srnet.reporting.render import Panel, format_table, plot_sparsity_curves
from srnet.reporting.runs import LABEL_DEFAULTS, LABELS, Run
from srnet.reporting.stats import Cohort, Group, Stat, collapsed_runs


@dataclass
class RunSet:
    """One set of comparable runs: its number in the report, the runs, their configurations."""

    index: int
    cohort: Cohort
    groups: list[Group]

    @property
    def prefix(self) -> str:
        """The prefix of the set's figure files (``s1``, ``s2``, ...)."""
        return f"s{self.index}"


@dataclass
class Study:
    """What a report is written from: the paths given, the complete runs under them, the sets."""

    paths: list[Path]
    out: Path
    runs: list[Run]
    sets: list[RunSet]
    figures: bool = True
    """Whether sections draw figures (``srnet report --no-figures``: tables only)."""


@dataclass
class Part:
    """What one section adds to the report."""

    lines: list[str] = field(default_factory=list)
    """Markdown, joined with newlines (a table string ends with its own newline)."""
    figures: list[tuple[str, Path]] = field(default_factory=list)
    """(caption, file) of every figure the section drew, in the order to show them."""
    tables: list[str] = field(default_factory=list)
    """Tables ``srnet report`` also prints."""
    files: list[Path] = field(default_factory=list)
    """Further files the section wrote beside report.md (e.g. a study's table on its own)."""

    @classmethod
    def with_table(cls, heading: str, note: str, table: str) -> Part:
        """A ``### heading``, its note and its table (also printed by ``srnet report``)."""
        return cls(lines=[f"### {heading}", "", note, "", table + "\n"], tables=[table])

    def add_curves(self, panels: list[Panel], path: Path, caption: str, **plot) -> None:
        """Draw ``panels`` against sparsity (or ``plot``'s x axis) to ``path``, shown with ``caption``."""
        plot_sparsity_curves(panels, path, **plot)
        self.figures.append((caption, path))


class ReportSection(ABC):
    """One part of ``srnet report``; subclass :class:`SetSection` or :class:`StudySection`."""

    name: ClassVar[str]
    order: ClassVar[int] = 100
    """Position in the report (lower first; ties by name)."""


class SetSection(ReportSection):
    """A section rendered once per set of comparable runs."""

    @abstractmethod
    def applies(self, study: Study, runs: RunSet) -> bool:
        """Whether the set has what this section shows."""

    @abstractmethod
    def render(self, study: Study, runs: RunSet) -> Part:
        """Markdown (and figures under ``study.out``, named with ``runs.prefix``) for the set."""


class StudySection(ReportSection):
    """A section rendered once per report, after the sets."""

    @abstractmethod
    def applies(self, study: Study) -> bool:
        """Whether the runs (or the folders given) have what this section shows."""

    @abstractmethod
    def render(self, study: Study) -> Part:
        """Markdown from ``## heading`` on (and figures or files under ``study.out``)."""


SECTIONS: Registry[type[ReportSection]] = Registry("report section")
register_section = SECTIONS.register
"""Class decorator: make a report section part of every ``srnet report`` under a unique name."""


def ordered(scope: type[ReportSection]) -> list[ReportSection]:
    """Instances of the registered sections of ``scope`` in report order."""
    classes = [cls for cls in SECTIONS.values() if issubclass(cls, scope)]
    return [cls() for cls in sorted(classes, key=lambda cls: (cls.order, cls.name))]


def display(group: Group, *, method: bool = True, sparsity: bool = False) -> str:
    """A configuration's name in tables and legends (without the method: the dense references)."""
    name = group.name if method else group.name.split("/", 1)[1]
    if sparsity and group.labels["method"] != "dense":
        name += f" {group.labels['sparsity']:.0%}"
    return name


def stats_table(groups: list[Group], columns: list[str], *, headers: dict[str, str] | None = None,
                digits: int = 4) -> str:
    """One row per configuration: its labels, n and each column's mean ± std (collapse-marked)."""
    extra = list(dict.fromkeys(k for g in groups for k in g.labels if k not in LABELS))
    headers = headers or {}
    rows = []
    for group in groups:
        row: dict[str, object] = {k: group.labels.get(k, "-") for k in ("method", "loss", "paradigm")}
        row["sparsity"] = f"{group.labels['sparsity']:.0%}"
        row |= {k: group.labels.get(k, LABEL_DEFAULTS.get(k, "-")) for k in extra}
        counts = [group.stats[c].n for c in columns if c in group.stats]
        row["n"] = max(counts) if headers and counts else len(group.runs)  # attack tables: runs attacked
        row |= {headers.get(c, c): marked(group, c, cell(group.stats.get(c), digits)) for c in columns}
        rows.append(row)
    shown = [headers.get(c, c) for c in columns]
    return format_table(rows, ["method", "loss", "paradigm", "sparsity", *extra, "n", *shown], markdown=True)


def marked(group: Group, column: str, text: str | None) -> str | None:
    """``text`` with the collapse mark of the OOD split the column belongs to."""
    split = column.removeprefix("abs gap ").removeprefix("gap ")
    return None if text is None else text + collapsed_runs(group, split)


def cell(stat: Stat | None, digits: int = 4) -> str | None:
    """``mean ± std`` (``mean`` alone for one run), None when missing."""
    if stat is None:
        return None
    return f"{stat.mean:.{digits}f}" + (f" ± {stat.std:.{digits}f}" if stat.std is not None else "")


def figure_lines(figures: list[tuple[str, Path]]) -> list[str]:
    """Markdown of drawn figures: the image, then its caption in italics."""
    lines: list[str] = []
    for caption, path in figures:
        lines += [f"![{caption}]({path.name})", "", f"*{caption}*", ""]
    return lines


def slug(text: str) -> str:
    """``text`` as a file-name part."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")


def relative(path: Path, out: Path) -> str:
    """``path`` relative to the report folder (as report.md links it)."""
    return os.path.relpath(path.resolve(), out.resolve())


SHORT_SPLITS = {"sst2_dev": "sst2", "mnli_dev_matched": "mnli_m"}
"""Column names of well-known evaluation splits in the study tables (others keep their name)."""


def short(split: str) -> str:
    """A study table's column name for an evaluation split."""
    return SHORT_SPLITS.get(split, split)


def locate(path: str | Path, root: Path, depth: int = 2) -> Path | None:
    """A run (or export) folder a study file names: the path as written when it exists, else the
    same last ``depth`` parts (``<stage>/<key>``) under the study folder ``root``, which finds a
    sweep that was moved or written from another working directory; None when neither exists."""
    path = Path(path)
    if path.exists():
        return path
    parts = [p for p in path.parts if p not in ("", "/")]
    moved = root.joinpath(*parts[-depth:]) if len(parts) >= depth else None
    return moved if moved is not None and moved.exists() else None
