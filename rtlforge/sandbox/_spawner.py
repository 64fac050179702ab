"""A launch server that starts sandboxed tools at close to the cost of a bare exec.

Why it exists: wrapping every tool as ``unshare -n prlimit ... -- tool`` costs two extra execs
and a fresh network namespace per run (~2 ms, a fifth of a small simulation). Forking from
Python is no cure either: every page the interpreter touches between fork and exec is
copied-on-write (~100 page faults, ~0.4 ms here), and it is unsafe in a threaded host.

So a small single-threaded server is started per :class:`~rtlforge.sandbox.runner.SandboxRunner`
and set of limits, already inside the empty network namespace. At start it sets the rlimits on
*itself*, soft = hard, and from then on launches every tool with ``posix_spawn`` (vfork + exec:
no copied pages, no Python in the child). The tool inherits the limits, so they hold from its
first instruction, and it cannot raise them. The server's own CPU time counts against the CPU
limit too, so it retires (stops accepting, finishes its runs, exits) at half of it, and the
client transparently starts a fresh one.

Protocol (``marshal``-ed dicts over ``SOCK_SEQPACKET``, so every send is exactly one message):

- startup: argv is ``FD NAME=VALUE...`` (the rlimits); the server answers ``{"ready": pid}``,
  ``{"error": ...}`` if it cannot apply them, or ``{"unavailable": ...}`` if the platform lacks
  pidfds or ``posix_spawn`` (the caller then falls back to the wrapper chain).
- control socket: one request per message; ``SCM_RIGHTS`` carries ``[reply, stdout, stderr]``
  plus ``stdin`` when the caller feeds input (``/dev/null`` otherwise). Threads may send
  concurrently: each request is one atomic message and brings its own reply socket.
- reply socket (a fresh socketpair per run): the server sends ``{"pid": n}``, then ``{"rc": n}``
  when the tool exits. The exited tool stays a zombie until the caller closes its end, so its
  pid, and with it the process-group id the caller may still kill, cannot be reused. Closing the
  caller's end means "done": the server reaps the tool, killing its group if it still runs. If
  the tool cannot be executed the server writes why to its stderr and sends
  ``{"pid": None, "rc": 127}`` (126 if found but not executable), as ``prlimit`` or a shell
  would; if the sandbox cannot be set up (bad cwd, no memory) it sends ``{"error": ...}``.
- EOF on the control socket (runner closed or collected) stops new work; the server exits once
  its runs are released. If the runner's process dies, all its reply sockets close too, so every
  group is killed and nothing outlives it.

The server runs as ``python -I -S _spawner.py ...``: no site-packages, no rtlforge, nothing from
the caller's environment, and only light imports (the client keeps its heavier ones local).
"""

from __future__ import annotations

import array
import contextlib
import errno
import marshal
import os
import resource
import select
import signal
import socket
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

#: Largest request the server reads; a bigger one (huge argv or env) uses the wrapper chain.
MAX_REQUEST = 1 << 19
#: The server lives under the tool's address-space limit; below this it could not (chain then).
MIN_ADDRESS_SPACE = 256 << 20
_MAX_FDS = 4
#: posix_spawn failures that mean "the machine is short of resources", not "cannot exec this".
_INFRA_ERRNOS = frozenset({errno.EAGAIN, errno.ENOMEM, errno.EMFILE, errno.ENFILE})


class SpawnError(OSError):
    """The spawner could not start a tool, or died while one was running."""


class NotSpawnable(SpawnError):
    """This request cannot go through a spawner (too big, tiny limits): launch it another way."""


class SpawnerUnavailable(SpawnError):
    """No spawner process can be started here; the caller should launch another way."""


# ------------------------------------------------------------------------------------ server


def _send(sock: socket.socket, msg: dict[str, Any]) -> bool:
    try:
        sock.send(marshal.dumps(msg))
    except OSError:
        return False
    return True


