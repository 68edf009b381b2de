"""Recorded studies keep their keys: planning each study recipe with today's code gives every
stage folder recorded under ``results/`` (the same stage, the same key), so a study resumes and
its records stay addressable after srnet gains a setting.

A new recipe, split, pruning-parameter or stage-parameter key that holds its default must leave
fingerprints unchanged; when this test fails after adding one, list it with its default in
``srnet.compat`` (or the stage params' ``added_later``), where the other later keys are.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import srnet.api  # noqa: F401  # registers every stage kind (compress), as the CLI and the API do
from srnet.experiments.sweep.plan import load_sweep, plan_sweep

REPO = Path(__file__).resolve().parents[2]
STUDIES = sorted((REPO / "recipes" / "studies").glob("*.yaml"))
RECORDED_ELSEWHERE = {"robust_tickets_3seeds_cpu": ["robust_tickets_attacks_cpu"],
                      "sparse_fast": ["sparse_fast_h200"], "sparse_fast_w7": ["sparse_fast_w7_h200"],
                      "compress_mnli_cpu": ["compress_mnli_cpu_intel"]}
"""Studies whose records (a re-run) are also kept under another results folder."""


def recorded_folders(name: str) -> list[Path]:
    return [folder for folder in (REPO / "results" / n for n in [name, *RECORDED_ELSEWHERE.get(name, [])])
            if folder.is_dir()]


def study_records() -> list[tuple[Path, Path]]:
    pairs = []
    for path in STUDIES:
        data = load_sweep(path) if "stages:" in path.read_text() else None
        if data is not None:
            pairs += [(path, folder) for folder in recorded_folders(data["name"])]
    return pairs


@pytest.mark.parametrize(("study", "results"), study_records(),
                         ids=lambda p: p.stem if p.suffix == ".yaml" else p.name)
def test_every_recorded_stage_folder_is_planned_with_its_key(study, results, caplog):
    with caplog.at_level(logging.ERROR):  # deprecation notes of old spellings are not the point
        planned = {(job.name, job.key) for job in plan_sweep(load_sweep(study), str(study))}
    recorded = {(folder.parent.name, folder.name) for folder in results.glob("*/*") if folder.is_dir()}
    assert recorded, f"{results}: no recorded stage folders"
    missing = sorted(recorded - planned)
    assert not missing, (f"{study.name}: {len(missing)} of {len(recorded)} recorded stage folders in "
                         f"{results.name} get another key now (first: {missing[0]}); a key added "
                         "later must be left out of fingerprints at its default (srnet.compat)")


def test_the_recorded_studies_are_found():
    assert len(study_records()) >= 9
