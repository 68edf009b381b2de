"""The srnet command end to end on tiny models, and its one-line errors on bad input."""

from __future__ import annotations

import json
import re

import pytest

from srnet.cli import main


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_info(capsys):
    code, out, _ = run_cli(capsys, "info")
    info = json.loads(out)
    assert code == 0
    assert info["packages"]["torch"].startswith("2.13")
    assert info["default_model_path"].endswith("model")
    # the CPU is recorded beside the versions: bf16 / int8 kernels differ between CPUs
    from srnet.machine import cpu_model
    assert info["cpu"] == cpu_model() and info["cpu"]


TINY_DEMO = ["--set", "data.train.synthetic.n=32", "--set", "data.dev.synthetic.n=16",
             "--set", "data.challenge.0.synthetic.n=24", "--set", "training.max_steps=2",
             "--set", "training.batch_size=8", "--set", "model.max_length=32"]


def test_demo_shows_dense_vs_subnetworks_reruns_resumes_and_overwrites(
    capsys, monkeypatch, tmp_path, tiny_model_dir
):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the sweep's worker process: one torch thread
    argv = ["demo", "--output-dir", str(tmp_path), "--set", f"model.name={tiny_model_dir}", *TINY_DEMO]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    for stage in ("[1/4] done bias_model", "[2/4] done ft", "[3/4] done control", "[4/4] done prune"):
        assert stage in out
    table = out[out.index("synthetic_nli:"):]
    rows = [re.split(r"\s{2,}", line) for line in table.splitlines() if line.startswith(("dense/", "mask_"))]
    assert [r[:3] for r in rows] == [["dense/ce", "0.0%", "1"], ["mask_train/ce (a)", "50.0%", "1"],
                                     ["mask_train/poe (a)", "50.0%", "1"]]  # measured sparsity
    assert all(len(r) == 10 for r in rows)  # ID, easy, hard, E-H, OOD, gap, abs gap
    assert "E-H synthetic_dev" in table and "abs gap synthetic_challenge" in table
    assert "ID synthetic_dev" in table and "(report.md: both rules)" in table
    assert "synthetic_challenge: collapse rule 'sum'" in table
    demo = tmp_path / "demo"
    assert f"report: {demo / 'report' / 'report.md'}" in out
    report = (demo / "report" / "report.md").read_text()
    assert "- mask_train/poe (a): ../prune/" in report and "- dense/ce: ../ft/" in report
    figures = sorted(p.name for p in (demo / "report").glob("*.png"))
    assert "s1_vs_sparsity.png" in figures and len(figures) >= 3
    prunes = [json.loads(p.read_text()) for p in demo.glob("*/*/metrics.json")]
    prunes = [m for m in prunes if "mask_movement" in m]
    assert sorted(round(m["sparsity"]["overall"], 2) for m in prunes) == [0.5, 0.5]
    assert all(m["selection"]["rule"] == "last" for m in prunes)
    assert all("name: poe" in p.read_text() for p in demo.glob("prune/*/config.yaml"))
    assert all("name: ce" in p.read_text() for p in demo.glob("control/*/config.yaml"))
    summary = (demo / "summary.txt").stat().st_mtime_ns
    for extra in ([], ["--resume"]):  # a finished demo: its result again, nothing recomputed
        code, again, _ = run_cli(capsys, *argv, *extra)
        assert code == 0 and again == out[out.index("synthetic_nli:"):]
    assert (demo / "summary.txt").stat().st_mtime_ns == summary
    (demo / "summary.txt").unlink()  # as if killed after its stages, before the report
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and "pass --resume to continue it or --overwrite" in err
    code, resumed, _ = run_cli(capsys, *argv, "--resume")
    assert code == 0 and "start" not in resumed and "report:" in resumed  # no stage ran again
    code, _, _ = run_cli(capsys, *argv, "--overwrite")
    assert code == 0 and (demo / "summary.txt").stat().st_mtime_ns != summary
    assert len(list(demo.glob("prune/*/metrics.json"))) == 1


def test_demo_seeds_prints_mean_and_std(capsys, monkeypatch, tmp_path, tiny_model_dir):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    argv = ["demo", "--output-dir", str(tmp_path), "--set", f"model.name={tiny_model_dir}", *TINY_DEMO]
    code, out, err = run_cli(capsys, *argv, "--seeds", "2")
    assert code == 0, err
    assert "done prune seed=1" in out and "done prune seed=42" in out
    rows = [re.split(r"\s{2,}", line) for line in out.splitlines() if line.startswith(("dense/", "mask_"))]
    assert [r[2] for r in rows] == ["2", "2", "2"] and all("±" in r[3] for r in rows)
    assert (tmp_path / "demo_seeds2" / "summary.txt").is_file()
    code, _, err = run_cli(capsys, *argv, "--seeds", "0")
    assert code == 2 and "demo --seeds: 0 is not between 1 and 10" in err


