"""The host's only way into a run directory: every file there may be the jailed run's doing.

Whatever ran in the jail (a simulated design, a cocotb test, a Verilator ``$c``) could write its
run directory, and could leave a symbolic link to a host file, a FIFO, a socket, a hard link or a
huge file under any name the host later reads, copies or writes. The jail keeps the run from
touching the host; this module keeps the host from touching the host on the run's behalf:

- reads open regular files only: every path component is opened relative to the run directory
  with ``O_NOFOLLOW`` (a link anywhere on the path is refused, not followed), the entry is
  ``lstat``-ed before it is opened (a FIFO or device is never opened, so it cannot block or
  act), and the opened file is ``fstat``-ed again and must be the same regular file;
- a file with more than one hard link is refused: inside a jail a hard link can only join two
  names of the run's own directory (``link`` does not cross the bind mounts), so such a file is
  the run's construction, and outside a jail (``RTLFORGE_SANDBOX=none``) it may be a host file;
- every read is bounded (a caller may ask for the head of a larger file instead);
- copies (failing-run bundles) recreate directories and regular files only, never links, and
  stop at a total size;
- files the host writes are created fresh (``O_CREAT | O_EXCL | O_NOFOLLOW``) after removing
  whatever the run left under that name, so a planted link is replaced, never written through.

A planted object is reported as :class:`PlantedFileError`, a :class:`SecurityViolation`: only
code running inside the run could have made it, so it counts against the design (a pipeline
stage turns it into ``fail``), never ``pass``. A host-side I/O failure is a
:class:`SandboxError` (``infra_error``).
"""

from __future__ import annotations

import contextlib
import errno
import importlib.machinery
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from rtlforge.core.errors import SandboxError, SecurityViolation

__all__ = [
    "DEFAULT_READ_LIMIT",
    "CopyReport",
    "PlantedFileError",
    "copy_tree",
    "design_file_names",
    "host_pythonpath",
    "read_bytes",
    "read_head",
    "read_text",
    "replace_file",
    "write_new",
]

#: Largest file read whole when the caller names no bound.
DEFAULT_READ_LIMIT = 16 * 1024 * 1024
#: Bundles stop copying here (a run may write up to its file-size rlimit, many times over).
DEFAULT_COPY_LIMIT = 64 * 1024 * 1024
_MAX_DEPTH = 16

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class PlantedFileError(SecurityViolation):
    """A run directory holds something other than the regular file the host expected."""

    def __init__(self, name: str, what: str) -> None:
        super().__init__(f"{name}: {what} in the run directory where a regular file was "
                         "expected; only code running in the jail could have put it there",
                         file=name, construct="planted file")
        self.what = what


def _kind(mode: int) -> str:
    for test, word in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return word
    return "a special file"


def _parts(name: str | os.PathLike[str]) -> list[str]:
    parts = [p for p in PurePosixPath(os.fspath(name)).parts if p not in ("", ".")]
    if not parts or parts[0] == "/" or ".." in parts:
        raise ValueError(f"{os.fspath(name)!r} is not a relative path inside a run directory")
    return parts


@contextlib.contextmanager
def _dir_fd(root: Path, dirs: list[str], name: str) -> Iterator[int]:
    """A descriptor of ``root/dirs...``, each component opened without following a link."""
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise SandboxError(f"cannot open the run directory {root}: {exc}") from exc
    try:
        for part in dirs:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise PlantedFileError(name, f"{part!r} is not a directory") from None
                raise
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def _open_regular(dfd: int, leaf: str, name: str) -> tuple[int, os.stat_result]:
    """Open ``leaf`` in ``dfd`` for reading if it is a regular file with one link; raise else."""
    before = os.stat(leaf, dir_fd=dfd, follow_symlinks=False)
    if not stat.S_ISREG(before.st_mode):
        raise PlantedFileError(name, _kind(before.st_mode))
    try:
        fd = os.open(leaf, _READ_FLAGS, dir_fd=dfd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):
            raise PlantedFileError(name, "an object swapped in while it was opened") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
        os.close(fd)
        raise PlantedFileError(name, "an object swapped in while it was opened")
    if st.st_nlink != 1:
        os.close(fd)
        raise PlantedFileError(name, f"a file with {st.st_nlink} hard links")
    return fd, st


