"""The one sandboxed runner every external tool goes through, and the only way files reach one.

Generated Verilog is untrusted, and simulators execute it. Each run therefore gets:

- its own private workspace (:meth:`SandboxRunner.workspace`), filled only through
  :meth:`SandboxRunner.put`, which normalises and gates every file; anything written into it
  another way is gated before the next tool starts;
- a bubblewrap jail (:mod:`rtlforge.sandbox.jail`): fresh namespaces, uid 65534, no
  capabilities, no network, a read-only system and nothing of the host but its workspace;
- a wall-clock timeout, after which the launcher and, through the jail's PID namespace, every
  descendant is killed (simulators spawn build tools and compilers as children, and an attack
  may ``setsid``);
- rlimits on CPU time, address space, file size and processes, in force before the tool's first
  instruction;
- a cap on captured output: a ``$display`` flood is cut off and the run killed;
- a minimal environment, and the tool's name and version (asked as the spec the plugin
  declared says: :class:`~rtlforge.core.models.ToolSpec`) recorded in the result.

Jails are launched by small single-threaded servers (:mod:`rtlforge.sandbox._spawner`), one per set
of limits, that carry the rlimits themselves and ``posix_spawn`` each ``bwrap``, which inherits
them: no Python runs between fork and exec in this (threaded, large) process. ``spawner=False``
uses a ``prlimit ... -- bwrap ...`` wrapper chain instead: same guarantees and results, one
extra exec per run. ``isolation="none"`` (``RTLFORGE_SANDBOX=none``) is the explicit opt-out
where namespaces are unavailable: rlimits and an empty network namespace (``unshare -n``) only.

Infrastructure problems (tool missing, sandbox cannot start) raise typed errors; everything the
*design* does (non-zero exit, timeout, flood) is reported in :class:`ToolRun` for the caller to
turn into a verdict.
"""

from __future__ import annotations

import contextlib
import os
import queue
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.core.errors import (
    InvalidSourceError,
    IsolationUnavailableError,
    SandboxError,
    SecurityViolation,
    ToolMissingError,
)
from rtlforge.core.log import get_logger
from rtlforge.core.models import SourceFile, ToolInfo, ToolSpec
from rtlforge.sandbox import runfiles, toolversions
from rtlforge.sandbox._spawner import (
    NotSpawnable,
    SpawnedProcess,
    Spawner,
    SpawnError,
    SpawnerUnavailable,
)
from rtlforge.sandbox.command import (
    end_process_group,
    exe_facts,
    jailed_argv,
    prlimit_chain,
    rlimit_values,
    tool_environment,
)
from rtlforge.sandbox.jail import ISOLATION_ENV, Jail, isolation_choice
from rtlforge.sandbox.pool import JailedProcess, JailPool, PooledJail

if TYPE_CHECKING:
    from rtlforge.sandbox.gate import Containment, EarlyWorker, Gate, Role

log = get_logger("rtlforge.runner")