def test_finetune_predict_evaluate_export_masks(capsys, tmp_path, tiny_model_dir):
    data = tmp_path / "data"
    data.mkdir()
    rows = [("the cat sat on the mat", "a cat sat", "entailment"),
            ("a dog ran in the park", "the dog is asleep", "contradiction"),
            ("the man read a book", "the man read a novel by a famous author", "neutral")] * 8
    for name in ("train", "dev"):
        (data / f"{name}.jsonl").write_text("".join(
            json.dumps({"premise": p, "hypothesis": h, "label": y}) + "\n" for p, h, y in rows))
    runs = str(tmp_path / "runs")
    common = ["--task", "nli", "--dev", str(data / "dev.jsonl"), "--output-dir", runs]
    code, out, err = run_cli(capsys, "finetune", "--model", str(tiny_model_dir), "--train",
                             str(data / "train.jsonl"), "--name", "ft", *common,
                             "--set", "training.max_steps=3")
    assert code == 0, err
    code, out, err = run_cli(capsys, "predict", f"{runs}/ft", "--split", "train")
    assert code == 0, err
    assert len((tmp_path / "runs/ft/predictions/train.jsonl").read_text().splitlines()) == 24
    code, out, err = run_cli(capsys, "evaluate", f"{runs}/ft", *common, "--name", "ev",
                             "--set", "pruning.method=omp", "--set", "pruning.sparsity=0.3")
    assert code == 0, err
    code, out, err = run_cli(capsys, "evaluate", f"{runs}/ft", *common, "--name", "omp",
                             "--set", "pruning.method=omp", "--set", "pruning.sparsity=0.3",
                             "--set", "data.train=null")
    assert code == 0, err
    code, out, err = run_cli(capsys, "masks", "show", f"{runs}/omp", "--plot", str(tmp_path / "h.png"))
    assert code == 0, err
    overall = float(out.split("overall sparsity=")[1].split()[0])
    assert overall == pytest.approx(0.3, abs=1e-3) and (tmp_path / "h.png").stat().st_size > 0
    code, out, err = run_cli(capsys, "masks", "compare", f"{runs}/omp", f"{runs}/omp")
    assert code == 0 and "1.0000" in out
    code, out, err = run_cli(capsys, "export", "--model", f"{runs}/ft", "--masks", f"{runs}/omp",
                             "--out", str(tmp_path / "exported"))
    assert code == 0, err
    assert (tmp_path / "exported" / "model.safetensors").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "missing.yaml"], "recipe file not found"),
        (["demo", "--set", "training.lrr=1"], "training.lrr: unknown key"),
        (["demo", "--set", "task=nope"], "unknown task 'nope'"),
        (["demo", "--set", "pruning.method=omp", "--set", "pruning.sparsity=1.5"], "1.5"),
        (["demo", "--set", "pruning.method=magic"], "pruning.method: unknown method 'magic'"),
        (["demo", "--set", "ft.loss.name=nope"], "unknown loss 'nope'"),
        (["demo", "--set", "model.name=/no/such/model"], "model '/no/such/model' not found"),
        (["demo", "--set", "control.loss.name=conf_reg"], "needs loss.teacher"),
        (["demo", "--set", "prune.pruning.method=magic"], "pruning.method: unknown method 'magic'"),
        (["masks", "show", "nowhere.safetensors"], "nowhere.safetensors"),
    ],
)
def test_bad_input_is_one_line_and_nonzero(capsys, tmp_path, tiny_model_dir, argv, message):
    if argv[0] == "demo":  # the tiny demo, then the case's own settings (a later --set wins)
        argv = ["demo", "--output-dir", str(tmp_path), "--set", f"model.name={tiny_model_dir}", *TINY_DEMO,
                *argv[1:]]
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    assert message in err
    lines = err.splitlines()  # the error, after at most srnet's one-line notes (a fresh head)
    assert lines[-1].startswith("error: ") and sum(line.startswith("error: ") for line in lines) == 1
    assert all(line.startswith(("error: ", "new classifier head")) for line in lines), err


