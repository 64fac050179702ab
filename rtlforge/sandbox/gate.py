"""The static gate, run where a hostile input cannot hurt the host: bounded worker processes.

The gate parses untrusted text with slang. Input built to blow up a macro expander (macros
defining macros, deep nesting, millions of tokens) would otherwise cost the host process tens of
seconds and gigabytes, and no ``--timeout`` would bound it. So every check runs in a worker
process inside the same jail as the tools, under an address-space limit, with a wall-clock
budget per request; a worker that runs out of either is killed and the input is refused as
"too expensive to check" (``fail``/``security``), never a hang or a host OOM.

Workers are long-lived (Python and pyslang load once, ~0.2 s) and pooled: a thread takes an
idle worker or starts one, so a pipeline's worker threads check in parallel. A request is a
length-prefixed JSON message; results for the same input are memoised (task files are the same
for every candidate of a task).
"""

from __future__ import annotations

import hashlib
import json
import os
import selectors
import shutil
import subprocess
import tempfile
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rtlforge.core.errors import IsolationUnavailableError, SandboxError, SecurityViolation
from rtlforge.core.log import get_logger
from rtlforge.sandbox import stale
from rtlforge.sandbox.command import (
    end_process_group,
    jailed_argv,
    prlimit_chain,
    rlimit_values,
    tool_environment,
)
from rtlforge.sandbox.jail import PACKAGE_DIR, Jail, JailProbe, interpreter, isolation_choice

if TYPE_CHECKING:
    from rtlforge.core.models import SourceFile
    from rtlforge.sandbox.runner import SandboxRunner

log = get_logger("rtlforge.gate")

#: What a file is to the gate: untrusted design text, task-provided testbench or support text
#: (may use file I/O), a netlist a tool wrote (structural; read by sta, never simulated), or
#: "trusted": a file no HDL tool reads, written as is: one rtlforge composes itself (a Tcl
#: script, the cocotb driver) or a task's cocotb module, Python that only runs inside the jail.
#: Text derived from untrusted input is never "trusted"; designs may not read such files.
Role = Literal["design", "testbench", "netlist", "trusted"]

#: A worker is replaced after this many requests (slang's allocations only grow).
_MAX_REQUESTS = 2000
_MEMO_SIZE = 4096
_WORKER_CODE = ("import sys; sys.path.insert(0, {root!r}); "
                "from rtlforge.sandbox._gate_worker import main; main()")
#: A worker's limits other than memory: it lives long and answers many requests, each under
#: its own wall-clock budget (the gate's ``timeout_s``); the rest are the runner's defaults.
_WORKER_LIMITS: dict[str, Any] = {"timeout_s": 3600, "cpu_s": 36000, "file_size_mb": 256,
                                  "processes": 4096}


def _worker_code() -> str:
    """The worker imports the rtlforge this process runs, not whichever the interpreter finds.

    ``-I`` ignores ``PYTHONPATH``, so a checkout used through it (or a second worktree) would
    otherwise start a worker from another copy, or from none the jail can see.
    """
    return _WORKER_CODE.format(root=str(PACKAGE_DIR.parent))


