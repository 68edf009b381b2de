"""benchmarks/compress_table.py pairs each seed's compressed model with its reference and checks
the pre-registered targets on every seed; collect_results.py keeps the compress records."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys

import pytest

from conftest import REPO


def script(name: str):
    """benchmarks/<name>.py as a module (its sibling imports resolved from benchmarks/)."""
    if str(REPO / "benchmarks") not in sys.path:
        sys.path.insert(0, str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def script_output(name: str, argv: list[str], monkeypatch) -> list[str]:
    """The lines ``benchmarks/<name>.py`` prints when run with ``argv``."""
    monkeypatch.setattr(sys, "argv", [f"{name}.py", *argv])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        script(name).main()
    return out.getvalue().splitlines()


def figures(id_acc: float, hard: float) -> dict:
    return {"id": id_acc, "hard": hard, "easy": 0.9, "challenge": {"hans": {"accuracy": 0.5, "gap": 0.1}},
            "charswap_aua": 0.4}


def write_seed(folder, seed: int, shipped_hard: float, speedup: float, name: str = "fast",
               **extra) -> None:
    stage = folder / name / f"key{seed}"
    stage.mkdir(parents=True)
    (stage / "stage.json").write_text(json.dumps({"stage": name, "grid": {"seed": seed}}))
    record = {"level": 0.6, "passed": shipped_hard >= 0.60 and speedup >= 2, "config": {"speedup": 2.0},
              "sizing": {"curve": [{"level": 0.5, "speedup": 1.9}, {"level": 0.6, "speedup": 2.2}]},
              "speed": {"speedup": speedup}, "elapsed_s": 3600, "peak_rss_mb": 2048,
              "gates": [{"line": "PASS speed"}],
              "figures": {"dense": figures(0.68, 0.57), "teacher": figures(0.66, 0.60),
                          "student": figures(0.66, shipped_hard), "shipped": figures(0.66, shipped_hard)},
              **extra}
    (stage / "compress.json").write_text(json.dumps(record))
    (stage / "sizing.json").write_text(json.dumps(record["sizing"]))


def test_the_paired_differences_and_targets_are_per_seed(tmp_path, monkeypatch):
    for seed, hard, speedup in ((1, 0.61, 2.2), (2, 0.62, 2.3), (3, 0.59, 1.9)):
        write_seed(tmp_path / "runs", seed, hard, speedup)
    collected = script("collect_results").collect(tmp_path / "runs", tmp_path / "results")
    assert collected == 9  # stage.json, compress.json, sizing.json per seed
    monkeypatch.setattr(sys, "argv", ["compress_table.py", str(tmp_path / "results")])
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        script("compress_table").main()
    lines = printed.getvalue().splitlines()
    assert "| hard | +1.0, +2.0, -1.0 | 0.7 ± 1.5 | >= +0.0 | no |" in lines
    assert "| ID | +0.0, +0.0, +0.0 | 0.0 ± 0.0 | >= -0.5 | yes |" in lines
    assert "| speed-up | 2.20x, 2.30x, 1.90x | 2.13 ± 0.21x | >= 2.0x | no |" in lines
    assert "2 of 3 seed(s) passed every gate" in lines


def test_another_compress_stage_has_its_own_rows_and_page_block(tmp_path, monkeypatch):
    for seed in (1, 2, 3):
        write_seed(tmp_path, seed, 0.60, 2.2)
        write_seed(tmp_path, seed, 0.63, 2.5, name="lever", dropped_layers=[4, 5])
    page = tmp_path / "page.md"
    page.write_text("<!-- compress_table -->\nold\n<!-- /compress_table -->\n"
                    "<!-- compress_table lever -->\nold\n<!-- /compress_table lever -->\n")
    argv = ["compress_table.py", str(tmp_path), "--stage", "lever", "--page", str(page)]
    monkeypatch.setattr(sys, "argv", argv)
    with contextlib.redirect_stdout(io.StringIO()):
        script("compress_table").main()
    text = page.read_text()
    assert text.startswith("<!-- compress_table -->\nold\n")  # the default stage's block is untouched
    assert "| hard | +3.0, +3.0, +3.0 | 3.0 ± 0.0 | >= +0.0 | yes |" in text
    assert "2.50x, 2.50x, 2.50x" in text and "2.20x" not in text
    assert "| 1 | 60% (layers 4, 5 removed) | 2.50x |" in text


def test_two_arms_are_paired_by_seed_and_their_references_compared(tmp_path, monkeypatch):
    """``--against``: one arm's shipped model minus another's, per seed both finished, and whether
    each seed's reference scored the same in both (the same teacher)."""
    for seed, hard in ((1, 0.62), (2, 0.63), (3, 0.64)):
        write_seed(tmp_path, seed, hard, 2.2, name="long")
    for seed in (1, 2):
        write_seed(tmp_path, seed, 0.60, 2.2, name="short")
        record = tmp_path / "short" / f"key{seed}" / "compress.json"
        moved = json.loads(record.read_text())
        moved["figures"]["teacher"]["run"] = f"short/key{seed}/stages/teacher"  # another folder, same figures
        record.write_text(json.dumps(moved))
    argv = ["--stage", "long", "--against", "short"]
    lines = script_output("compress_table", [str(tmp_path), *argv], monkeypatch)
    assert "| shipped − short's shipped (seeds 1, 2) | per seed | mean ± std |" in lines
    assert "| hard | +2.00, +3.00 | 2.50 ± 0.71 |" in lines and "| ID | +0.00, +0.00 | 0.00 ± 0.00 |" in lines
    assert "| the same reference's figures | yes, yes | |" in lines
    record = tmp_path / "short" / "key2" / "compress.json"
    changed = json.loads(record.read_text())
    changed["figures"]["teacher"]["hard"] = 0.61  # another teacher on seed 2
    record.write_text(json.dumps(changed))
    lines = script_output("compress_table", [str(tmp_path), *argv], monkeypatch)
    assert "| the same reference's figures | yes, no | |" in lines
    with pytest.raises(SystemExit, match="--against none: no seed finished in both stages"):
        script_output("compress_table", [str(tmp_path), "--stage", "long", "--against", "none"], monkeypatch)


