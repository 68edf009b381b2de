"""Assemble ``report.md`` from the registered sections in their fixed order."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from srnet.errors import SrnetError
from srnet.io import atomic_write_text, check_creatable
from srnet.reporting.runs import Run, find_runs, load_run, split_grid_points
from srnet.reporting.stats import cohorts, group_runs
from srnet.reporting.study.base import (
    Part,
    RunSet,
    SetSection,
    Study,
    StudySection,
    display,
    figure_lines,
    ordered,
    relative,
)
from srnet.rundir import locks

log = logging.getLogger("srnet.reporting")

INTRO = (
    "Cells are mean ± sample std over the runs of a configuration (seeds); n is the number of runs. "
    "Metrics are fractions (0.9 = 90%); each split's column is its primary metric; gap = shortcut "
    "gap (accuracy on the label the shortcut predicts minus on the other, over the shortcut's "
    "heuristics); F_bias = the relative ID-OOD drop over the dense CE model's (against the mean "
    "dense CE model of the section when it has one, else the run's own dense_reference). easy / "
    "hard / E-H: accuracy on the ID examples the bias model gets right / wrong, and their "
    "difference (Gururangan et al. 2018; RMC paper section 4). † k/n: k of the n runs put >= 95% of "
    "their predictions on that split in one class (collapsed): their challenge accuracy and gap "
    "are no robustness, and figures leave out the gap points of configurations that collapsed with "
    "a gap <= 0 (onto the label against the shortcut, which would read as a gap reduction). † on an "
    "ID column: runs at chance there (accuracy within 5 points of the majority class's share, or "
    "one class): the model was lost. mask flipped / mask jaccard: the fraction of a learned mask's "
    "entries that left its start, and the Jaccard similarity of its kept entries with its start's "
    "(above 0.99 the mask did not move)."
)


@dataclass
class Report:
    """What :func:`write_report` wrote: the Markdown file, its figures, the tables it printed and
    any further files (a study section's table on its own)."""

    path: Path
    figures: list[Path] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    def add(self, part: Part) -> None:
        self.figures += [path for _, path in part.figures]
        self.tables += part.tables
        self.files += part.files


def readable_runs(paths: Sequence[Path], skipped: list[str]) -> list[Run]:
    """The runs at ``paths`` that read; each one that does not is logged in one line, its reason
    appended to ``skipped``, and left out (one damaged run does not abort a report)."""
    runs = []
    for path in paths:
        try:
            runs.append(load_run(path))
        except SrnetError as exc:
            log.warning("report: skipped %s", exc)
            skipped.append(str(exc))
    return runs


TITLE = "# srnet report"
"""The first line of every report srnet writes (what it may rewrite without ``--overwrite``)."""


def write_report(paths: Sequence[str | Path], out: str | Path, *, figures: bool = True,
                 overwrite: bool = False) -> Report:
    """Find the complete runs under ``paths`` and write ``out/report.md`` plus PNG figures
    (tables only with ``figures=False``): every registered section that applies, in order.
    ``out`` is locked while it is written; a ``report.md`` there that srnet did not write is
    replaced only with ``overwrite``."""
    out = Path(out)
    skipped: list[str] = []
    runs = split_grid_points(readable_runs(
        [p for p in find_runs(paths) if out.resolve() not in p.resolve().parents], skipped))
    if not runs:
        raise SrnetError(f"{', '.join(map(str, paths))}: no complete runs (no metrics.json under it)")
    check_report_folder(out, overwrite)
    busy = f"{out}: another srnet report is writing there; wait for it or give another --out"
    with locks.holding(out, ".report.lock", busy):
        return _write_report(paths, out, runs, skipped, figures)


def check_report_folder(out: Path, overwrite: bool) -> None:
    """``out`` is a folder (or can be one) whose ``report.md``, if any, is an srnet report."""
    if out.exists() and not out.is_dir():
        raise SrnetError(f"--out {out}: is a file; give a folder for report.md and its figures")
    check_creatable(out, "--out")
    target = out / "report.md"
    if overwrite or not target.exists():
        return
    try:
        first = target.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
    except OSError as exc:
        raise SrnetError(f"{target}: unreadable ({exc.strerror}); pass --overwrite to replace it") from None
    if first != TITLE:
        raise SrnetError(f"{target}: exists and is not an srnet report; pass --overwrite to replace it")


def _write_report(paths: Sequence[str | Path], out: Path, runs: list[Run], skipped: list[str],
                  figures: bool) -> Report:
    comparable = [s for s in cohorts(runs) if s.id_splits or s.ood_splits]
    found = [RunSet(i, s, group_runs(s)) for i, s in enumerate(comparable, 1)]
    study = Study([Path(p) for p in paths], out, runs, found, figures)
    report = Report(out / "report.md")
    unscored = len(runs) - sum(len(s.runs) for s in comparable)
    lines = [TITLE, "",
             f"{len(runs) - unscored} complete runs in {len(found)} section(s) of comparable runs (same "
             f"task, same evaluation splits and sizes). {INTRO}"]
    if skipped:
        lines += ["", f"{len(skipped)} run(s) skipped, unreadable: " + "; ".join(skipped)]
    if unscored:
        lines += ["", f"{unscored} further run(s) have no evaluation split (e.g. raw-text mask searches): "
                  "they appear only in the sections below that read them."]
    set_sections = ordered(SetSection)
    for run_set in found:
        parts = [s.render(study, run_set) for s in set_sections if s.applies(study, run_set)]
        lines += ["", f"## {run_set.index}. {run_set.cohort.title}", ""]
        for part in parts:
            lines += part.lines
            report.add(part)
        drawn = [figure for part in parts for figure in part.figures]
        if drawn:
            lines += ["### Figures", "", *figure_lines(drawn)]
        lines += ["### Runs", ""]
        for group in run_set.groups:
            where = ", ".join(relative(run.path, out) for run in group.runs)
            lines.append(f"- {display(group)}: {where}")
    for section in ordered(StudySection):
        if section.applies(study):
            part = section.render(study)
            lines += ["", *part.lines, "", *figure_lines(part.figures)]
            report.add(part)
    atomic_write_text(report.path, "\n".join(lines).rstrip("\n") + "\n")
    return report
