"""Fate-sharing for the local Ray instance a sweep starts: a watchdog process that, once the
sweep's driver is gone (finished, Ctrl-C or ``kill -9``), ends every process the driver started.

Ray ties its head processes (GCS, raylet) to the driver, but the raylet's agents
(``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``) outlived a killed driver.  The watchdog runs in
its own session (a signal to the driver's process group does not reach it), records the driver's
descendants while the driver lives, and afterwards terminates those still running (the same
processes, not reused pids), killing any that ignore SIGTERM for ``GRACE_S``.  It never touches a
cluster srnet joined (``RAY_ADDRESS``): only processes the driver itself started.

    python -m srnet.experiments.sweep.reaper DRIVER_PID
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time

POLL_S = 0.5
GRACE_S = 3.0


def start_reaper() -> subprocess.Popen:
    """Start the watchdog for this process (the sweep's driver)."""
    return subprocess.Popen([sys.executable, "-m", "srnet.experiments.sweep.reaper", str(os.getpid())],
                            start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def watch(driver_pid: int) -> int:
    """Record ``driver_pid``'s descendants until it ends; then end those still running.
    Returns how many were ended."""
    import psutil

    try:
        driver = psutil.Process(driver_pid)
    except psutil.NoSuchProcess:
        return 0
    me = os.getpid()
    seen: dict[int, psutil.Process] = {}
    while _alive(driver):
        try:
            for child in driver.children(recursive=True):
                if child.pid != me:
                    seen.setdefault(child.pid, child)
        except psutil.Error:
            pass  # the driver ended while being read
        time.sleep(POLL_S)
    left = [p for p in seen.values() if _alive(p)]
    for process in left:
        _signal(process, "terminate")
    _, stubborn = psutil.wait_procs(left, timeout=GRACE_S)
    for process in stubborn:
        _signal(process, "kill")
    return len(left)


def _alive(process) -> bool:
    """Running and not a zombie (a dead process its parent has not reaped yet); ``is_running``
    also checks the creation time, so a reused pid is not the recorded process."""
    import psutil

    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _signal(process, how: str) -> None:
    import psutil

    with contextlib.suppress(psutil.Error):  # ended meanwhile
        getattr(process, how)()


if __name__ == "__main__":
    watch(int(sys.argv[1]))