def _killpg(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class _Child:
    """A tool the server launched: its reply socket (None once released) and pidfd."""

    __slots__ = ("exited", "pidfd", "reply")

    def __init__(self, reply: socket.socket, pidfd: int) -> None:
        self.reply: socket.socket | None = reply
        self.pidfd = pidfd
        self.exited = False


class _Server:
    def __init__(self, control: socket.socket, cpu_budget: float) -> None:
        self.control = control
        self.cpu_budget = cpu_budget
        self.accepting = True
        self.poller = select.epoll()
        self.handlers: dict[int, Callable[[], None]] = {}
        self.children: dict[int, _Child] = {}
        self.devnull = os.open(os.devnull, os.O_RDWR)
        self.buf = bytearray(MAX_REQUEST)
        self._watch(control.fileno(), self._request)

    def _watch(self, fd: int, handler: Callable[[], None]) -> None:
        self.poller.register(fd, select.EPOLLIN)
        self.handlers[fd] = handler

    def _unwatch(self, fd: int) -> None:
        if self.handlers.pop(fd, None) is not None:
            self.poller.unregister(fd)

    def serve(self) -> None:
        while self.accepting or self.children:
            for fd, _ in self.poller.poll():
                handler = self.handlers.get(fd)  # gone if an earlier event released it
                if handler is not None:
                    handler()

    def _request(self) -> None:
        nbytes, ancdata, flags, _ = self.control.recvmsg_into(
            [self.buf], socket.CMSG_SPACE(_MAX_FDS * 4), socket.MSG_CMSG_CLOEXEC)
        fds = array.array("i")
        for level, kind, data in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
        if not nbytes and not fds:
            self.accepting = False  # EOF: no more requests; finish the runs in flight
            self._unwatch(self.control.fileno())
            return
        if fds:
            reply, stdio = socket.socket(fileno=fds[0]), fds[1:]
            try:
                if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC) or len(stdio) not in (2, 3):
                    _send(reply, {"error": "malformed request"})
                else:
                    self._launch(marshal.loads(self.buf[:nbytes]), reply, stdio)
            finally:
                for fd in stdio:
                    os.close(fd)
        if self.accepting and sum(os.times()[:2]) > self.cpu_budget:
            # Retire before our own CPU time reaches the limit we share with the tools: callers
            # get EPIPE and start a fresh server; queued requests are still served.
            self.control.shutdown(socket.SHUT_RD)

    def _launch(self, req: dict[str, Any], reply: socket.socket, stdio: Sequence[int]) -> None:
        order = [stdio[2] if len(stdio) == 3 else self.devnull, stdio[0], stdio[1]]
        try:
            os.chdir(req["cwd"])  # posix_spawn has no chdir action; we are single-threaded
            pid = os.posix_spawn(
                req["path"], req["argv"], req["env"],
                file_actions=[(os.POSIX_SPAWN_DUP2, fd, target)
                              for target, fd in enumerate(order)],
                # SIG_IGN survives exec and Python ignores these; tools need the defaults
                # (a flood into a closed pipe dies of SIGPIPE, a capped file of SIGXFSZ).
                setsid=True, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
        except OSError as exc:
            if exc.filename == req["cwd"] or exc.errno in _INFRA_ERRNOS:
                _send(reply, {"error": f"{type(exc).__name__}: {exc}"})
            else:  # the tool itself cannot be executed: report it as prlimit/a shell would
                with contextlib.suppress(OSError):
                    os.write(stdio[1], f"{req['path']}: cannot execute: {exc.strerror}\n".encode())
                _send(reply, {"pid": None, "rc": 127 if exc.errno == errno.ENOENT else 126})
            reply.close()
            return
        self.children[pid] = child = _Child(reply, -1)
        try:
            child.pidfd = os.pidfd_open(pid)
        except OSError as exc:  # out of descriptors: give this run up rather than lose track
            _send(reply, {"error": f"{type(exc).__name__}: {exc}"})
            child.exited = True
            _killpg(pid)
            self._release(pid)
            return
        self._watch(child.pidfd, lambda: self._exited(pid))
        if _send(reply, {"pid": pid}):
            self._watch(reply.fileno(), lambda: self._release(pid))
        else:
            self._release(pid)

    def _exited(self, pid: int) -> None:
        child = self.children[pid]
        self._unwatch(child.pidfd)
        os.close(child.pidfd)
        child.exited = True
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        rc = -1 if info is None else (
            info.si_status if info.si_code == os.CLD_EXITED else -info.si_status)
        if child.reply is None or not _send(child.reply, {"rc": rc}):
            self._release(pid)

    def _release(self, pid: int) -> None:
        """The caller is done with ``pid`` (closed its end): end the group, reap once exited."""
        child = self.children[pid]
        if child.reply is not None:
            self._unwatch(child.reply.fileno())
            child.reply.close()
            child.reply = None
        if child.exited:
            os.waitpid(pid, 0)
            del self.children[pid]
        else:
            _killpg(pid)  # _exited() reaps it once it is gone


def main(argv: Sequence[str]) -> None:
    fd = int(argv[1])
    os.set_inheritable(fd, False)  # tools must never reach the control socket
    control = socket.socket(fileno=fd)
    try:  # posix_spawn with setsid needs glibc >= 2.26, pidfds Linux >= 5.3
        os.close(os.pidfd_open(os.getpid()))
        os.posix_spawn  # noqa: B018 - raises AttributeError where it is missing
    except (OSError, AttributeError) as exc:
        control.send(marshal.dumps({"unavailable": f"{type(exc).__name__}: {exc}"}))
        return
    cpu_budget = float("inf")
    try:
        for item in argv[2:]:
            name, value = item.split("=")
            resource.setrlimit(getattr(resource, name), (int(value), int(value)))
            if name == "RLIMIT_CPU":
                cpu_budget = int(value) / 2
    except (OSError, ValueError, AttributeError) as exc:
        control.send(marshal.dumps({"error": f"cannot apply {argv[2:]}: {exc}"}))
        return
    control.send(marshal.dumps({"ready": os.getpid()}))
    _Server(control, cpu_budget).serve()


# ------------------------------------------------------------------------------------ client


class SpawnedProcess:
    """A tool started by the spawner; quacks like the parts of ``Popen`` the runner uses."""

    def __init__(self, reply: socket.socket) -> None:
        self.reply = reply
        self._pid: int | None = 0  # 0: not heard yet; None: nothing was started
        self.returncode: int | None = None

    @property
    def pid(self) -> int | None:
        """The tool's pid (None if it could not be executed); waits for the spawner's word."""
        while self._pid == 0:
            self.on_readable()
        return self._pid

    def on_readable(self) -> None:
        """Consume one message from the spawner; raise if it failed or died."""
        data = self.reply.recv(4096)
        if not data:
            raise SpawnError("the sandbox spawner died while the tool was running")
        msg = marshal.loads(data)
        if "error" in msg:
            raise SpawnError(f"cannot start the tool: {msg['error']}")
        self._pid = msg.get("pid", self._pid)
        self.returncode = msg.get("rc", self.returncode)

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                import subprocess

                raise subprocess.TimeoutExpired("spawned tool", timeout or 0.0)
            self.reply.settimeout(remaining)
            try:
                self.on_readable()
            except TimeoutError:
                continue
            finally:
                self.reply.settimeout(None)
        return self.returncode

    def release(self) -> None:
        """Tell the spawner we are done: it reaps the tool (killing its group if still alive)."""
        self.reply.close()


class Spawner:
    """Client for one spawner process (one set of rlimits), started lazily, replaced when it
    retires or dies. Thread-safe."""

    def __init__(self, prefix: Sequence[str], rlimits: Mapping[str, int], *,
                 start_timeout: float = 10.0) -> None:
        import threading

        self.prefix = list(prefix)
        self.rlimits = dict(rlimits)
        self.start_timeout = start_timeout
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._retired: list[subprocess.Popen[bytes]] = []  # finishing their runs, then exiting

    @staticmethod
    def supports(rlimits: Mapping[str, int]) -> bool:
        """Whether a server can live under these limits (it shares them with its tools)."""
        return rlimits.get("RLIMIT_AS", MIN_ADDRESS_SPACE) >= MIN_ADDRESS_SPACE

    @property
    def pid(self) -> int | None:
        """The current server's pid (diagnostics)."""
        return self._proc.pid if self._proc is not None else None

    def _connect(self) -> socket.socket:
        with self._lock:
            if self._control is None or self._proc is None or self._proc.poll() is not None:
                self._retire_locked()
                self._start_locked()
            assert self._control is not None
            return self._control

    def _start_locked(self) -> None:
        import subprocess

        from rtlforge.sandbox.jail import interpreter  # host side only: the jail runs a copy

        self._retired = [proc for proc in self._retired if proc.poll() is None]
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with contextlib.suppress(OSError):  # capped by the kernel? big requests use the chain
            ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, MAX_REQUEST)
        argv = [*self.prefix, interpreter(), "-I", "-S", os.path.abspath(__file__),
                str(theirs.fileno()), *(f"{k}={v}" for k, v in self.rlimits.items())]
        try:
            proc = subprocess.Popen(
                argv, pass_fds=(theirs.fileno(),), start_new_session=True, cwd="/", env={},
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        except OSError as exc:
            ours.close()
            raise SpawnerUnavailable(f"cannot start the sandbox spawner: {exc}") from exc
        finally:
            theirs.close()
        ours.settimeout(self.start_timeout)
        try:
            hello = marshal.loads(ours.recv(4096))
        except (OSError, EOFError, ValueError):
            hello = {}
        ours.settimeout(None)
        if "ready" not in hello:
            ours.close()
            with contextlib.suppress(OSError):
                proc.kill()
            proc.wait()
            if "error" in hello:
                raise SpawnError(f"the sandbox spawner refused: {hello['error']}")
            raise SpawnerUnavailable(f"the sandbox spawner did not start: {' '.join(argv)} "
                                     f"{hello.get('unavailable', '')}")
        self._proc, self._control = proc, ours

    def _retire_locked(self) -> None:
        """Stop sending to the current server; it exits by itself once its runs are done."""
        if self._control is not None:
            self._control.close()
        if self._proc is not None:
            self._retired.append(self._proc)
        self._proc = self._control = None

    def _discard(self, control: socket.socket) -> None:
        with self._lock:
            if self._control is control:
                self._retire_locked()

    def spawn(self, path: str, argv: Sequence[str], *, cwd: str, env: Mapping[str, str],
              stdout: int, stderr: int, stdin: int | None = None) -> SpawnedProcess:
        """Start ``path`` with ``argv`` in a new session, in ``cwd``, under this spawner's
        limits; stdin is /dev/null unless given."""
        msg = marshal.dumps({"path": path, "argv": list(argv), "cwd": cwd, "env": dict(env)})
        if len(msg) > MAX_REQUEST:
            raise NotSpawnable(f"request of {len(msg)} bytes")
        stdio = [stdout, stderr] if stdin is None else [stdout, stderr, stdin]
        for _attempt in range(2):
            control = self._connect()
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                socket.send_fds(control, [msg], [theirs.fileno(), *stdio])
            except OSError as exc:
                ours.close()
                if exc.errno == errno.EMSGSIZE:
                    raise NotSpawnable(str(exc)) from exc
                self._discard(control)  # retired or died while idle: replace it, retry once
                continue
            finally:
                theirs.close()
            return SpawnedProcess(ours)
        raise SpawnError("the sandbox spawner keeps failing")

    def close(self, wait: float = 5.0) -> None:
        """Retire the server and wait up to ``wait`` s for it (and earlier ones) to exit."""
        import subprocess

        with self._lock:
            self._retire_locked()
            retired, self._retired = self._retired, []
        deadline = time.monotonic() + wait
        for proc in retired:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with self._lock:
                    self._retired.append(proc)  # still finishing runs: reaped on a later call


if __name__ == "__main__":
    main(sys.argv)
