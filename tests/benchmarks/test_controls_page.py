"""The controls study's page states the committed records: its table block is exactly what
benchmarks/controls_table.py prints for results/controls_cpu, and the README's sentence about the
decisive pairs carries their current paired means."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import statistics
import sys

from conftest import REPO

RESULTS = REPO / "results" / "controls_cpu"


def controls_table():
    """benchmarks/controls_table.py as a module."""
    spec = importlib.util.spec_from_file_location("controls_table", REPO / "benchmarks" / "controls_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_block_is_the_scripts_output_on_the_committed_records(monkeypatch):
    table = controls_table()
    monkeypatch.setattr(sys, "argv", ["controls_table.py", str(RESULTS)])
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        table.main()
    page = (REPO / "docs" / "studies" / "controls_cpu.md").read_text()
    block = re.search(r"<!-- controls_table -->\n```text\n(.*?)\n```\n<!-- /controls_table -->", page, re.S)
    assert block is not None
    assert block.group(1) == printed.getvalue().rstrip()


def test_the_page_states_the_decisive_pairs_as_recorded():
    table = controls_table()
    runs = table.load(RESULTS)
    readme = " ".join((REPO / "docs" / "studies" / "controls_cpu.md").read_text().split())
    pairs = (("u70_all", "c_dense_kd", "the 70% SRNet"), ("s50_omp", "c_poe_kd", "the structured 50% one"))
    for row, control, what in pairs:
        seeds = sorted(set(runs[row]) & set(runs[control]))
        diffs = [table.values(runs[control][s])["hard"] - table.values(runs[row][s])["hard"] for s in seeds]
        spread = f" ± {statistics.stdev(diffs):.1f}" if len(diffs) > 1 else ""
        assert f"{statistics.mean(diffs):.1f}{spread} hard above {what}" in readme, (row, control)


def test_a_head_matrix_is_on_target_within_half_a_head_and_a_neuron_matrix_within_two_points():
    off_target = controls_table().off_target
    thirty = {"target": 0.3, "per_matrix": {"layer.0.heads": 4 / 12, "layer.0.neurons": 0.3}}
    assert off_target(thirty) is None
    assert off_target({"target": 0.3, "per_matrix": {"layer.0.heads": 5 / 12}}) == (
        "layer.0.heads at 0.417, off its target 0.3")
    assert off_target({"target": 0.3, "per_matrix": {"layer.0.neurons": 0.33}}) == (
        "layer.0.neurons at 0.330, off its target 0.3")
    assert off_target({}) is None
