"""Folder locks (sweep stages, runs): one holder at a time, stale locks taken over, nothing left
once released, two real sweeps on one folder."""

from __future__ import annotations

import collections
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import yaml

from conftest import synthetic_split as synthetic
from srnet import api
from srnet.rundir import locks

REPO = Path(__file__).resolve().parents[2]


def test_a_held_lock_is_not_taken_and_release_frees_it(tmp_path):
    first = locks.acquire(tmp_path / "stage")
    assert first.token and first.note is None
    second = locks.acquire(tmp_path / "stage")
    assert second.token is None and f"pid {os.getpid()} on {socket.gethostname()}" in second.note
    locks.release(tmp_path / "stage", "not-the-holder")  # only the holder releases
    assert (tmp_path / "stage" / locks.STAGE_LOCK).exists()
    locks.release(tmp_path / "stage", first.token)
    assert list((tmp_path / "stage").iterdir()) == []  # neither the lock nor its guard is left
    assert locks.acquire(tmp_path / "stage").token


def write_lock(folder: Path, **holder) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / locks.STAGE_LOCK).write_text(json.dumps({"token": "old", **holder}))


def test_stale_locks_are_taken_over_with_a_note(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    write_lock(tmp_path / "a", pid=int(dead.stdout), host=socket.gethostname(), started=time.time())
    taken = locks.acquire(tmp_path / "a")
    assert taken.token and taken.note.startswith(f"took over the stale lock of pid {int(dead.stdout)}")
    write_lock(tmp_path / "b", pid=1, host="elsewhere", started=time.time() - locks.STALE_AFTER_S - 1)
    assert locks.acquire(tmp_path / "b").token  # another host, too old
    write_lock(tmp_path / "c", pid=1, host="elsewhere", started=time.time())
    held = locks.acquire(tmp_path / "c")
    assert held.token is None and "on elsewhere" in held.note  # another host, recent: assumed alive


def test_a_reused_pid_or_a_wrong_typed_lock_is_stale_not_held_forever(tmp_path):
    """A live pid whose process started after the lock was written (the pid was reused) does not
    hold the lock; a lock file with wrong-typed fields is read as unreadable (held while fresh,
    stale once old), never a traceback."""
    me, host = os.getpid(), socket.gethostname()
    started = locks.process_start(me)
    assert started is not None and started <= time.time()
    write_lock(tmp_path / "reused", pid=me, host=host, started=started - 3600)
    taken = locks.acquire(tmp_path / "reused")
    assert taken.token and taken.note.startswith(f"took over the stale lock of pid {me}")
    write_lock(tmp_path / "mine", pid=me, host=host, started=time.time())  # this very process: held
    assert locks.acquire(tmp_path / "mine").token is None
    for i, fields in enumerate([{"pid": "12", "started": "x"}, {"pid": True, "host": 3}, {"pid": [1]}]):
        folder = tmp_path / f"typed{i}"
        write_lock(folder, **fields)
        held = locks.acquire(folder)
        assert held.token is None and held.note == "an unreadable holder (missing or wrong-typed fields)"
        old = time.time() - 60
        os.utime(folder / locks.STAGE_LOCK, (old, old))
        taken = locks.acquire(folder)
        assert taken.token and "unreadable holder" in taken.note


def test_two_sweeps_on_one_folder_run_each_stage_once(tmp_path, tiny_model_dir, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    out = tmp_path / "out"
    data = {"name": "t", "output_dir": str(out),
            "base": {"task": "synthetic_nli", "model": {"name": str(tiny_model_dir), "max_length": 48},
                     "data": {"train": synthetic("train", 24), "dev": synthetic("dev", 16)},
                     "training": {"max_steps": 30, "batch_size": 8, "lr": 1e-3}},
            "stages": {"ft": {"kind": "train"}}, "grid": {"seed": [1, 2, 3]}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(data))
    api.sweep(path, dry_run=True, progress=lambda _: None)
    out.mkdir()
    (out / "sweep.yaml").write_text(yaml.safe_dump(data, sort_keys=False))  # both sweeps --resume it
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    cmd = [sys.executable, "-m", "srnet.cli", "sweep", str(path), "--resume"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
             for _ in range(2)]
    for proc in procs:
        proc.communicate(timeout=300)
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    started = collections.Counter(e["key"] for e in events if e["event"] == "start")
    done = collections.Counter(e["key"] for e in events if e["event"] == "done")
    assert len(done) == 3 and set(done.values()) == {1} and set(started.values()) == {1}, events
    # the sweeps overlapped: one found a stage the other held (a stage's lock is held from before its
    # worker is spawned, so the two sweeps, started together, meet on the first stage)
    assert any(e["event"] == "skipped" and "locked by" in e.get("reason", "") for e in events), events
    assert not list(out.rglob(locks.STAGE_LOCK))  # every lock released


def _race(folders: list[str], barrier, results) -> None:
    """One contender: for each trial, wait for the others, then try to take the stale lock."""
    for i, folder in enumerate(folders):
        barrier.wait()
        results.put((i, locks.acquire(Path(folder)).token is not None))


def test_a_stale_lock_is_taken_over_by_exactly_one_of_four_racing_processes(tmp_path):
    """Four processes released together on the same stale lock, 1,000 times: never two holders
    (the takeover re-checks the holder under an exclusive file lock), never none."""
    import multiprocessing

    trials, contenders = 1000, 4
    folders = [str(tmp_path / f"t{i}") for i in range(trials)]
    for folder in folders:  # a holder on this host whose pid cannot exist (above any pid_max)
        write_lock(Path(folder), pid=2**22 + 12345, host=socket.gethostname(), started=time.time())
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(contenders), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(folders, barrier, results)) for _ in range(contenders)]
    for proc in procs:
        proc.start()
    held = collections.Counter()
    for _ in range(trials * contenders):
        trial, took = results.get(timeout=120)
        held[trial] += took
    for proc in procs:
        proc.join(timeout=30)
    assert sorted(set(held[i] for i in range(trials))) == [1], collections.Counter(held.values())


def _take_and_release(folder: str, rounds: int, barrier, results) -> None:
    """One contender: take the lock, mark the hold with an O_EXCL file, unmark it, release."""
    barrier.wait()
    doubles = 0
    for _ in range(rounds):
        lock = locks.acquire(Path(folder), ".r.lock")
        if lock.token is None:
            continue
        try:
            os.close(os.open(Path(folder) / "held", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            os.unlink(Path(folder) / "held")
        except FileExistsError:
            doubles += 1
        locks.release(Path(folder), lock.token, ".r.lock")
    results.put(doubles)


def test_racing_takes_and_releases_never_hold_a_lock_twice(tmp_path):
    """Four processes take and release one lock 300 times each: release removes the guard with the
    lock, and a process that waited on the removed guard opens the new one, so two never hold it."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_take_and_release, args=(str(tmp_path), 300, barrier, results))
             for _ in range(4)]
    for proc in procs:
        proc.start()
    doubles = [results.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(timeout=30)
    assert doubles == [0, 0, 0, 0] and list(tmp_path.iterdir()) == []
