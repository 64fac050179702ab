"""Directories of processes that were killed before they could clean up.

A runner removes its jail roots and device directory when it closes, is collected or its
interpreter exits; a ``SIGKILL`` (an OOM kill, a test killing a training run, a cluster
preempting a worker) allows none of that, and every such kill left its directories in ``/tmp``.
So those directories carry their owner in their name, ``rtlforge-<kind>-<pidns>-<pid>-<random>``,
and a new jail pool removes the ones whose owner is gone: same pid namespace (another container
sharing ``/tmp`` has another, and its processes are invisible here, so its directories are never
touched) and no live process with that pid. A reused pid only keeps a stale directory a while
longer; a live owner's directory is never removed.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from rtlforge.core.log import get_logger

log = get_logger("rtlforge.sandbox.stale")

#: Kinds of directory named by :func:`prefix`: jail roots, private ``/dev`` directories and gate
#: workers' run directories (they lease no jail root).
KINDS = ("jail", "dev", "gate")
_NAME = re.compile(r"^rtlforge-(?P<kind>jail|dev|gate)-(?P<ns>\d+)-(?P<pid>\d+)-")


def _pid_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"  # no /proc: such names are never swept (0 is no namespace's inode)


def prefix(kind: str) -> str:
    """The ``mkdtemp`` prefix of a ``kind`` directory this process owns."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    return f"rtlforge-{kind}-{_pid_namespace()}-{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def sweep(directory: str | Path) -> list[Path]:
    """Remove the rtlforge directories in ``directory`` whose owning process is gone; returns
    them. Never raises: a sweep only saves disk space."""
    ours = _pid_namespace()
    removed: list[Path] = []
    if ours == "0":
        return removed
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        match = _NAME.match(entry.name)
        if (match is None or match["ns"] != ours or _alive(int(match["pid"]))
                or not entry.is_dir(follow_symlinks=False)):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        if not os.path.lexists(entry.path):
            removed.append(Path(entry.path))
    if removed:
        log.info("stale_directories_removed", directory=str(directory), count=len(removed))
    return removed