class _Worker:
    """One gate process in its own (empty) run directory; usable once it said it is ready."""

    def __init__(self, proc: subprocess.Popen[bytes], release: Callable[[], None]) -> None:
        self.proc = proc
        self._release = release  # removes the run directory
        self.requests = 0
        self._ready = False

    @classmethod
    def start(cls, runner: SandboxRunner, memory_mb: int) -> _Worker:
        """A worker through ``runner`` (its jail, launcher thread and limits), ready."""
        from rtlforge.sandbox.runner import Limits

        # no pooled jail: the worker runs in a jail of its own, and must not wait for one to
        # start; named for its owner, so a killed process's is swept like its jail roots
        workspace = runner.workspace(prefix=stale.prefix("gate"), pooled=False)
        path = workspace.__enter__()
        limits = Limits(address_space_mb=memory_mb, output_bytes=1 << 24, **_WORKER_LIMITS)
        try:
            proc: subprocess.Popen[bytes] = runner.spawn(
                [interpreter(), "-I", "-c", _worker_code()], path, limits=limits,
                merge_stderr=False)
        except BaseException:
            workspace.__exit__(None, None, None)
            raise
        worker = cls(proc, lambda: workspace.__exit__(None, None, None))
        worker.wait_ready()
        return worker

    def wait_ready(self) -> None:
        """Read the worker's hello (once); raise SandboxError, closing it, if it never came."""
        if self._ready:
            return
        hello = self._read(deadline=time.monotonic() + 60)
        if hello is None or not hello.get("ready"):
            self.close()
            raise SandboxError("the gate's worker process did not start in the sandbox "
                               f"(python {interpreter()}): {hello}")
        self._ready = True

    def _read(self, deadline: float) -> dict[str, Any] | None:
        """One framed reply, or None if the worker died or the deadline passed."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        buf = bytearray()
        need = 4
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while len(buf) < need:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not sel.select(timeout=remaining):
                    if time.monotonic() >= deadline:
                        return None
                    continue
                chunk = os.read(fd, max(65536, need - len(buf)))
                if not chunk:
                    return None
                buf += chunk
                if need == 4 and len(buf) >= 4:
                    need = 4 + int.from_bytes(buf[:4], "big")
        return json.loads(bytes(buf[4:need]))

    def ask(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any] | None:
        """The worker's reply, or None when it ran out of time or memory (it is then dead)."""
        assert self.proc.stdin is not None
        body = json.dumps(request).encode()
        self.requests += 1
        try:
            self.proc.stdin.write(len(body).to_bytes(4, "big") + body)
            self.proc.stdin.flush()
        except OSError:
            return None
        return self._read(time.monotonic() + timeout_s)

    def close(self) -> None:
        end_process_group(self.proc)
        self._release()


