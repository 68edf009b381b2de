"""Sweeps: grid expansion, stage reuse, failures, resume after kill -9, the Ray executor, and every
shipped sweep recipe in dry-run."""

from __future__ import annotations

import collections
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import synthetic_split as synthetic
from srnet import api
from srnet.cli import main
from srnet.errors import SrnetError
from srnet.experiments.sweep.stages import Stage, register_stage

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def one_thread_workers(monkeypatch):
    """Worker processes inherit the environment: one torch thread each, like the test process."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def sweep_file(tmp_path: Path, model, stages: dict, grid: dict, **training) -> Path:
    data = {
        "name": "t", "output_dir": str(tmp_path / "out"),
        "base": {"task": "synthetic_nli", "model": {"name": str(model), "max_length": 48},
                 "data": {"train": synthetic("train", 24), "dev": synthetic("dev", 16)},
                 "training": {"max_steps": 2, "batch_size": 8, "lr": 1e-3, **training}},
        "stages": stages, "grid": grid,
    }
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


STUDY = {
    "ft": {"kind": "train", "set": {"loss.name": "ce"}},
    "bias_model": {"kind": "bias_fit"},
    "prune": {"kind": "train", "set": {"model.init_from": "@ft", "bias_dir": "@bias_model",
                                       "dense_reference": "@ft", "pruning.method": "omp"}},
}


def plan(path, **kwargs) -> list[str]:
    lines: list[str] = []
    api.sweep(path, dry_run=True, progress=lines.append, **kwargs)
    return lines


def test_grid_expands_and_shared_stages_are_planned_once(tmp_path):
    grid = {"seed": [1, 2], "prune.pruning.sparsity": [0.3, 0.5, 0.7], "prune.loss.name": ["ce", "poe"]}
    result = api.sweep(sweep_file(tmp_path, "m", STUDY, grid), dry_run=True, progress=lambda _: None)
    count = collections.Counter(job.name for job in result.jobs)
    assert count == {"ft": 2, "bias_model": 1, "prune": 12}  # 2 seeds x 3 sparsities x 2 losses
    ft = {job.grid["seed"]: job for job in result.jobs if job.name == "ft"}
    bias = next(job for job in result.jobs if job.name == "bias_model")
    for job in (j for j in result.jobs if j.name == "prune"):
        assert job.recipe["model"]["init_from"] == str(ft[job.grid["seed"]].folder)
        assert job.recipe["bias_dir"] == str(bias.folder)
        assert set(job.deps) == {ft[job.grid["seed"]].key, bias.key}
        assert job.recipe["pruning"]["sparsity"] == job.grid["prune.pruning.sparsity"]
    order = [job.key for job in result.jobs]
    assert all(order.index(d) < order.index(job.key) for job in result.jobs for d in job.deps)
    # the folder key ignores names and paths: the same sweep elsewhere plans the same keys
    other = api.sweep(sweep_file(tmp_path / "b", "m", STUDY, grid), dry_run=True, progress=lambda _: None)
    assert [j.key for j in other.jobs] == order


def test_a_stage_listed_earlier_runs_as_soon_as_its_inputs_exist(tmp_path):
    """Plan order is the file's order, each stage after its inputs: a long control listed last
    waits behind the pair listed first even though its inputs were ready sooner."""
    stages = {"ft": {"kind": "train"},
              "pair": {"kind": "train", "set": {"model.init_from": "@ft", "pruning.method": "omp"}},
              "pair_control": {"kind": "train", "set": {"model.init_from": "@ft", "training.max_steps": 3}},
              "long_control": {"kind": "train", "set": {"training.max_steps": 4}}}
    result = api.sweep(sweep_file(tmp_path, "m", stages, {"seed": [1, 2]}), dry_run=True,
                       progress=lambda _: None)
    assert [(job.name, job.grid["seed"]) for job in result.jobs] == [
        (name, seed) for seed in (1, 2) for name in stages]


def test_only_plans_the_named_stages_and_what_they_need_under_the_same_keys(tmp_path, capsys):
    """``--only pair`` runs the decisive pair first (with the ``ft`` it needs, at every seed); the
    controls wait for a later full run, which finds the same keys."""
    stages = {"ft": {"kind": "train"},
              "pair": {"kind": "train", "set": {"model.init_from": "@ft", "pruning.method": "omp"}},
              "pair_control": {"kind": "train", "set": {"model.init_from": "@ft", "training.max_steps": 3}},
              "long_control": {"kind": "train", "set": {"training.max_steps": 4}}}
    path = sweep_file(tmp_path, "m", stages, {"seed": [1, 2]})
    full = api.sweep(path, dry_run=True, progress=lambda _: None)
    only = api.sweep(path, dry_run=True, only=["pair"], progress=lambda _: None)
    assert [(job.name, job.grid["seed"]) for job in only.jobs] == [
        ("ft", 1), ("pair", 1), ("ft", 2), ("pair", 2)]
    assert {job.key for job in only.jobs} < {job.key for job in full.jobs}
    assert api.sweep(path, dry_run=True, only="long_control", progress=lambda _: None).jobs[0].name == \
        "long_control"  # one name as a plain string is one stage
    assert main(["sweep", str(path), "--dry-run", "--only", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {path}: --only nope: no such stage "
                   "(stages: ft, long_control, pair, pair_control)"]


def test_a_sweep_result_prints_as_one_line(tmp_path):
    """``print(api.sweep(...))`` shows counts, not every job's recipe."""
    result = api.sweep(sweep_file(tmp_path, "m", STUDY, {"seed": [1, 2]}), dry_run=True,
                       progress=lambda _: None)
    assert repr(result) == str(result) == (
        f"SweepResult('{tmp_path / 'out'}': 5 stages, 0 ran, 0 failed, 0 skipped)")