def read_head(root: str | Path, name: str | os.PathLike[str], limit: int,
              ) -> tuple[bytes, bool] | None:
    """The first ``limit`` bytes of ``root/name`` and whether the file is longer; None if there
    is no such file. Raises :class:`PlantedFileError` for anything but a regular file."""
    parts = _parts(name)
    label = "/".join(parts)
    try:
        with _dir_fd(Path(root), parts[:-1], label) as dfd:
            fd, _ = _open_regular(dfd, parts[-1], label)
            with os.fdopen(fd, "rb") as fh:
                data = fh.read(limit + 1)
    except FileNotFoundError:
        return None
    except PlantedFileError:
        raise
    except OSError as exc:
        raise SandboxError(f"cannot read {label} in the run directory: {exc}") from exc
    return data[:limit], len(data) > limit


def read_bytes(root: str | Path, name: str | os.PathLike[str],
               limit: int = DEFAULT_READ_LIMIT) -> bytes | None:
    """All of ``root/name`` (None if absent); a file over ``limit`` bytes is refused."""
    head = read_head(root, name, limit)
    if head is None:
        return None
    if head[1]:
        raise PlantedFileError("/".join(_parts(name)), f"a file over {limit} bytes")
    return head[0]


def read_text(root: str | Path, name: str | os.PathLike[str],
              limit: int = DEFAULT_READ_LIMIT, *, truncate: bool = False) -> str | None:
    """``root/name`` as UTF-8 text (undecodable bytes replaced); None if absent. Over ``limit``
    bytes it is refused, or cut to its first ``limit`` bytes with ``truncate``."""
    if truncate:
        head = read_head(root, name, limit)
        data = head[0] if head is not None else None
    else:
        data = read_bytes(root, name, limit)
    return data.decode("utf-8", errors="replace") if data is not None else None


