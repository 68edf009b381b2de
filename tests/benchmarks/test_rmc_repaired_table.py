"""benchmarks/rmc_repaired_table.py: the judged row of a seed whose 70% member missed 55% MNLI-m is
the replacement's; the rule is applied over the judged rows; the page shows the script's output."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from test_compress_table import script_output

from conftest import REPO


def write_run(folder, stage, seed, accuracy, hard, gap, collapsed=False):
    run = folder / stage / f"{stage}{seed}"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump({"seed": seed}))
    split = {"accuracy": accuracy / 100, "collapsed": collapsed,
             "easy_hard": {"hard": hard / 100, "gap": gap / 100}}
    (run / "metrics.json").write_text(json.dumps({"id": {"mnli_dev_matched": split}}))


def printed(argv, monkeypatch) -> list[str]:
    return script_output("rmc_repaired_table", argv, monkeypatch)


def test_a_seed_under_the_criterion_is_judged_by_its_replacement(tmp_path, monkeypatch):
    main, spare = tmp_path / "main", tmp_path / "spare"
    for seed, imp70 in ((1, 56.0), (2, 55.5), (3, 54.0)):
        for stage in ("ft", "imp20", "imp40", "imp60"):
            write_run(main, stage, seed, 68.0, 57.0, 23.0)
        write_run(main, "imp70", seed, imp70, 41.0, 28.0)
        write_run(main, "imp85", seed, 35.0, 32.0, 5.0, collapsed=True)
        write_run(main, "imp40_rmc", seed, 67.0, 56.0, 24.0)  # -1, -1, +1 against imp40
    write_run(spare, "imp70r", 3, 61.0, 50.0, 20.0)
    write_run(spare, "imp40_rmc", 3, 68.5, 57.5, 22.0)  # +0.5, +0.5, -1
    lines = printed([str(main), "--replacement", str(spare)], monkeypatch)
    members = "| 68.00 | 68.00 | 68.00 | 68.00 | 54.00 | 35.00 (collapsed) |"
    assert f"| 3 {members} 61.00 | the replacement |" in lines
    assert ("| judged (seeds 1, 2, 3) | -1.00, -1.00, +0.50 | -0.50 ± 0.87 | level | -1.00, -1.00, +0.50 | "
            "-0.50 ± 0.87 | level | +1.00, +1.00, -1.00 | 0.33 ± 1.15 | level |") in lines
    unjudged = "| seed 3, its own 70% member (under 55%): not judged | -1.00 |"
    assert any(line.startswith(unjudged) for line in lines)
    # without the replacement, seed 3 has no judged row and the rule waits for three
    alone = printed([str(main)], monkeypatch)
    assert any(line.startswith("| judged (seeds 1, 2) | -1.00, -1.00 | -1.00 ± 0.00 | – |") for line in alone)


def test_the_study_page_block_is_the_scripts_output_on_the_committed_records(monkeypatch):
    results = REPO / "results" / "rmc_repaired_cpu"
    if not list(results.glob("imp40_rmc/*/metrics.json")):
        pytest.skip("no RMC-repaired records committed")
    replacement = REPO / "results" / "rmc_repaired_cpu_s3r"
    lines = printed([str(results), "--replacement", str(replacement)], monkeypatch)
    page = (REPO / "docs" / "studies" / "rmc_repaired_cpu.md").read_text()
    name = "rmc_repaired_table"
    block = re.search(rf"<!-- {name} -->\n```text\n(.*?)\n```\n<!-- /{name} -->", page, re.S)
    assert block is not None and block.group(1) == "\n".join(lines)