def test_a_stage_records_the_grid_values_of_the_stages_it_consumes(tmp_path):
    """A ticket retrained from masks searched two ways is two configurations: its grid names the
    search's values (which the report needs to keep them apart); the fine-tune shares none."""
    stages = {"ft": {"kind": "train"},
              "search": {"kind": "train", "set": {"model.init_from": "@ft", "pruning.method": "omp"}},
              "retrain": {"kind": "train", "set": {"model.init_from": "@search"}}}
    grid = {"seed": [1], "search.training.max_steps": [2, 3]}
    result = api.sweep(sweep_file(tmp_path, "m", stages, grid), dry_run=True, progress=lambda _: None)
    by_name = collections.defaultdict(list)
    for job in result.jobs:
        by_name[job.name].append(job.grid)
    assert by_name["ft"] == [{"seed": 1}]
    assert by_name["search"] == by_name["retrain"] == [
        {"seed": 1, "search.training.max_steps": 2}, {"seed": 1, "search.training.max_steps": 3}]


def test_set_overrides_one_dotted_grid_key(tmp_path):
    """``--set grid.prune.pruning.sparsity=[..]`` replaces that grid key (grid keys are flat)."""
    grid = {"seed": [1], "prune.pruning.sparsity": [0.3, 0.5, 0.7]}
    path = sweep_file(tmp_path, "m", STUDY, grid)
    result = api.sweep(path, ["grid.prune.pruning.sparsity=[0.9]", "grid.seed=[4, 5]"], dry_run=True,
                       progress=lambda _: None)
    prunes = [job.grid for job in result.jobs if job.name == "prune"]
    assert prunes == [{"seed": 4, "prune.pruning.sparsity": 0.9}, {"seed": 5, "prune.pruning.sparsity": 0.9}]
    with pytest.raises(SrnetError, match=r"grid key 'prune\.pruning\.nope' is not a recipe key"):
        api.sweep(path, ["grid.prune.pruning.nope=[1]"], dry_run=True, progress=lambda _: None)