def test_compressions_run_by_hand_are_found_by_their_seed_folders(tmp_path, monkeypatch):
    """``srnet compress`` run by hand per seed (no sweep, so no stage.json): ``<stage>/s<seed>/``."""
    for seed, hard in ((1, 0.61), (2, 0.58), (3, 0.60)):
        write_seed(tmp_path, seed, hard, 2.4, name="byhand")
        (tmp_path / "byhand" / f"key{seed}" / "stage.json").unlink()
        (tmp_path / "byhand" / f"key{seed}").rename(tmp_path / "byhand" / f"s{seed}")
    (tmp_path / "byhand" / "notes").mkdir()  # not a seed folder: ignored
    (tmp_path / "byhand" / "notes" / "compress.json").write_text("{}")
    monkeypatch.setattr(sys, "argv", ["compress_table.py", str(tmp_path), "--stage", "byhand"])
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        script("compress_table").main()
    assert "| hard | +1.0, -2.0, +0.0 | -0.3 ± 1.5 | >= +0.0 | no |" in printed.getvalue().splitlines()


MNLI_PAGE = "docs/studies/compress_mnli_cpu.md"
SYNTHETIC_PAGE = "docs/studies/compress_synthetic.md"


@pytest.mark.parametrize("study, page, stage, controls, rescored", [
    ("compress_mnli_cpu", MNLI_PAGE, "fast", None, []),
    ("compress_mnli_cpu", MNLI_PAGE, "fast_int8", "compress_int8_control", []),
    ("compress_mnli_cpu", MNLI_PAGE, "fast_int8", None, ["compress_int8pc", "compress_int8emb"]),
    ("compress_synthetic_kd", SYNTHETIC_PAGE, "fast_pc_none", None, []),
    ("compress_synthetic_kd_eager", SYNTHETIC_PAGE, "fast_pc_none_eager", None, []),
    ("compress_synthetic_default", SYNTHETIC_PAGE, "fast_default", None, []),
    ("compress_mnli_cpu_intel", MNLI_PAGE, "fast_int8pc", None, [])])
def test_the_study_page_block_is_the_scripts_output_on_the_committed_records(
        monkeypatch, study, page, stage, controls, rescored):
    import re

    results = REPO / "results" / study
    if not list(results.glob(f"{stage}/*/compress.json")):
        pytest.skip(f"no finished {stage} compress stage committed yet")
    argv = ["compress_table.py", str(results), "--stage", stage]
    if controls:
        argv += ["--controls", str(REPO / "results" / controls)]
    if rescored:
        argv += ["--rescored", *(str(REPO / "results" / folder) for folder in rescored)]
    monkeypatch.setattr(sys, "argv", argv)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        script("compress_table").main()
    page = (REPO / page).read_text()
    name = "compress_table" if stage == "fast" else f"compress_table {stage}"
    name += " rescored" if rescored else ""
    block = re.search(rf"<!-- {name} -->\n```text\n(.*?)\n```\n<!-- /{name} -->", page, re.S)
    assert block is not None and block.group(1) == printed.getvalue().rstrip()


def control_metrics(id_acc: float, hard: float) -> dict:
    """A run record as ``srnet evaluate`` writes it, with the measures the controls read."""
    mnli = {"accuracy": id_acc, "easy_hard": {"hard": hard, "easy": 0.8, "gap": 0.1}}
    return {"id": {"mnli_dev_matched": mnli, "snli_dev": {"accuracy": 0.6}},
            "ood": {"hans": {"accuracy": 0.5}}}


def write_runs(folder, runs: dict[str, dict]) -> None:
    """One run folder per name under ``folder``, holding its ``metrics.json``."""
    for name, record in runs.items():
        (folder / name).mkdir(parents=True)
        (folder / name / "metrics.json").write_text(json.dumps(record))