def test_bad_data_file_names_file_and_line(capsys, tmp_path, tiny_model_dir):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"premise": "a", "hypothesis": "b", "label": "entailment"}\n{"premise": "a", "hyp\n')
    code, _, err = run_cli(capsys, "finetune", "--model", str(tiny_model_dir), "--task", "nli",
                           "--train", str(bad), "--output-dir", str(tmp_path / "runs"))
    assert code == 2
    assert f"{bad}:2" in err
    assert not (tmp_path / "runs").exists()
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text('{"premise": "a", "hypothesis": "b", "label": "maybe"}\n')
    code, _, err = run_cli(capsys, "finetune", "--model", str(tiny_model_dir), "--task", "nli",
                           "--train", str(unknown), "--output-dir", str(tmp_path / "runs"))
    assert code == 2 and "maybe" in err and f"{unknown}:1" in err


def test_demo_on_real_data_dir(capsys, monkeypatch, tmp_path, tiny_model_dir, shared_data):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    code, out, err = run_cli(
        capsys, "demo", "--data-dir", str(shared_data), "--output-dir", str(tmp_path),
        "--set", f"model.name={tiny_model_dir}", "--set", "data.train.n=60", "--set", "data.dev.n=30",
        "--set", "data.challenge.0.n=60", "--set", "training.max_steps=2", "--set", "model.max_length=48",
    )
    assert code == 0, err
    assert "hans: collapse rule 'sum'" in out and "(report.md: both rules)" in out
    [ft] = (tmp_path / "demo_mnli" / "ft").glob("*/metrics.json")
    metrics = json.loads(ft.read_text())
    assert metrics["id"]["mnli_dev_matched"]["n"] == 30
    hans = metrics["ood"]["hans"]
    assert hans["n"] == 60
    assert set(hans["by_heuristic"]) == {"lexical_overlap", "subsequence", "constituent"}
    assert "by_subcase" in hans
    for stage in ("control", "prune"):
        assert len(list((tmp_path / "demo_mnli" / stage).glob("*/metrics.json"))) == 1
    assert "easy_hard" in metrics["id"]["mnli_dev_matched"]  # the demo's bias model gives the split


def test_demo_data_dir_missing_files(capsys, tmp_path):
    code, _, err = run_cli(capsys, "demo", "--data-dir", str(tmp_path))
    assert code == 2 and "mnli/train.jsonl" in err


@pytest.mark.parametrize("failure", [KeyboardInterrupt, RuntimeError])
def test_demo_overwrite_keeps_the_earlier_demo_until_the_new_one_exists(
    monkeypatch, tmp_path, tiny_model_dir, failure
):
    from srnet import api

    demo = tmp_path / "demo"
    (demo / "report").mkdir(parents=True)
    (demo / "report" / "report.md").write_text("the earlier demo")

    def interrupted(*args, **kwargs):
        assert not demo.exists() or not (demo / "report").exists()  # set aside while running
        raise failure("stopped")

    monkeypatch.setattr("srnet.experiments.sweep.execute.execute", interrupted)
    overrides = [f"model.name={tiny_model_dir}", *TINY_DEMO[1::2]]
    with pytest.raises(failure):
        api.demo(output_dir=tmp_path, overrides=overrides, overwrite=True)
    assert (demo / "report" / "report.md").read_text() == "the earlier demo"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo"]


def test_help_lists_the_registries_without_importing_them_to_build_the_parser(capsys):
    import subprocess
    import sys

    from srnet.evaluation.attacks import available_attacks
    from srnet.tasks import task_names

    probe = "import sys; from srnet.cli import build_parser; build_parser(); print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
    for argv, names in ((["attack", "--help"], available_attacks()), (["finetune", "--help"], task_names())):
        with pytest.raises(SystemExit):
            main(argv)
        listed = " ".join(capsys.readouterr().out.split())
        assert ", ".join(names) in listed, argv


def test_predict_output_never_replaces_a_file_it_did_not_create(capsys, tmp_path, tiny_model_dir):
    from conftest import tiny_recipe
    from srnet import api

    run = api.run(tiny_recipe(tmp_path, tiny_model_dir, "r")).run_dir
    record = (run / "metrics.json").read_bytes()
    for extra in ([], ["--overwrite"]):
        own = str(run / "metrics.json")
        assert main(["predict", str(run), "--split", "dev", "--output", own, *extra]) == 2
    assert "a run's own record" in capsys.readouterr().err
    other = tmp_path / "notes.txt"
    other.write_text("mine")
    assert main(["predict", str(run), "--split", "dev", "--output", str(other)]) == 2
    assert "already exists; pass --overwrite" in capsys.readouterr().err and other.read_text() == "mine"
    assert main(["predict", str(run), "--split", "dev", "--output", str(other), "--overwrite"]) == 0
    assert (run / "metrics.json").read_bytes() == record
    capsys.readouterr()
    config = run / "model" / "config.json"  # a swapped label map is not predicted with
    config.write_text(config.read_text().replace('"entailment"', '"contradiction"', 1))
    assert main(["predict", str(run), "--split", "dev", "--output", str(other), "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert "config.json" in err and len(err.strip().splitlines()) == 1 and other.read_text() != "mine"