@pytest.mark.parametrize("change, message", [
    ({"grid": {"prune.pruning.sparsityy": [0.5]}}, r"sweep.yaml: grid key 'prune.pruning.sparsityy'"),
    ({"grid": {"trainingg.lr": [0.5]}}, r"grid key 'trainingg.lr' is not a recipe key"),
    ({"stages": {"ft": {"kind": "train", "set": {"model.init_from": "@nope"}}}}, r"'@nope', which no stage"),
    ({"stages": {"a": {"kind": "train", "set": {"model.init_from": "@b"}},
                 "b": {"kind": "train", "set": {"model.init_from": "@a"}}}}, "cycle"),
    ({"stages": {"ft": {"kind": "tran"}}}, "unknown stage kind 'tran'"),
    ({"stages": {"model": {"kind": "train"}}}, "stage name"),
    ({"grid": {"seed": []}}, "no values"),
])
def test_bad_sweeps_are_one_line_errors(capsys, tmp_path, change, message):
    path = sweep_file(tmp_path, "m", STUDY, {"seed": [1]})
    data = yaml.safe_load(path.read_text())
    data.update(change)
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SrnetError, match=message):
        api.sweep(path, dry_run=True)
    assert main(["sweep", str(path), "--dry-run"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_duplicate_stage_kinds_are_refused():
    with pytest.raises(ValueError, match="already registered"):
        @register_stage("train")
        class Again(Stage):
            def run(self, recipe, params, folder):
                raise AssertionError


def test_every_shipped_sweep_recipe_validates_in_dry_run(capsys, tmp_path):
    shipped = sorted((REPO / "recipes").rglob("*.yaml"))
    sweeps = [p for p in shipped if "stages" in (yaml.safe_load(p.read_text()) or {})]
    assert sweeps
    for path in sweeps:  # planned into an empty folder: a finished local copy of a study reads "done"
        out_dir = f"output_dir={tmp_path / path.stem}"
        assert main(["sweep", str(path), "--dry-run", "--set", out_dir]) == 0, path
        out = capsys.readouterr().out
        assert "to run" in out and "[1/" in out


def events(out: Path) -> list[dict]:
    lines = (out / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.endswith("}")]  # a kill may cut the last line


@pytest.mark.slow
def test_kill_9_of_a_two_worker_sweep_leaves_no_worker_alive(tmp_path, tiny_model_dir):
    psutil = pytest.importorskip("psutil")
    stages = {"ft": {"kind": "train"}}
    path = sweep_file(tmp_path, tiny_model_dir, stages, {"seed": [1, 2]}, max_steps=2000)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "srnet.cli", "sweep", str(path), "--workers", "2"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sweep = psutil.Process(proc.pid)
    deadline = time.monotonic() + 120
    workers: list = []
    while time.monotonic() < deadline and len(workers) < 2:  # both workers have started a stage
        workers = [c for c in sweep.children() if "spawn_main" in command_line(psutil, c)]
        started = (tmp_path / "out" / "events.jsonl")
        if len(workers) == 2 and started.is_file() and len(events(tmp_path / "out")) == 2:
            break
        time.sleep(0.2)
    assert len(workers) == 2, "the sweep should be running two workers"
    proc.send_signal(signal.SIGKILL)  # the sweep only: its workers are not signalled
    proc.wait()
    alive = live(psutil, workers, timeout=30)
    for worker in alive:
        worker.kill()
    assert not alive, f"{len(alive)} worker(s) outlived the sweep by 30 s"


def command_line(psutil, proc) -> str:
    """``proc``'s command line; empty for a child that ended (or is a zombie) while being read."""
    try:
        return " ".join(proc.cmdline())
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return ""


def live(psutil, procs: list, timeout: float) -> list:
    """The processes of ``procs`` still running after up to ``timeout`` seconds.  A zombie (dead,
    not yet reaped: its parent was killed and PID 1 has not collected it, as on a busy machine or
    in a container whose init does not reap) has ended, so it does not count."""
    deadline = time.monotonic() + timeout
    while True:
        running = []
        for proc in procs:
            try:
                if proc.status() != psutil.STATUS_ZOMBIE:
                    running.append(proc)
            except psutil.NoSuchProcess:
                pass
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.2)


@pytest.mark.slow
def test_kill_9_then_resume_loses_and_repeats_nothing(tmp_path, tiny_model_dir):
    stages = {"ft": {"kind": "train"},
              "prune": {"kind": "train", "set": {"model.init_from": "@ft", "pruning.method": "omp"}}}
    path = sweep_file(tmp_path, tiny_model_dir, stages, {"prune.pruning.sparsity": [0.3, 0.6]},
                      max_steps=6, checkpoint_every=1)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}  # OMP_NUM_THREADS=1 from the fixture
    proc = subprocess.Popen([sys.executable, "-m", "srnet.cli", "sweep", str(path)], env=env,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:  # kill once the first stage is done
        if (out / "events.jsonl").is_file() and any(e["event"] == "done" for e in events(out)):
            break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    jobs = api.sweep(path, dry_run=True, progress=lambda _: None).jobs
    before = {job.key for job in jobs if job.complete}
    assert before and len(before) < len(jobs), "the kill should land mid-sweep"
    stamps = {job.key: (job.folder / "stage.json").stat().st_mtime_ns for job in jobs if job.complete}
    started = len(events(out))
    result = api.sweep(path, resume=True, progress=lambda _: None)
    assert result.ok and all(job.complete for job in jobs)  # 0 lost
    resumed = [e["key"] for e in events(out)[started:] if e["event"] == "start"]
    assert sorted(resumed) == sorted(job.key for job in jobs if job.key not in before)  # 0 repeated
    assert all((job.folder / "stage.json").stat().st_mtime_ns == stamps[job.key]
               for job in jobs if job.key in before)
    done = collections.Counter(e["key"] for e in events(out) if e["event"] == "done")
    assert max(done.values()) == 1
    for job in jobs:
        assert json.loads((job.folder / "metrics.json").read_text())["sparsity"]["overall"] >= 0


def test_failing_stage_skips_its_dependants_and_resume_refuses_a_changed_sweep(
    capsys, tmp_path, tiny_model_dir
):
    stages = {"ft": {"kind": "train"},
              "bad": {"kind": "train", "set": {"model.init_from": "@ft", "loss.name": "poe"}},
              "after": {"kind": "train", "set": {"model.init_from": "@bad"}}}
    path = sweep_file(tmp_path, tiny_model_dir, stages, {})
    assert main(["sweep", str(path)]) == 1
    captured = capsys.readouterr()
    assert "[3/3] skipped" in captured.out and "[1/3] done ft" in captured.out
    assert "failed: bad: loss 'poe' needs loss.bias_predictions" in captured.err
    assert "1 ran, 1 failed, 1 skipped" in captured.out
    assert main(["sweep", str(path)]) == 2
    assert "pass --resume" in capsys.readouterr().err
    with pytest.raises(SrnetError, match="pass resume=True to continue it"):
        api.sweep(path)
    assert main(["sweep", str(path), "--resume", "--set", "base.training.lr=0.5"]) == 2
    assert "'base.training.lr' differs" in capsys.readouterr().err


def test_resume_may_add_stages_and_grid_values_but_not_change_or_drop_a_stage(
    capsys, tmp_path, tiny_model_dir
):
    stages = {"ft": {"kind": "train"}}
    path = sweep_file(tmp_path, tiny_model_dir, stages, {"seed": [1]})
    assert main(["sweep", str(path)]) == 0
    grown = yaml.safe_load(path.read_text())
    grown["stages"]["again"] = {"kind": "train", "set": {"model.init_from": "@ft"}}
    grown["grid"]["seed"] = [1, 2]
    path.write_text(yaml.safe_dump(grown))
    capsys.readouterr()
    assert main(["sweep", str(path), "--resume"]) == 0
    out = capsys.readouterr().out
    assert "3 ran" in out and "start ft seed=1" not in out  # seed 1's ft is reused, not rerun
    assert yaml.safe_load((tmp_path / "out" / "sweep.yaml").read_text())["grid"]["seed"] == [1, 2]
    changed = {**grown, "stages": {**grown["stages"], "ft": {"kind": "train", "set": {"training.lr": 0.5}}}}
    path.write_text(yaml.safe_dump(changed))
    assert main(["sweep", str(path), "--resume"]) == 2
    assert "'stages.ft.set.training.lr' differs" in capsys.readouterr().err
    path.write_text(yaml.safe_dump({**grown, "stages": {"ft": {"kind": "train"}}}))
    assert main(["sweep", str(path), "--resume"]) == 2
    assert "'stages.again' differs" in capsys.readouterr().err


def test_resume_may_change_how_often_runs_log_and_checkpoint(capsys, tmp_path, tiny_model_dir):
    """A denser checkpoint_every before a session ends (so an unfinished stage loses fewer steps)
    is no changed sweep; the stage keys and the finished stages stay as they are."""
    path = sweep_file(tmp_path, tiny_model_dir, {"ft": {"kind": "train"}}, {"seed": [1]})
    assert main(["sweep", str(path)]) == 0
    capsys.readouterr()
    denser = yaml.safe_load(path.read_text())
    denser["stages"]["ft"]["set"] = {"training.checkpoint_every": 3}
    path.write_text(yaml.safe_dump(denser))
    assert main(["sweep", str(path), "--resume", "--set", "base.training.checkpoint_every=2",
                 "--set", "base.training.log_every=1", "--dry-run"]) == 0
    assert "[1/1] done   ft seed=1" in capsys.readouterr().out
    assert main(["sweep", str(path), "--resume", "--set", "base.training.lr=0.5"]) == 2
    assert "'base.training.lr' differs" in capsys.readouterr().err


@pytest.mark.slow
def test_ray_executor_on_a_local_instance(tmp_path, tiny_model_dir):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=1, include_dashboard=False, runtime_env={"env_vars": {
        "PYTHONPATH": str(REPO / "src"), "OMP_NUM_THREADS": "1"}})
    try:
        path = sweep_file(tmp_path, tiny_model_dir, {"ft": {"kind": "train"}}, {"seed": [1]})
        result = api.sweep(path, executor="ray", progress=lambda _: None)
    finally:
        ray.shutdown()
    assert result.ok and result.ran == [result.jobs[0].key]
    assert (result.jobs[0].folder / "metrics.json").is_file()


