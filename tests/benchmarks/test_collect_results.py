"""benchmarks/collect_results.py: a sweep's records (with attack summaries) are kept, models are not."""

from __future__ import annotations

import importlib.util

from conftest import REPO


def test_collect_keeps_records_and_attack_summaries_but_not_models(tmp_path):
    path = REPO / "benchmarks" / "collect_results.py"
    spec = importlib.util.spec_from_file_location("collect_results", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    run = tmp_path / "runs" / "ft" / "abc"
    (run / "attack").mkdir(parents=True)
    (run / "model").mkdir()
    (run / "attack" / "f00d").mkdir()
    files = ("metrics.json", "config.yaml", "attack/charswap.json", "attack/charswap.jsonl", "model/w.bin",
             "attack/f00d/charswap.json", "attack/f00d/charswap.jsonl")  # the second: a sweep stage's
    for name in files:
        (run / name).write_text(name)
    (tmp_path / "runs" / "unfinished").mkdir()
    assert module.collect(tmp_path / "runs", tmp_path / "results") == 4
    kept = sorted(str(p.relative_to(tmp_path / "results")) for p in (tmp_path / "results").rglob("*.*"))
    assert kept == ["ft/abc/attack/charswap.json", "ft/abc/attack/f00d/charswap.json", "ft/abc/config.yaml",
                    "ft/abc/metrics.json"]
    summary = tmp_path / "results" / "ft" / "abc" / "attack" / "charswap.json"
    assert summary.read_text() == "attack/charswap.json"