class Gate:
    """Checks files for a role, in pooled, bounded worker processes. Thread-safe."""

    def __init__(self, runner: SandboxRunner, *, timeout_s: float = 10.0,
                 memory_mb: int = 2048) -> None:
        self.runner = runner
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._prestarted: threading.Event | None = None  # set when a prestart has finished
        self._memo: OrderedDict[str, dict[str, Any] | None] = OrderedDict()
        self._closed = False

    # ------------------------------------------------------------------ public checks

    def check(self, files: Sequence[SourceFile], *, role: Role,
              available: Collection[str] = (),
              contain: Containment | None = None) -> None:
        """Raise :class:`SecurityViolation` if ``files`` are unsafe for ``role``.

        ``contain`` (testbench, support, predefines): also check, after that, that ``files``
        (a design) name nothing of the testbench's (:meth:`contained`), in the same round trip
        to a worker."""
        requests = [{"op": "check", "role": role, "available": sorted(set(available)),
                     "files": [[f.name, f.content] for f in files]}]
        if contain is not None:
            requests.append(_contain_request(files, *contain))
        self._ask_all(requests)

    def contained(self, design: Sequence[SourceFile], testbench: Sequence[SourceFile],
                  support: Sequence[SourceFile] = (),
                  predefines: Collection[Sequence[str]] = ((),)) -> None:
        """Raise :class:`SecurityViolation` if the design names anything of the testbench's.

        ``predefines``: one macro set per tool that will compile the design (``NAME`` or
        ``NAME=VALUE``); the check judges the program each of them preprocesses.
        """
        self._ask_all([_contain_request(design, testbench, support, predefines)])

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
            self._closed = True
        for worker in idle:
            worker.close()

    def reserve_prestart(self) -> bool:
        """Whether a prestart should start a worker (none is idle or starting); True reserves
        it: the caller then calls :meth:`start_prestart` (after preparing its jail)."""
        with self._lock:
            if self._closed or self._idle or self._prestarted is not None:
                return False
            self._prestarted = threading.Event()
            return True

    def start_prestart(self) -> None:
        """Start the reserved worker on a background thread and keep it idle: a one-shot
        command overlaps the worker's start (Python and pyslang in a jail, ~70 ms) with its
        own set-up, and its first check finds the worker ready (or waits for it rather than
        start a second). A start that fails is dropped: the first check then starts a worker
        itself and reports why it cannot."""
        threading.Thread(target=self._prestart, daemon=True,
                         name="rtlforge-gate-prestart").start()

    def _prestart(self) -> None:
        worker: _Worker | None = None
        try:
            worker = _Worker.start(self.runner, self.memory_mb)
        except Exception as exc:  # noqa: BLE001 - the first check retries and reports it
            log.debug("gate_prestart_failed", error=f"{type(exc).__name__}: {exc}")
        with self._lock:
            done, self._prestarted = self._prestarted, None
            if worker is not None and not self._closed:
                self._idle.append(worker)
                worker = None
        if worker is not None:
            worker.close()
        if done is not None:
            done.set()

    # ------------------------------------------------------------------ plumbing

    def adopt(self, worker: EarlyWorker) -> bool:
        """Keep a worker started before this gate (:class:`EarlyWorker`) as an idle one; False
        (it is then closed) where this gate is closed or its memory limit differs."""
        with self._lock:
            taken = not self._closed and worker.memory_mb == self.memory_mb
            if taken:
                self._idle.append(worker.worker)
        if not taken:
            worker.close()
        return taken

    def _borrow(self) -> _Worker:
        while True:
            with self._lock:
                idle = self._idle.pop() if self._idle else None
                pending = self._prestarted
            if idle is None and pending is not None:  # started earlier than a new one would
                pending.wait()                        # be: wait for it
                with self._lock:
                    idle = self._idle.pop() if self._idle else None
            if idle is None:
                return _Worker.start(self.runner, self.memory_mb)
            try:
                idle.wait_ready()  # an adopted worker may still be starting
                return idle
            except SandboxError as exc:  # it did not start: try the next, or a new one
                log.debug("gate_worker_start_failed", error=str(exc))

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            pooled = worker.requests < _MAX_REQUESTS and not self._closed
            if pooled:
                self._idle.append(worker)
        if not pooled:
            worker.close()

    def _ask_all(self, requests: Sequence[dict[str, Any]]) -> None:
        """Answer ``requests`` in order, raising the first violation; what the memo does not
        know goes to one worker in one round trip (a validation's design check and
        containment are one request, not two)."""
        keys = [hashlib.sha256(json.dumps(r, sort_keys=True).encode()).hexdigest()
                for r in requests]
        todo: list[tuple[str, dict[str, Any]]] = []
        known: dict[str, Any] | None = None  # a memoised violation after the misses
        for key, request in zip(keys, requests, strict=True):
            with self._lock:
                hit = key in self._memo
                if hit:
                    self._memo.move_to_end(key)
                    verdict = self._memo[key]
            if not hit:
                todo.append((key, request))
            elif verdict is not None:
                known = verdict
                break
        if todo:
            self._run([r for _, r in todo], [k for k, _ in todo])
        _raise(known)

    def _run(self, requests: list[dict[str, Any]], keys: list[str]) -> None:
        worker = self._borrow()
        start = time.monotonic()  # after a fresh worker's start-up, which is not the input's
        budget = self.timeout_s * len(requests)  # each request keeps its own budget
        single = len(requests) == 1
        try:
            reply = worker.ask(requests[0] if single else {"op": "batch", "requests": requests},
                               budget)
        except BaseException:
            worker.close()
            raise
        if reply is None:  # out of time or memory: the worker is dead or must be
            worker.close()
            seconds = time.monotonic() - start
            why = (f"ran past its {self.timeout_s:g} s budget" if seconds >= budget
                   else f"ran out of memory ({self.memory_mb} MB) or crashed on this input")
            log.warning("gate_budget_exceeded", why=why)
            first = requests[0].get("files") or requests[0].get("design") or [["?", ""]]
            raise SecurityViolation(f"too expensive to check: the security check {why}",
                                    file=first[0][0], line=None, construct="gate budget")
        self._give_back(worker)
        results = [reply] if single else reply.get("results")
        if not isinstance(results, list):
            results = [{"error": reply.get("error", f"malformed reply {reply!r}")}]
        for key, result in zip(keys, results, strict=False):
            if "error" in result:
                raise SandboxError(f"the security check crashed: {result['error']}")
            verdict = result.get("violation")
            with self._lock:
                self._memo[key] = verdict
                while len(self._memo) > _MEMO_SIZE:
                    self._memo.popitem(last=False)
            _raise(verdict)
        if len(results) < len(keys):
            raise SandboxError("the security check answered part of a batch without a "
                               "violation")


