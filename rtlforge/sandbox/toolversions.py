"""Tool versions remembered across processes, per executable.

:func:`~rtlforge.sandbox.runner.find_tool` asks every tool it resolves for its version: results
and validation cache keys record it. For Icarus that is ``iverilog -V`` and ``vvp -V``, five
processes and ~10 ms, which every one-shot command (``rtlforge validate``) paid again to learn
what the previous one learnt. The answer (the tool's output) is kept here instead, keyed by the
executable's real path, the arguments and the file's identity (device, inode, size, modification
and change times): reinstalling or upgrading the tool changes the key.

Only ELF executables are remembered: a script's answer may depend on what it runs (a pyenv shim
answers for whichever Python is selected), which the script's own identity does not show.

The file is JSON in ``$RTLFORGE_TOOL_CACHE`` (a folder; ``off`` keeps none), else under
:func:`~rtlforge.core.cachedir.cache_dir`. A missing, damaged or unwritable file is an empty
cache: the tool is asked, as without one.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

from rtlforge.core.cachedir import cache_dir

CACHE_ENV = "RTLFORGE_TOOL_CACHE"
FORMAT = 1
#: Entries kept; past this the file starts over (tools on one machine are a handful).
MAX_ENTRIES = 256
#: A remembered output is cut here (a version is its first line or a pattern's match).
MAX_OUTPUT = 4096
#: A larger file is not read (it cannot be one this module wrote) and counts as empty.
MAX_FILE = 2 * MAX_ENTRIES * (MAX_OUTPUT + 1024)


def cache_file() -> str | None:
    """The versions file, or None when ``RTLFORGE_TOOL_CACHE`` is ``off``."""
    folder = os.environ.get(CACHE_ENV)
    if folder is not None and folder.strip().lower() in ("", "off", "0", "no", "false"):
        return None
    return os.path.join(folder or cache_dir("tools"), "versions.json")


def key(executable: str, args: Sequence[str]) -> str | None:
    """What identifies ``executable``'s answer to ``args``; None when it is not remembered
    (not an ELF file, or unreadable)."""
    real = os.path.realpath(executable)
    try:
        with open(real, "rb") as binary:
            if binary.read(4) != b"\x7fELF":
                return None
            st = os.fstat(binary.fileno())
    except OSError:
        return None
    return json.dumps([real, list(args), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
                       st.st_ctime_ns])


def _entries(path: str) -> dict[str, str]:
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read(MAX_FILE + 1)
        data: Any = json.loads(text) if len(text) <= MAX_FILE else None
    except (OSError, ValueError):
        return {}
    entries = data.get("entries") if isinstance(data, dict) and data.get(
        "format") == FORMAT else None
    if not isinstance(entries, dict):
        return {}
    return {k: v for k, v in entries.items()
            if isinstance(k, str) and isinstance(v, str) and len(v) <= MAX_OUTPUT}


def output(executable: str, args: Sequence[str], ask: Callable[[], str | None]) -> str | None:
    """What ``executable args`` prints (cut at :data:`MAX_OUTPUT`): remembered for this very
    file, else ``ask()`` (None: no answer, nothing kept) and kept. The file is written whole
    and renamed into place, so concurrent processes never read a torn one (the last writer's
    view wins)."""
    path = cache_file()
    found = key(executable, args) if path is not None else None
    entries = _entries(path) if path is not None and found is not None else {}
    if found is not None and found in entries:
        return entries[found]
    answer = ask()
    if answer is None:
        return None
    answer = answer[:MAX_OUTPUT]
    if path is not None and found is not None:
        _write(path, {**(entries if len(entries) < MAX_ENTRIES else {}), found: answer})
    return answer


def _write(path: str, entries: dict[str, str]) -> None:
    folder = os.path.dirname(path)
    tmp = None
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".versions-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump({"format": FORMAT, "entries": entries}, file)
        os.replace(tmp, path)
        tmp = None
    except OSError:  # a read-only home, a full disk: the next process asks the tool again
        pass
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
