"""Folder locks: a sweep holds ``<stage folder>/stage.lock`` while one of its workers runs the
stage, and a run holds ``<output_dir>/.<name>.lock`` (``RunDir.lock``, beside the run folder) while
it checks, trains and writes that folder.

The lock file records the holder (pid, host, start time and a random token), read back through
:class:`Holder` (a lock with missing or wrong-typed fields counts as unreadable, never a crash).  A
live holder's lock is not taken (a second sweep skips the stage; a second run of the folder is
refused); a lock whose holder is gone (a dead pid on this host; a pid now held by a process that
started after the lock was written, its pid reused; or older than :data:`STALE_AFTER_S` on another
host, where liveness cannot be checked) is stale and is taken over, with a one-line note.
Creation is atomic (``O_EXCL``) and every read-and-take happens under an exclusive ``flock`` on
the hidden guard file ``.<lock>.guard``, so two processes never both take a free or a stale lock
(on a local file system, where ``flock`` holds between processes).  The guard is removed with the
last lock (a process that waited on a removed guard opens the new one), so a released lock leaves
no file behind.  :func:`exclusive` holds such a guard alone, around building a cached resource.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

STAGE_LOCK = "stage.lock"
STALE_AFTER_S = 24 * 3600
"""A lock from another host older than this is stale (a process on another host cannot be probed)."""


PID_REUSE_SLACK_S = 2.0
"""A process that started this long after a lock was written cannot have written it (the boot
time in ``/proc/stat`` has whole seconds)."""


@dataclass(frozen=True)
class Holder:
    """What a lock file records, type-checked; ``None`` fields were missing or wrong-typed."""

    pid: int | None
    host: str | None
    started: float | None
    token: str | None

    @classmethod
    def parse(cls, data: object) -> Holder | None:
        """The holder of a parsed lock file, or None when it is not a JSON object with a pid."""
        if not isinstance(data, dict):
            return None

        def typed(key: str, kind: type | tuple[type, ...]):
            value = data.get(key)
            return value if isinstance(value, kind) and not isinstance(value, bool) else None

        started = typed("started", (int, float))
        holder = cls(typed("pid", int), typed("host", str), float(started) if started is not None else None,
                     typed("token", str))
        return holder if holder.pid is not None and holder.pid > 0 else None


@dataclass(frozen=True)
class Lock:
    """The outcome of :func:`acquire`: ``token`` is set when this process now holds the lock;
    ``note`` describes the live holder (not acquired) or the stale lock taken over."""

    token: str | None
    note: str | None = None


def acquire(folder: Path, name: str = STAGE_LOCK) -> Lock:
    """Take ``folder``'s lock ``name`` (creating the folder)."""
    path = folder / name
    token = uuid.uuid4().hex
    entry = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": time.time(),
                        "token": token})
    with _guarded(folder, name):  # one process at a time reads and writes this lock
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder = _read(path)
            if _alive(holder, path):
                return Lock(None, _describe(holder))
            tmp = path.with_name(f".{name.lstrip('.')}.{token}")
            tmp.write_text(entry, encoding="utf-8")
            os.replace(tmp, path)
            return Lock(token, f"took over the stale lock of {_describe(holder)}")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(entry)
    return Lock(token)


def release(folder: Path, token: str, name: str = STAGE_LOCK) -> None:
    """Remove ``folder``'s lock ``name`` if this process (``token``) still holds it, and its guard
    once no process holds the lock."""
    path = folder / name
    holder = _read(path)
    if holder is not None and holder.token == token:
        path.unlink(missing_ok=True)
    with _guarded(folder, name):
        if not path.exists():
            _guard_path(folder, name).unlink()  # a process waiting on it sees it gone, starts again


@contextmanager
def holding(folder: Path, name: str, busy: str) -> Iterator[None]:
    """Hold ``folder``'s lock ``name`` while the block writes there; ``SrnetError`` ``busy: (holder)``
    when another live process holds it.  A folder the lock created is removed again when the block
    leaves it empty (a failed command leaves nothing behind)."""
    from srnet.errors import SrnetError

    created = not folder.exists()
    lock = acquire(folder, name)
    if lock.token is None:
        raise SrnetError(f"{busy} ({lock.note})")
    try:
        yield
    finally:
        release(folder, lock.token, name)
        if created and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


@contextmanager
def exclusive(folder: Path, name: str) -> Iterator[None]:
    """Hold ``folder``'s guard of ``name`` while checking for and building a shared file (a cached
    resource): a second process waits here, then finds the file written.  The guard is removed on
    leaving (a process that waited on it opens a new one)."""
    with _guarded(folder, name):
        yield
        _guard_path(folder, name).unlink(missing_ok=True)


@contextmanager
def _guarded(folder: Path, name: str) -> Iterator[None]:
    """Hold the exclusive ``flock`` on ``folder``'s guard of lock ``name`` (creating the folder);
    a guard removed while this process waited for it is opened anew."""
    guard = _guard_path(folder, name)
    while True:
        folder.mkdir(parents=True, exist_ok=True)
        with open(guard, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            if _same_file(fh.fileno(), guard):
                yield
                return


def _guard_path(folder: Path, name: str) -> Path:
    return folder / f".{name.lstrip('.')}.guard"


def _same_file(fd: int, path: Path) -> bool:
    """Whether the open file ``fd`` is still the file at ``path``."""
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


def _read(path: Path) -> Holder | None:
    """The lock's holder; None when the file is missing, being written, or not a valid lock."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return Holder.parse(data)


def process_start(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), from ``/proc`` (Linux); None where
    it cannot be read (no such process, no ``/proc``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state is field 3 of stat
    try:
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime in ticks
    except (IndexError, ValueError, OSError):
        return None


def _alive(holder: Holder | None, path: Path) -> bool:
    """Whether the lock's holder may still be running."""
    if holder is None:  # being written this instant, or unreadable: fresh ones count as held
        try:
            return time.time() - path.stat().st_mtime < 10
        except OSError:
            return False
    if holder.host != socket.gethostname():
        return holder.started is not None and time.time() - holder.started < STALE_AFTER_S
    pid = int(holder.pid or 0)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        pass
    except (OverflowError, ValueError):
        return False
    start = process_start(pid)  # a process that started after the lock was written reuses the pid
    return start is None or holder.started is None or start <= holder.started + PID_REUSE_SLACK_S


def _describe(holder: Holder | None) -> str:
    if holder is None:
        return "an unreadable holder (missing or wrong-typed fields)"
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.started)) if holder.started else "?"
    return f"pid {holder.pid} on {holder.host or '?'} (since {when})"