def test_controls_are_paired_by_seed_and_judged_only_with_three(tmp_path, monkeypatch):
    for seed, hard in ((1, 0.61), (2, 0.62), (3, 0.60)):
        write_seed(tmp_path / "results", seed, hard, 2.5)
    controls = tmp_path / "controls"
    runs = {f"teacher_onnx-int8_s{seed}": control_metrics(id_acc, hard)
            for seed, (id_acc, hard) in {1: (0.65, 0.60), 2: (0.655, 0.61), 3: (0.65, 0.59)}.items()}
    runs["poe_kd_onnx-int8_s1"] = control_metrics(0.67, 0.62)
    write_runs(controls, runs)
    argv = ["compress_table.py", str(tmp_path / "results"), "--controls", str(controls)]
    monkeypatch.setattr(sys, "argv", argv)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        script("compress_table").main()
    lines = printed.getvalue().splitlines()
    as_int8 = "dense PoE as INT8: no cut, no more training"
    assert f"| {as_int8} | ID | +1.00, +0.50, +1.00 | 0.83 ± 0.29 | positive |" in lines
    assert f"| {as_int8} | hard | +1.00, +1.00, +1.00 | 1.00 ± 0.00 | positive |" in lines
    matched = "the same, as INT8: the compute-matched control"
    assert f"| {matched} | hard | -1.00 | -1.00 | pending (fewer than 3 seeds) |" in lines


def test_a_run_that_is_not_a_named_control_is_refused(tmp_path, monkeypatch):
    write_seed(tmp_path / "results", 1, 0.61, 2.5)
    write_runs(tmp_path / "controls", {"mystery": control_metrics(0.6, 0.6)})
    monkeypatch.setattr(sys, "argv", ["compress_table.py", str(tmp_path / "results"),
                                      "--controls", str(tmp_path / "controls")])
    with pytest.raises(SystemExit, match="mystery: not a run of this table"):
        script("compress_table").main()


def test_rescored_runs_are_paired_with_the_reference_and_the_fp32_student(tmp_path, monkeypatch):
    for seed, hard in ((1, 0.61), (2, 0.62), (3, 0.60)):
        write_seed(tmp_path / "results", seed, hard, 2.5)  # reference hard 0.60, student = shipped
    rescored = tmp_path / "rescored"
    write_runs(rescored, {f"pc_s{seed}": control_metrics(0.66, hard)
                          for seed, hard in ((1, 0.62), (2, 0.61), (3, 0.595))})
    argv = ["compress_table.py", str(tmp_path / "results"), "--rescored", str(rescored)]
    monkeypatch.setattr(sys, "argv", argv)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        script("compress_table").main()
    lines = printed.getvalue().splitlines()
    row = "per-channel INT8 (srnet's int8-per-channel mode) (1, 2, 3)"
    assert f"| {row} | reference | hard | +2.00, +1.00, -0.50 | 0.83 ± 1.26 | >= +0.0 | no |" in lines
    assert f"| {row} | FP32 student | hard | +1.00, -1.00, -0.50 | -0.17 ± 1.04 |  |  |" in lines
    assert f"| {row} | shipped | hard | +1.00, -1.00, -0.50 | -0.17 ± 1.04 |  |  |" in lines
    assert f"| {row} | reference | ID | +0.00, +0.00, +0.00 | 0.00 ± 0.00 | >= -0.5 | yes |" in lines


def test_recovery_table_pairs_each_arm_with_the_baseline_by_seed(tmp_path, monkeypatch):
    """benchmarks/recovery_table.py: shipped - reference per seed, then arm - baseline on the seeds
    both have, with each arm's student-stage minutes from its stage events."""
    for seed, hard in ((1, 0.58), (2, 0.59), (3, 0.60)):
        write_seed(tmp_path / "base", seed, hard, 2.2, name="deep")
    for seed, hard in ((1, 0.60), (2, 0.62)):
        write_seed(tmp_path / "cand", seed, hard, 2.2, name="layers")
        events = tmp_path / "cand" / "layers" / f"key{seed}" / "stages" / "events.jsonl"
        events.parent.mkdir()
        student = {"stage": "student", "key": "k"}
        events.write_text(
            json.dumps({"time": "2026-12-07T16:00:00+00:00", "event": "start", **student}) + "\n"
            + json.dumps({"time": "2026-12-07T16:04:30+00:00", "event": "done", **student}) + "\n")
    lines = script_output("recovery_table", ["--baseline", f"{tmp_path / 'base'}:deep",
                                             "--arm", f"{tmp_path / 'cand'}:layers"], monkeypatch)
    assert "| hard | -2.0, -1.0, +0.0 | -1.0 ± 1.0 | - |  |" in lines
    assert "| hard | +0.0, +2.0 | 1.0 ± 1.4 | 2.5 ± 0.7 | +2.0, +3.0 |" in lines
    assert "levels: 60%, 60%; student stage: 4.5, 4.5 min; passed every gate: 2 of 2" in lines