@pytest.mark.slow
def test_a_killed_ray_worker_is_retried_from_its_checkpoint(tmp_path, tiny_model_dir):
    ray = pytest.importorskip("ray")
    psutil = pytest.importorskip("psutil")
    ray.init(num_cpus=1, include_dashboard=False, runtime_env={"env_vars": {
        "PYTHONPATH": str(REPO / "src"), "OMP_NUM_THREADS": "1"}})
    path = sweep_file(tmp_path, tiny_model_dir, {"ft": {"kind": "train"}}, {"training.max_steps": [4, 60]},
                      checkpoint_every=5, eval_every=60)
    jobs = api.sweep(path, dry_run=True, progress=lambda _: None).jobs
    second = jobs[1].folder / "log.jsonl"

    import threading

    swept = threading.Event()  # no fixed deadline: a starved worker on a loaded machine is slow, not wrong

    def kill_the_second_stage() -> None:  # once it has a checkpoint: kill the Ray worker running it
        while not swept.is_set():
            steps = [json.loads(x).get("step", 0) for x in second.read_text().splitlines()] \
                if second.is_file() else []
            if steps and max(steps) >= 12:
                for proc in psutil.process_iter(["cmdline"]):
                    if any("ray::run_job" in part for part in proc.info["cmdline"] or []):
                        proc.kill()
                        return
            time.sleep(0.2)

    killer = threading.Thread(target=kill_the_second_stage)
    killer.start()
    try:
        result = api.sweep(path, executor="ray", progress=lambda _: None)
    finally:
        swept.set()
        killer.join()
        ray.shutdown()
    assert result.ok and all(job.complete for job in jobs)
    log = [json.loads(x) for x in second.read_text().splitlines()]
    assert any(e["event"] == "resume" and e.get("step", 0) >= 10 for e in log), "retried from its checkpoint"
    starts = collections.Counter(e["key"] for e in events(tmp_path / "out") if e["event"] == "start")
    assert starts == {jobs[0].key: 1, jobs[1].key: 1}  # the retry is Ray's; no stage ran twice


