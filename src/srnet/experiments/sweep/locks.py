"""Stage locks: a sweep holds ``<stage folder>/stage.lock`` while one of its workers runs the stage.

The lock file records the holder (sweep pid, host, start time and a random token).  A second
sweep on the same folder skips a stage whose lock is held by a live process; a lock whose holder
is gone (a dead pid on this host, or older than :data:`STALE_AFTER_S` on another host, where
liveness cannot be checked) is stale and is taken over, with a one-line note.  Creation is
atomic (``O_EXCL``) and every read-and-take happens under an exclusive ``flock`` on
``.stage.lock.guard``, so two sweeps never both take a free or a stale lock (on a local file
system, where ``flock`` holds between processes).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

LOCK = "stage.lock"
GUARD = ".stage.lock.guard"
STALE_AFTER_S = 24 * 3600
"""A lock from another host older than this is stale (a sweep on another host cannot be probed)."""


@dataclass(frozen=True)
class Lock:
    """The outcome of :func:`acquire`: ``token`` is set when this sweep now holds the lock; ``note``
    describes the live holder (not acquired) or the stale lock taken over."""

    token: str | None
    note: str | None = None


def acquire(folder: Path) -> Lock:
    """Take ``folder``'s stage lock (creating the folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK
    token = uuid.uuid4().hex
    entry = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": time.time(),
                        "token": token})
    with open(folder / GUARD, "a") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)  # one sweep at a time reads and writes this lock
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder = _read(path)
            if _alive(holder, path):
                return Lock(None, _describe(holder))
            tmp = path.with_name(f".{LOCK}.{token}")
            tmp.write_text(entry, encoding="utf-8")
            os.replace(tmp, path)
            return Lock(token, f"took over the stale lock of {_describe(holder)}")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(entry)
    return Lock(token)


def release(folder: Path, token: str) -> None:
    """Remove ``folder``'s lock if this sweep (``token``) still holds it."""
    path = folder / LOCK
    if _read(path).get("token") == token:
        path.unlink(missing_ok=True)


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _alive(holder: dict, path: Path) -> bool:
    """Whether the lock's holder may still be running its stage."""
    if not holder:  # being written this instant, or unreadable: fresh ones count as held
        try:
            return time.time() - path.stat().st_mtime < 10
        except OSError:
            return False
    if holder.get("host") != socket.gethostname():
        return time.time() - float(holder.get("started", 0)) < STALE_AFTER_S
    try:
        os.kill(int(holder.get("pid", 0)), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    except (OverflowError, ValueError):
        return False
    return int(holder.get("pid", 0)) > 0


def _describe(holder: dict) -> str:
    started = holder.get("started")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(started))) if started else "?"
    return f"pid {holder.get('pid', '?')} on {holder.get('host', '?')} (since {when})"