def _clear(dfd: int, leaf: str, name: str) -> None:
    """Remove whatever the run left under ``leaf`` (a link is removed, not followed)."""
    try:
        st = os.stat(leaf, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        raise PlantedFileError(name, "a directory")
    os.unlink(leaf, dir_fd=dfd)


def _write_at(dfd: int, leaf: str, data: bytes) -> None:
    fd = os.open(leaf, _WRITE_FLAGS, 0o644, dir_fd=dfd)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def replace_file(root: str | Path, name: str, data: str | bytes) -> None:
    """Write ``root/name`` as a new file of the host's, replacing whatever is there."""
    parts = _parts(name)
    label = "/".join(parts)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        with _dir_fd(Path(root), parts[:-1], label) as dfd:
            _clear(dfd, parts[-1], label)
            _write_at(dfd, parts[-1], raw)
    except PlantedFileError:
        raise
    except OSError as exc:
        raise SandboxError(f"cannot write {label} into the run directory: {exc}") from exc


def write_new(directory: str | Path, name: str, data: str | bytes) -> Path:
    """Create ``directory/name``, which must not exist yet, without following any link.

    For results the host writes into a directory it made itself (a bundle's ``stages.json``).
    """
    if _parts(name) != [name]:
        raise ValueError(f"{name!r} is not a plain file name")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with _dir_fd(Path(directory), [], name) as dfd:
        _write_at(dfd, name, raw)
    return Path(directory) / name


@dataclass
class CopyReport:
    """What :func:`copy_tree` copied and what it left out (relative names, with why)."""

    files: int = 0
    bytes: int = 0
    skipped: list[str] = field(default_factory=list)


def copy_tree(src: str | Path, dest: str | Path, *, limit: int = DEFAULT_COPY_LIMIT,
              exclude: frozenset[str] = frozenset()) -> CopyReport:
    """Copy the run directory ``src`` into the new directory ``dest`` (its parent must exist).

    Only directories and single-link regular files are copied, each read through a descriptor
    opened without following links; links, FIFOs, sockets, devices, hard-linked files, files
    past ``limit`` bytes in all and top-level names in ``exclude`` are left out and listed.
    """
    report = CopyReport()
    dest = Path(dest)
    try:
        os.mkdir(dest, 0o755)
        with _dir_fd(Path(src), [], ".") as sfd, _dir_fd(dest, [], ".") as dfd:
            _copy_dir(sfd, dfd, "", report, limit, exclude, 0)
    except OSError as exc:
        raise SandboxError(f"cannot copy the run directory {src} to {dest}: {exc}") from exc
    return report


def _copy_dir(sfd: int, dfd: int, prefix: str, report: CopyReport, limit: int,
              exclude: frozenset[str], depth: int) -> None:
    with os.scandir(sfd) as entries:
        names = sorted(e.name for e in entries)
    for leaf in names:
        rel = prefix + leaf
        if not prefix and leaf in exclude:
            report.skipped.append(f"{rel} (a name the host writes)")
            continue
        try:
            st = os.stat(leaf, dir_fd=sfd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(st.st_mode):
            if depth >= _MAX_DEPTH:
                report.skipped.append(f"{rel}/ (nested too deep)")
                continue
            os.mkdir(leaf, 0o755, dir_fd=dfd)
            try:
                sub_s = os.open(leaf, _DIR_FLAGS, dir_fd=sfd)
            except OSError:
                report.skipped.append(f"{rel}/ (not a plain directory)")
                continue
            try:
                sub_d = os.open(leaf, _DIR_FLAGS, dir_fd=dfd)
                try:
                    _copy_dir(sub_s, sub_d, rel + "/", report, limit, exclude, depth + 1)
                finally:
                    os.close(sub_d)
            finally:
                os.close(sub_s)
            continue
        if not stat.S_ISREG(st.st_mode):
            report.skipped.append(f"{rel} ({_kind(st.st_mode)})")
            continue
        if report.bytes + st.st_size > limit:
            report.skipped.append(f"{rel} (over the bundle's {limit}-byte limit)")
            continue
        try:
            fd, opened = _open_regular(sfd, leaf, rel)
        except PlantedFileError as exc:
            report.skipped.append(f"{rel} ({exc.what})")
            continue
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(opened.st_size + 1)
        if report.bytes + len(data) > limit:
            report.skipped.append(f"{rel} (over the bundle's {limit}-byte limit)")
            continue
        _write_at(dfd, leaf, data)
        report.files += 1
        report.bytes += len(data)


#: Suffixes an interpreter imports or acts on from a directory on its path.
_PYTHON_SUFFIXES = (*importlib.machinery.all_suffixes(), ".pth", ".pyw", ".pyz", ".zip", ".egg")
#: Prefixes of the names harnesses give their own files in a run directory.
_HARNESS_PREFIXES = (".", "rtlforge", "behave_", "__")


def design_file_names(names: list[str], taken: set[str] | frozenset[str]) -> list[str]:
    """``names`` of a candidate's files, renamed where they would take a harness's place.

    Renamed: a name in ``taken`` (the task's files), one with a harness prefix (``.``,
    ``rtlforge``, ``behave_``, ``__``) and any Python could import or act on (``json.py``,
    ``sitecustomize.py``, a ``.pth`` or extension module). The last kind gets a ``.txt``
    suffix as well: a candidate's Python is never code, wherever a run directory ends up.
    """
    used = set(taken) | set(names)
    out = []
    for name in names:
        low = name.lower()
        python = low.endswith(_PYTHON_SUFFIXES) or low.startswith("__pycache__")
        if name not in taken and not python and not low.startswith(_HARNESS_PREFIXES):
            out.append(name)
            continue
        new = f"dut_{name.lstrip('.')}" + (".txt" if python else "")
        while new in used:
            new = f"dut_{new}"
        used.add(new)
        out.append(new)
    return out


def host_pythonpath(workdir: Path) -> list[str]:
    """The host's ``PYTHONPATH`` entries a jailed driver may use: absolute paths outside the
    run directory (``python -I`` drops the variable, and with it any relative entry)."""
    run = Path(workdir).resolve()
    keep: list[str] = []
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        path = Path(entry).resolve()
        if path != run and run not in path.parents and path not in run.parents:
            keep.append(str(path))
    return keep