@pytest.mark.slow
def test_a_killed_ray_driver_leaves_no_ray_process_alive(tmp_path, tiny_model_dir):
    """kill -9 of a sweep's driver that started a local Ray instance: Ray's head processes, its
    agents (which once outlived the driver) and the stage's worker all end (the reaper)."""
    pytest.importorskip("ray")
    psutil = pytest.importorskip("psutil")
    path = sweep_file(tmp_path, tiny_model_dir, {"ft": {"kind": "train"}}, {"seed": [1]},
                      max_steps=100_000, eval_every=100_000)  # runs until killed
    script = tmp_path / "driver.py"
    script.write_text("import sys\nfrom srnet import api\n\nif __name__ == '__main__':\n"
                      f"    api.sweep({str(path)!r}, executor='ray')\n")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "OMP_NUM_THREADS": "1"}
    driver = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    started: list = []
    try:
        deadline = time.time() + 180
        while time.time() < deadline and not started:
            family = psutil.Process(driver.pid).children(recursive=True)
            if any("ray::run_job" in " ".join(p.cmdline()) for p in family if p.is_running()):
                started = family
            time.sleep(0.5)
        assert started, "the Ray stage never started"
        assert any("raylet" in " ".join(p.cmdline()) for p in started)
    finally:
        driver.kill()
        driver.wait()

    def alive(process) -> bool:
        try:
            return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    deadline = time.time() + 30
    while time.time() < deadline and any(alive(p) for p in started):
        time.sleep(0.5)
    left = [" ".join(p.cmdline())[:60] for p in started if alive(p)]
    assert not left, f"alive 30 s after the driver was killed: {left}"