class Limits(BaseModel):
    """Resource limits for one tool run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_s: float = Field(60.0, gt=0)
    cpu_s: int | None = None  # default: timeout rounded up plus a margin
    address_space_mb: int | None = 8192
    file_size_mb: int = 256
    output_bytes: int = 1_000_000
    #: Only matters with ``isolation="none"``: a jail never has a network.
    no_network: bool = True
    #: Processes of the run's (kernel) user; stops fork bombs. None: no limit.
    processes: int | None = 4096


class _NoPooledJail(Exception):
    """A persistent jail cannot be started here: the run goes through a jail of its own."""


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

_tool_cache: dict[ToolSpec, ToolInfo] = {}
_tool_lock = threading.Lock()


def find_tool(tool: ToolSpec | str) -> ToolInfo:
    """Locate an executable and its version (cached per process, the version also on disk
    per executable file: :mod:`rtlforge.sandbox.toolversions`); raise if missing.

    ``tool`` is the spec the plugin running it declared; a bare name gets the generic install
    hint and no version. Only specs with ``version_args`` are asked for a version: running
    anything else outside the sandbox could execute an untrusted, freshly built simulation
    binary. Paths (``./obj_dir/Vtb``) are resolved but not cached, so run directories do not
    pile up here.
    """
    spec = tool if isinstance(tool, ToolSpec) else ToolSpec(name=tool)
    name = spec.name
    with _tool_lock:
        cached = _tool_cache.get(spec)
    if cached is not None:
        return cached
    path = shutil.which(name)
    if path is None:
        raise ToolMissingError(name, spec.hint)
    version = None
    if spec.version_args is not None:
        version_args = spec.version_args

        def ask() -> str | None:
            try:
                proc = subprocess.run([path, *version_args], capture_output=True, text=True,
                                      timeout=10, stdin=subprocess.DEVNULL, check=False)
            except (OSError, subprocess.TimeoutExpired):
                return None
            return proc.stdout or proc.stderr

        output = toolversions.output(path, version_args, ask)
        version = spec.parse_version(output) if output is not None else None
    info = ToolInfo(name=name, version=version, path=path)
    if os.sep not in name:
        with _tool_lock:
            _tool_cache[spec] = info
    return info


def tool_spec(executable: str, specs: Iterable[ToolSpec]) -> ToolSpec:
    """The declared spec ``executable`` (a name or a path) runs, matched by file name and
    pointed at it; a bare spec when none is declared."""
    base = os.path.basename(executable)
    for spec in specs:
        if os.path.basename(spec.name) == base:
            return spec.using(executable)
    return ToolSpec(name=executable)


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


def _rlimits(limits: Limits) -> dict[str, int]:
    return rlimit_values(timeout_s=limits.timeout_s, cpu_s=limits.cpu_s,
                         file_size_mb=limits.file_size_mb,
                         address_space_mb=limits.address_space_mb, processes=limits.processes)


#: Spawners kept per runner, one per (network mode, limits) in use; the least recent goes first.
_MAX_SPAWNERS = 4

_SpawnerKey = tuple[tuple[str, ...], tuple[tuple[str, int], ...]]


def _close_spawners(spawners: dict[_SpawnerKey, Spawner],
                    launchers: list[_Launcher] | None = None,
                    pools: list[JailPool] | None = None) -> None:
    while pools:
        pools.pop().close()
    while spawners:
        _, spawner = spawners.popitem()
        spawner.close()
    while launchers:
        launchers.pop().stop()


def _finalize(spawners: dict[_SpawnerKey, Spawner], launchers: list[_Launcher],
              pools: list[JailPool], workspaces: dict[Path, _Workspace], keep: bool) -> None:
    """A runner's last act (garbage collection or interpreter exit, also after SIGTERM in the
    CLI): stop its processes, and remove the run directories still open: those of long-lived
    workers (the gate's), or of a run the exit cut short. A timeout or a kill must not leave
    a run directory behind."""
    while pools:
        pools.pop().close(leased=True)
    _close_spawners(spawners, launchers)
    if not keep:
        for path in list(workspaces):
            shutil.rmtree(path, ignore_errors=True)


#: Largest text file accepted into a workspace (a 10 MB "design" is an attack, not a design).
MAX_FILE_CHARS = 4_000_000
_PLAIN_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _is_plain_file_name(name: str) -> bool:
    """A name in the run directory itself: no path, no ``..`` (dot-files are ours)."""
    return 0 < len(name) <= 200 and ".." not in name and set(name) <= _PLAIN_NAME_CHARS


def normalise_source(f: SourceFile) -> SourceFile:
    """``f`` with LF line endings; :class:`InvalidSourceError` for text tools would misread.

    Lone CRs and CRLFs become LF so the gate and every tool split lines alike; NUL bytes, lone
    surrogates (text that is not Unicode) and oversized files are refused with the file's name.
    """
    text = f.content
    if len(text) > MAX_FILE_CHARS:
        raise InvalidSourceError(f"{f.name}: {len(text)} characters; files over "
                                 f"{MAX_FILE_CHARS} are refused", file=f.name)
    nul = text.find("\0")
    if nul >= 0:
        raise InvalidSourceError(f"{f.name}: NUL character at offset {nul}; tools disagree on "
                                 "how to read it", file=f.name)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidSourceError(f"{f.name}: not valid Unicode text (lone surrogate at offset "
                                 f"{exc.start})", file=f.name) from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        return SourceFile(name=f.name, content=text)
    return f


class _Launcher(threading.Thread):
    """A thread that only starts processes, so that they may outlive the caller's thread."""

    def __init__(self) -> None:
        super().__init__(name="rtlforge-launcher", daemon=True)
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None] = \
            queue.SimpleQueue()
        self.start()

    def run(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, future = job
            try:
                future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                future.set_exception(exc)
        # Returning ends the thread: every jail it started is killed with it.

    def call(self, fn: Callable[[], Any]) -> Any:
        future: Future[Any] = Future()
        self._jobs.put((fn, future))
        return future.result()

    def stop(self) -> None:
        self._jobs.put(None)


class _Workspace:
    """A run directory and what is known about its files: written through ``put`` (checked)
    or by a tool (output). Anything else found before a run is gated first."""

    def __init__(self, path: Path, jail: PooledJail | None = None) -> None:
        self.path = path
        self.jail = jail  # the persistent jail this workspace leased, if any
        self._known: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def _scan(self) -> dict[str, tuple[int, int]]:
        found: dict[str, tuple[int, int]] = {}
        for root, _dirs, names in os.walk(self.path):
            for name in names:
                full = os.path.join(root, name)
                with contextlib.suppress(OSError):
                    st = os.lstat(full)
                    found[os.path.relpath(full, self.path)] = (st.st_size, st.st_mtime_ns)
        return found

    def names(self) -> list[str]:
        return [n for n in self._scan() if os.sep not in n]

    def record(self, names: Iterable[str]) -> None:
        with self._lock:
            for name in names:
                with contextlib.suppress(OSError):
                    st = os.lstat(self.path / name)
                    self._known[name] = (st.st_size, st.st_mtime_ns)

    def record_all(self) -> None:
        found = self._scan()
        with self._lock:
            self._known = found

    def unrecorded(self) -> list[str]:
        found = self._scan()
        with self._lock:
            return sorted(n for n, stat in found.items() if self._known.get(n) != stat)


class SandboxRunner:
    """Runs external tools under limits, each in its own jail. Thread-safe; one instance can
    serve a worker pool.

    Files reach a tool only through a workspace: :meth:`workspace` makes the run directory and
    :meth:`put` checks and writes files into it (text normalised, static gate applied);
    :meth:`run` refuses any other directory and gates every file that was written into the
    workspace some other way before the tool starts. Tools run under ``bwrap``
    (:mod:`rtlforge.sandbox.jail`); ``isolation="none"`` (or ``RTLFORGE_SANDBOX=none``) is the
    explicit, logged opt-out for platforms without namespaces.

    Spawner processes (one per set of limits in use) start on first use and end with
    :meth:`close`, the ``with`` block, garbage collection or interpreter exit.
    ``spawner=False`` launches through a ``prlimit`` wrapper chain instead.

    ``unsafe_skip_gate`` is for tests only: it lets the attack corpus show that the jail alone
    contains what the gate would have refused.
    """

    def __init__(self, limits: Limits | None = None, *, base_dir: str | Path | None = None,
                 keep_workspaces: bool = False, spawner: bool = True,
                 isolation: str | None = None, gate_timeout_s: float = 10.0,
                 gate_memory_mb: int = 2048, unsafe_skip_gate: bool = False,
                 persistent_jails: bool = True) -> None:
        self.limits = limits or Limits()
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self.keep_workspaces = keep_workspaces
        self.use_spawner = spawner
        self.isolation = isolation_choice(isolation)
        self.gate_timeout_s = gate_timeout_s
        self.gate_memory_mb = gate_memory_mb
        self.unsafe_skip_gate = unsafe_skip_gate
        self.persistent_jails = persistent_jails
        self._pool: JailPool | None = None
        self._pool_lock = threading.Lock()
        self._prlimit = shutil.which("prlimit") or shutil.which("prlimit", path="/usr/bin:/bin")
        self._spawners: dict[_SpawnerKey, Spawner] = {}
        self._spawners_lock = threading.Lock()
        self._launchers: list[_Launcher] = []  # none or one, shared with the finalizer
        self._launcher_lock = threading.Lock()
        self._pools: list[JailPool] = []  # none or one, shared with the finalizer
        self._jail: Jail | None = None
        self._jail_error: IsolationUnavailableError | None = None
        self._jail_lock = threading.Lock()
        self._workspaces: dict[Path, _Workspace] = {}
        self._exe_cache: dict[str, tuple[bool, Path | None, bool]] = {}
        self._workspaces_lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _finalize, self._spawners, self._launchers,
                                           self._pools, self._workspaces, keep_workspaces)
        self._gate: Gate | None = None
        if self.isolation == "none":
            log.warning("sandbox_isolation_disabled", how=f"{ISOLATION_ENV}=none",
                        effect="tools run with rlimits and no network only: untrusted input "
                               "can read and write the host's files")

    def close(self) -> None:
        """Stop the spawners and gate workers; a later run starts them again."""
        # the gate first: its workers' workspaces give their jails back to the pool, which
        # then discards them with the other idle ones
        gate, self._gate = self._gate, None
        if gate is not None:
            gate.close()
        with self._spawners_lock:
            _close_spawners(self._spawners)
        with self._pool_lock:
            self._pool = None
            while self._pools:
                self._pools.pop().close()
        with self._launcher_lock:
            while self._launchers:
                self._launchers.pop().stop()

    def __enter__(self) -> SandboxRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def prestart(self) -> None:
        """Start, on background threads, what the first validation waits for: a gate worker
        and a jail for its tools (their jails too). For a one-shot command, whose set-up
        (loading the task, building the pipeline) then overlaps their start; a long-lived
        caller gains nothing from it. Failures surface at first use, as without it."""
        gate = None if self.unsafe_skip_gate else self.gate
        starts_worker = gate is not None and gate.reserve_prestart()
        pool = self._jail_pool()
        if pool is not None:  # the tools' jail (the worker's workspace leases none)
            pool.prestart(1)
        if gate is not None and starts_worker:
            gate.start_prestart()

    def adopt(self, early: EarlyWorker) -> None:
        """Take a gate worker started before this runner existed: its jail becomes this
        runner's once its probe has succeeded (no second probe) and the worker joins the
        gate's idle ones, so the first check need not start one. Closed instead where this
        runner would not use it (the gate skipped, isolation off, the probe failed)."""
        if self.unsafe_skip_gate or self.isolation != "bwrap" or not early.proven():
            early.close()  # unproven: this runner probes its own jail and says why it failed
            return
        with self._jail_lock:
            if self._jail is None and self._jail_error is None:
                self._jail = early.jail
        self.gate.adopt(early)

    # ---------------------------------------------------------------- isolation

    def jail(self) -> Jail | None:
        """The jail every run uses (None under ``isolation="none"``); raises
        IsolationUnavailableError, every time, where the platform cannot provide one."""
        if self.isolation == "none":
            return None
        with self._jail_lock:
            if self._jail is None and self._jail_error is None:
                try:
                    self._jail = Jail.discover()
                except IsolationUnavailableError as exc:
                    log.error("sandbox_unavailable", error=str(exc))
                    self._jail_error = exc
            if self._jail_error is not None:
                raise IsolationUnavailableError(str(self._jail_error))
            return self._jail

    @property
    def gate(self) -> Gate:
        """The static gate, run in bounded worker processes (started on first use)."""
        if self._gate is None:
            from rtlforge.sandbox.gate import Gate

            with self._jail_lock:
                if self._gate is None:
                    self._gate = Gate(self, timeout_s=self.gate_timeout_s,
                                      memory_mb=self.gate_memory_mb)
        return self._gate

    # ---------------------------------------------------------------- workspaces

    @contextlib.contextmanager
    def workspace(self, prefix: str = "rtlforge-", *, pooled: bool = True) -> Iterator[Path]:
        """A fresh private run directory, removed afterwards unless ``keep_workspaces``.

        Only here can tools run, and files should get in through :meth:`put`. ``pooled=False``
        leases no persistent jail: for a workspace whose only process is one long-lived
        :meth:`spawn` (a gate worker), which gets a jail of its own anyway; it then need not
        wait for a jail to start. Such a directory's name should carry its owner
        (:func:`rtlforge.sandbox.stale.prefix`), so a killed process's is swept.
        """
        pool = self._jail_pool() if pooled else None
        lease: PooledJail | None = None
        try:
            if self.base_dir is not None:
                self.base_dir.mkdir(parents=True, exist_ok=True)
            lease = pool.lease() if pool is not None else None
            parent = lease.root if lease is not None else self.base_dir
            path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent)).resolve()
        except OSError as exc:
            if lease is not None and pool is not None:
                pool.give_back(lease)
            raise SandboxError(f"cannot create a run directory: {exc}") from exc
        with self._workspaces_lock:
            self._workspaces[path] = _Workspace(path, lease)
        try:
            yield path
        finally:
            with self._workspaces_lock:
                self._workspaces.pop(path, None)
            if not self.keep_workspaces:
                shutil.rmtree(path, ignore_errors=True)
            if lease is not None and pool is not None:
                pool.give_back(lease)  # reset (everything of this workspace gone) or closed

    def _jail_pool(self) -> JailPool | None:
        """The pool of persistent jails workspaces lease, where they apply: a bubblewrap jail,
        the spawner path, and run directories that do not outlive their workspace."""
        if (not self.persistent_jails or not self.use_spawner or self.keep_workspaces
                or self.isolation != "bwrap"):
            return None
        try:
            jail = self.jail()
        except IsolationUnavailableError:
            return None  # every run will say so
        assert jail is not None
        with self._pool_lock:
            if self._pool is None:
                self._pool = JailPool(jail.pooled_argv, self._from_launcher_thread,
                                      self.base_dir)
                self._pools[:] = [self._pool]
            return self._pool

    def _workspace_of(self, cwd: str | Path) -> _Workspace:
        # the path workspace() yielded (the usual caller) is a key as given; resolve otherwise
        path = cwd if isinstance(cwd, Path) else Path(cwd)
        with self._workspaces_lock:
            ws = self._workspaces.get(path)
        if ws is None:
            path = path.resolve()
            with self._workspaces_lock:
                ws = self._workspaces.get(path)
        if ws is None:
            raise SandboxError(f"{cwd} is not a live workspace of this runner: tools run only "
                               "in directories from SandboxRunner.workspace()")
        return ws

    def put(self, workdir: str | Path, files: Sequence[SourceFile], *, role: Role,
            readable: Iterable[str] | None = None,
            rewrite: Callable[[SourceFile], str] | None = None,
            contain: Containment | None = None) -> tuple[SourceFile, ...]:
        """Check ``files`` and write them into the workspace; return them as written.

        Text is normalised first (line endings to LF, so every reader splits lines alike) and
        must be valid Unicode without NUL (:class:`InvalidSourceError` otherwise). Then the gate
        checks them for ``role``; ``readable`` names the files they may include or read
        (default: everything already in the workspace plus these). Raises
        :class:`SecurityViolation`; nothing is written unless all files pass. ``rewrite``
        changes a file after the check (the pipeline adds its verdict markers to testbenches):
        only for our own, trusted additions. ``contain`` (testbench, support, predefines) also
        checks, in the same request to the gate, that the design names nothing of the
        testbench's (:meth:`Gate.contained`).
        """
        ws = self._workspace_of(workdir)
        clean = tuple(normalise_source(f) for f in files)
        for f in clean:
            if not _is_plain_file_name(f.name):
                raise InvalidSourceError(f"{f.name!r} is not a plain file name", file=f.name)
        if readable is None:
            readable = {*ws.names(), *(f.name for f in clean)}
        if not self.unsafe_skip_gate and role != "trusted":
            self.gate.check(clean, role=role, available=readable, contain=contain)
        for f in clean:
            # A fresh file: whatever an earlier run left under this name (a link) is replaced.
            runfiles.replace_file(ws.path, f.name, rewrite(f) if rewrite is not None
                                  else f.content)
        ws.record(f.name for f in clean)
        return clean

    # ---------------------------------------------------------------- running

    def _wrap(self, prefix: Sequence[str], rlimits: Mapping[str, int]) -> list[str]:
        """The wrapper chain (``spawner=False``): ``unshare`` and ``prlimit`` exec the tool."""
        return prlimit_chain(prefix, self._prlimit, rlimits)

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

    def _prepare(self, argv: Sequence[str], cwd: str | Path, limits: Limits,
                 ro_paths: Sequence[str | Path], spec: ToolSpec | None, *,
                 pooled: bool = False,
                 ) -> tuple[list[str], list[str], ToolInfo, _Workspace, bool]:
        """Jailed argv, launcher prefix, tool, workspace and whether the network is cut.

        With ``pooled``, a run the workspace's persistent jail can serve (everything it must
        read is bound there) gets the bare argv and an empty prefix; the caller checks
        ``ws.jail`` to tell (it is None'd out here for a run the jail cannot serve)."""
        ws = self._workspace_of(cwd)
        tool = find_tool(spec.using(argv[0]) if spec is not None else argv[0])
        jail = self.jail()
        self._admit(ws)
        exe = tool.path or argv[0]
        if jail is None:
            prefix = network_isolation_prefix() if limits.no_network else []
            return [exe, *argv[1:]], prefix, tool, ws, bool(prefix)
        facts = self._exe_facts(jail, exe, cache=os.sep not in argv[0])
        if pooled and ws.jail is not None and not ws.jail.broken and facts[2] \
                and all(jail.visible_pooled(p) for p in ro_paths):
            return [exe, *argv[1:]], [], tool, ws, True
        return jailed_argv(jail, ws.path, exe, argv[1:], ro_paths, facts=facts), [], tool, ws, True

    def _exe_facts(self, jail: Jail, exe: str, *, cache: bool,
                   ) -> tuple[bool, Path | None, bool]:
        """Whether ``exe`` needs the Python runtime bound, the directory to bind for a tool
        outside the system directories (a venv's launcher script) or None, and whether the
        pooled jails already see that directory. Kept per runner for tools found by name on
        PATH (as :func:`find_tool` keeps them); a path (``./obj_dir/Vtb``) is asked afresh."""
        facts = self._exe_cache.get(exe) if cache else None
        if facts is None:
            facts = exe_facts(jail, exe)
            if cache:
                self._exe_cache[exe] = facts
        return facts

    def _admit(self, ws: _Workspace) -> None:
        """Gate whatever was written into the workspace without :meth:`put` (a plugin that
        wrote its own files): it is treated as untrusted design text, whatever its suffix."""
        stray = ws.unrecorded()
        if not stray:
            return
        files = []
        for name in stray:
            try:
                data = runfiles.read_bytes(ws.path, name, 4 * MAX_FILE_CHARS)
                if data is None:
                    continue  # gone again
                text = data.decode("utf-8")
            except (OSError, UnicodeDecodeError, SecurityViolation) as exc:
                raise SecurityViolation(
                    f"{name} was written into the run directory without SandboxRunner.put and "
                    f"is not readable text ({exc}); it cannot be checked", file=name,
                    construct="unchecked file") from exc
            files.append(SourceFile(name=name, content=text))
        clean = [normalise_source(f) for f in files]
        if not self.unsafe_skip_gate:
            self.gate.check(clean, role="design", available=ws.names())
        for before, after in zip(files, clean, strict=True):
            if after is not before:
                runfiles.replace_file(ws.path, after.name, after.content)
        ws.record(stray)

    def _launch(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], limits: Limits,
                prefix: Sequence[str], feed_stdin: bool, pooled: PooledJail | None = None,
                ) -> tuple[_Process, int | None, int, int]:
        """Start the tool on fresh pipes; return it with our ends (stdin or None, out, err).

        ``pooled``: the workspace's persistent jail starts it (``argv`` is the bare tool)."""
        rlimits = _rlimits(limits)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        in_r, in_w = os.pipe() if feed_stdin else (None, None)
        ours = [fd for fd in (in_w, out_r, err_r) if fd is not None]
        try:
            if pooled is not None:
                # as in a per-run jail, whose bwrap sets these: HOME is the run directory
                jail_env = {**env, "HOME": str(cwd), "TMPDIR": "/tmp"}
                try:
                    return (pooled.spawn(argv[0], argv, cwd=str(cwd), env=jail_env,
                                         rlimits={**rlimits, "RLIMIT_MSGQUEUE": 0},
                                         stdout=out_w, stderr=err_w, stdin=in_r),
                            in_w, out_r, err_r)
                except SpawnerUnavailable as exc:
                    log.warning("sandbox_pooled_jail_unavailable", error=str(exc),
                                fallback="a bubblewrap jail per tool run")
                    self.persistent_jails = False
                    pooled.close()
                    raise _NoPooledJail from exc
                except SpawnError as exc:
                    # the workspace's jail died before this tool started (seen once under
                    # load): nothing ran, so this run goes to a jail of its own, as without
                    # the pool, instead of becoming an infrastructure error
                    log.warning("sandbox_pooled_jail_lost", error=str(exc),
                                fallback="a bubblewrap jail for this tool run")
                    raise _NoPooledJail from exc
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
                                fallback="prlimit wrapper chain")
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
        ro_paths: Sequence[str | Path] = (),
        tool: ToolSpec | None = None,
    ) -> ToolRun:
        """Run ``argv`` (``argv[0]`` is a tool name looked up on PATH) in the workspace ``cwd``.

        ``ro_paths`` are host files the tool may read (a liberty file); nothing else outside
        the workspace and the system directories is visible. ``tool`` is the spec the caller
        declared for ``argv[0]`` (its install hint and version flag; None: a bare name).
        """
        limits = limits or self.limits
        if timeout is not None:
            limits = limits.model_copy(update={"timeout_s": timeout})
        ws = self._workspace_of(cwd)
        lease = ws.jail if ws.jail is not None and not ws.jail.broken else None
        with lease.lock if lease is not None else contextlib.nullcontext():
            full, prefix, info, ws, isolated = self._prepare(argv, cwd, limits, ro_paths, tool,
                                                             pooled=lease is not None)
            run_env = tool_environment(ws.path, env)
            pooled = lease is not None and full[0] != (self._jail.bwrap if self._jail else "")
            start = time.perf_counter()
            try:
                proc, stdin_w, out_r, err_r = self._launch(full, ws.path, run_env, limits,
                                                           prefix, stdin is not None,
                                                           lease if pooled else None)
            except _NoPooledJail:  # a jail per tool run, as without the pool
                full, prefix, info, ws, isolated = self._prepare(argv, cwd, limits, ro_paths,
                                                                 tool)
                proc, stdin_w, out_r, err_r = self._launch(full, ws.path, run_env, limits,
                                                           prefix, stdin is not None)
            try:
                out, err, timed_out, overflow = self._collect(proc, stdin_w, out_r, err_r,
                                                              stdin, limits)
            except SpawnError as exc:
                raise SandboxError(f"{argv[0]!r}: {exc}") from exc
            finally:
                ws.record_all()  # what the tool wrote is its output, not text to gate
        seconds = time.perf_counter() - start
        rc = proc.returncode
        sig = -rc if rc is not None and rc < 0 else None
        result = ToolRun(
            argv=tuple(argv), returncode=rc, stdout=out, stderr=err, seconds=seconds,
            timed_out=timed_out, output_overflow=overflow, signal=sig, tool=info,
            network_isolated=isolated,
        )
        log.debug("tool_run", tool=argv[0], rc=rc, seconds=round(seconds, 4),
                  timed_out=timed_out, overflow=overflow)
        return result

    def spawn(self, argv: Sequence[str], cwd: str | Path, *, limits: Limits | None = None,
              ro_paths: Sequence[str | Path] = (), merge_stderr: bool = True,
              tool: ToolSpec | None = None) -> subprocess.Popen[bytes]:
        """Start a long-lived tool (an interactive shell) under the same jail as :meth:`run`.

        The caller owns the process: stdin and stdout are pipes (stderr is merged into stdout,
        or discarded with ``merge_stderr=False``), it leads its own process group (end it with
        :meth:`kill`), and ``limits.timeout_s`` is not enforced here: the caller applies its own
        per-request deadline. ``cpu_s`` still caps the process's whole lifetime, so callers
        restart it when it dies. Files it reads later must be put into ``cwd``.
        """
        limits = limits or self.limits
        full, prefix, _, ws, _ = self._prepare(argv, cwd, limits, ro_paths, tool)

        def start() -> subprocess.Popen[bytes]:
            # Always the wrapper chain: the caller needs a Popen with pipes it keeps a while.
            return subprocess.Popen([*self._wrap(prefix, _rlimits(limits)), *full], cwd=ws.path,
                                    env=tool_environment(ws.path),
                                    start_new_session=True, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT if merge_stderr
                                    else subprocess.DEVNULL)

        try:
            return self._from_launcher_thread(start)
        except OSError as exc:
            raise SandboxError(f"cannot start {argv[0]!r}: {exc}") from exc

    def _from_launcher_thread(self, start: Callable[[], subprocess.Popen[bytes]],
                              ) -> subprocess.Popen[bytes]:
        """Run ``start`` on the runner's launcher thread.

        A jail dies with the *thread* that started it (``--die-with-parent`` is the kernel's
        parent-death signal, which follows threads), so a long-lived process started from a
        pool thread would be killed when that thread ends. The launcher thread lives as long as
        the runner: closing the runner (or the interpreter exiting) ends every such process.
        """
        with self._launcher_lock:
            if not self._launchers or not self._launchers[0].is_alive():
                self._launchers[:] = [_Launcher()]
            launcher = self._launchers[0]
        return launcher.call(start)

    @classmethod
    def kill(cls, proc: subprocess.Popen[bytes]) -> None:
        """End a process started by :meth:`spawn`, with its whole group, and reap it."""
        end_process_group(proc)

    @staticmethod
    def _kill_group(pid: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)

    @classmethod
    def _end_group(cls, proc: _Process) -> None:
        """Kill the run's process group, if it has one (an exec failure or a spawner that died
        before naming the pid leaves none); in a pooled jail, everything in the jail."""
        if isinstance(proc, JailedProcess):
            proc.kill()
            return
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
            # Daemonised grandchildren would outlive the run: end the whole group regardless
            # (a pooled jail kills everything in it when the run is released, below).
            if not isinstance(proc, JailedProcess):
                self._end_group(proc)
            if isinstance(proc, SpawnedProcess):
                proc.release()
            for fd in (stdin_w, out_r, err_r):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
        decode = lambda parts: b"".join(parts).decode("utf-8", errors="replace")  # noqa: E731
        return decode(chunks[1]), decode(chunks[2]), timed_out, overflow