if TYPE_CHECKING:  # a name for annotations only: SourceFile is pydantic, not imported here
    Containment = tuple[Sequence[SourceFile], Sequence[SourceFile], Collection[Sequence[str]]]


def _contain_request(design: Sequence[SourceFile], testbench: Sequence[SourceFile],
                     support: Sequence[SourceFile] = (),
                     predefines: Collection[Sequence[str]] = ((),)) -> dict[str, Any]:
    views = sorted({tuple(p) for p in predefines}) or [()]
    return {"op": "contain", "design": [[f.name, f.content] for f in design],
            "testbench": [[f.name, f.content] for f in testbench],
            "support": [[f.name, f.content] for f in support],
            "predefines": [list(v) for v in views]}


def _raise(violation: dict[str, Any] | None) -> None:
    if violation is not None:
        raise SecurityViolation(violation["message"], file=violation.get("file"),
                                line=violation.get("line"), construct=violation.get("construct"),
                                source_line=violation.get("source_line"),
                                hint=violation.get("hint"))


class EarlyWorker:
    """A gate worker started before any runner exists, for a one-shot command to adopt.

    The first check of a command waits for the gate's worker (Python and pyslang in a jail,
    ~0.1 s), and a runner can start it only once pydantic and the runner are imported (another
    ~0.15 s). This starts it from the command's first lines instead, with the jail, limits,
    environment and command line the runner would use (:mod:`rtlforge.sandbox.command`), and
    :meth:`SandboxRunner.adopt <rtlforge.sandbox.runner.SandboxRunner.adopt>` hands it to the
    runner's gate. The process is started from the calling thread and dies with it
    (bubblewrap's ``--die-with-parent``): call this from the main thread. It is killed and its
    run directory removed when it is closed (by the gate that adopted it) or the interpreter
    exits.
    """

    def __init__(self, jail: Jail, worker: _Worker, memory_mb: int,
                 proof: JailProbe | None = None) -> None:
        self.jail = jail
        self.worker = worker
        self.memory_mb = memory_mb
        self._proof = proof

    def proven(self) -> bool:
        """Whether the jail's probe succeeded (waiting for it if it still runs): an adopting
        runner must not use the jail before."""
        if self._proof is None:
            return True
        try:
            self._proof.result()
        except IsolationUnavailableError:
            return False
        return True

    @classmethod
    def start(cls, *, memory_mb: int = 2048, base_dir: str | Path | None = None,
              ) -> EarlyWorker | None:
        """The started worker; None where the runner would not start it this way (isolation
        off, no bubblewrap jail or no ``prlimit`` here): the runner then starts its own and
        reports what is missing."""
        if isolation_choice(None) != "bwrap":
            return None
        prlimit = shutil.which("prlimit") or shutil.which("prlimit", path="/usr/bin:/bin")
        if prlimit is None:
            return None
        try:  # the probe runs while the command imports the rest (~10 ms off its start)
            jail = Jail.discover(prove=False)
            proof = jail.start_probe()
        except IsolationUnavailableError:
            return None
        try:
            path = Path(tempfile.mkdtemp(prefix=stale.prefix("gate"), dir=base_dir)).resolve()
        except OSError:
            return None
        rlimits = rlimit_values(address_space_mb=memory_mb, **_WORKER_LIMITS)
        argv = [*prlimit_chain([], prlimit, rlimits),
                *jailed_argv(jail, path, interpreter(), ["-I", "-c", _worker_code()])]
        try:
            proc = subprocess.Popen(argv, cwd=path, env=tool_environment(path),
                                    start_new_session=True, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError:
            shutil.rmtree(path, ignore_errors=True)
            return None
        # holds the process, so it runs when the worker closes or at interpreter exit
        ended = weakref.finalize(proc, _end_early, proc, path)
        return cls(jail, _Worker(proc, ended), memory_mb, proof)

    def close(self) -> None:
        self.worker.close()


def _end_early(proc: subprocess.Popen[bytes], path: Path) -> None:
    end_process_group(proc)
    shutil.rmtree(path, ignore_errors=True)