def test_a_stage_another_sweep_runs_skips_its_dependants_without_crashing(tmp_path, tiny_model_dir):
    """A second sweep on a live sweep's folder: the stage the first one holds is skipped, and so are
    the stages that need it (it once stopped with 'stages wait on stages outside the plan')."""
    import socket

    path = sweep_file(tmp_path, tiny_model_dir, {"ft": {"kind": "train"},
                                                 "prune": {"kind": "train", "set": {
                                                     "model.init_from": "@ft", "pruning.method": "omp"}}},
                      {"seed": [1]})
    (ft,) = [job for job in api.sweep(path, dry_run=True, progress=lambda _: None).jobs if job.name == "ft"]
    ft.folder.mkdir(parents=True)
    (ft.folder / "stage.lock").write_text(json.dumps({  # held by a live process: this test's
        "pid": os.getpid(), "host": socket.gethostname(), "started": time.time(), "token": "other"}))
    lines: list[str] = []
    result = api.sweep(path, progress=lines.append)
    assert len(result.skipped) == 2 and not result.ran and not result.failed
    assert any("skipped ft" in line and "being run by" in line for line in lines)


def test_a_stage_another_sweep_runs_leaves_the_worker_free_for_the_next(tmp_path, tiny_model_dir):
    """One worker, the first grid point held by a live sweep: this sweep skips it and runs the
    second (it once stopped with 'stages wait on stages outside the plan': the held stage had taken
    the worker's only slot)."""
    import socket

    path = sweep_file(tmp_path, tiny_model_dir, {"ft": {"kind": "train"}}, {"seed": [1, 2]})
    first, second = api.sweep(path, dry_run=True, progress=lambda _: None).jobs
    first.folder.mkdir(parents=True)
    (first.folder / "stage.lock").write_text(json.dumps({  # held by a live process: this test's
        "pid": os.getpid(), "host": socket.gethostname(), "started": time.time(), "token": "other"}))
    result = api.sweep(path, workers=1, progress=lambda _: None)
    assert result.skipped == [first.key] and result.ran == [second.key] and not result.failed


def test_ray_stages_ask_for_a_gpu_where_the_cluster_has_them():
    from srnet.experiments.sweep.execute import ray_gpus

    assert ray_gpus(None, {"CPU": 16.0, "GPU": 8.0}) == 1.0  # the documented default
    assert ray_gpus(None, {"CPU": 16.0}) == 0.0  # a CPU-only cluster: no request
    assert ray_gpus(0.5, {"CPU": 16.0, "GPU": 8.0}) == 0.5  # --gpus-per-stage wins


@pytest.mark.parametrize(("flags", "message"), [
    (["--workers", "0"], "--workers must be at least 1, got 0"),
    (["--gpus-per-stage", "1"], "--gpus-per-stage takes a number >= 0 with --executor ray, got 1.0 with "
                                "--executor local"),
    (["--executor", "ray", "--gpus-per-stage", "-1"], "--gpus-per-stage takes a number >= 0"),
])
def test_executor_flags_that_cannot_work_are_refused_before_anything_is_written(tmp_path, capsys, flags,
                                                                                 message):
    out = tmp_path / "out"
    data = {"name": "s", "output_dir": str(out), "base": {"task": "synthetic_nli",
            "model": {"name": "default"}, "data": {"train": synthetic("train", 8)}},
            "stages": {"ft": {"kind": "train"}}}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(data))
    assert main(["sweep", str(tmp_path / "sweep.yaml"), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
    assert not out.exists()


def test_a_stage_that_is_another_stages_run_is_named_not_silently_dropped(tmp_path, caplog):
    """Two stages with equal keys are one run: the second has no folder of its own. Planning says so
    (once, naming both), and ``--only`` accepts the second name, running the shared job."""
    stages = {"ft": {"kind": "train"},
              "pair": {"kind": "train", "set": {"model.init_from": "@ft", "training.max_steps": 3}},
              "again": {"kind": "train", "set": {"model.init_from": "@ft", "training.max_steps": 3}}}
    path = sweep_file(tmp_path, "m", stages, {"seed": [1, 2]})
    with caplog.at_level(logging.WARNING, logger="srnet.experiments.sweep.plan"):
        full = api.sweep(path, dry_run=True, progress=lambda _: None)
    assert [(job.name, job.grid["seed"]) for job in full.jobs] == [
        ("ft", 1), ("pair", 1), ("ft", 2), ("pair", 2)]
    warned = [r.getMessage() for r in caplog.records if "is the same run as" in r.getMessage()]
    assert warned == [f"{path}: stage 'again' is the same run as stage 'pair' (same kind, recipe, parameters "
                      f"and inputs): it runs once, in {tmp_path / 'out' / 'pair'}; change a setting to make "
                      "it a run of its own"]
    only = api.sweep(path, dry_run=True, only=["again"], progress=lambda _: None)
    assert [(job.name, job.grid["seed"]) for job in only.jobs] == [
        ("ft", 1), ("pair", 1), ("ft", 2), ("pair", 2)]
