"""The init of a persistent jail: starts a workspace's tool runs inside one bubblewrap sandbox.

Why it exists: a fresh ``bwrap`` per tool run costs a namespace set-up and tear-down (about
4 ms here, two or more per validation), as much as a small simulation. So a pooled jail
(:class:`rtlforge.sandbox.runner.SandboxRunner`) is started once and serves one workspace at a
time, each in its own run directory, and this server runs inside it as the PID namespace's
init (``bwrap --as-pid-1``). Being init is what makes it safe to keep:

- the kernel does not deliver SIGKILL or SIGSTOP to a namespace's init from inside the
  namespace, and every other signal is ignored here, so a tool cannot stop or kill it;
- it makes itself non-dumpable, so a tool (same uid, no capabilities) cannot ptrace it or open
  its ``/proc`` files and descriptors;
- every orphan is reparented to it, so "no child left" means "no process left in the jail".

Each tool is forked (this small, single-threaded process; the host never forks Python) and
gets, before ``execve``: its own session, the rlimits of its request (hard = soft; POSIX message
queues are refused by ``RLIMIT_MSGQUEUE=0``), every signal the init ignores at its default, its
pipes. The child for the next run is forked ahead, while the jail is quiet (:class:`_Zygote`).

When the host is done with a run (it closes or half-closes the run's reply socket) or it asks to
kill it (timeout, output flood), the server kills *every* process in the jail (``kill(-1)``,
repeated until no child is left) and reaps them, then acknowledges by closing its end. So
nothing a tool started, ``setsid`` daemons included, outlives its run. Between workspaces the
host sends ``reset``: the server wipes ``/tmp`` and ``/dev/shm`` and checks that nothing else a
tool could leave behind changed (``/dev`` entries, SysV IPC objects, keys); if anything did it
answers ``dirty`` and exits, and the host throws the jail away.

Protocol: as :mod:`rtlforge.sandbox._spawner` (``marshal``-ed dicts over ``SOCK_SEQPACKET``);
a run request also carries ``rlimits``; ``{"reset": 1}`` with one reply socket asks for the
reset; ``{"kill": 1}`` on a run's reply socket kills everything in the jail.

Runs as ``python -I -S _jailserver.py FD`` inside the jail.
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
import stat
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

MAX_REQUEST = 1 << 19
_MAX_FDS = 4
_INFRA_ERRNOS = frozenset({errno.EAGAIN, errno.ENOMEM, errno.EMFILE, errno.ENFILE})
#: How long killing everything may take before the jail is given up.
_SWEEP_S = 5.0
#: Directories every workspace may write besides its own run directory: wiped between them.
_SCRATCH = ("/tmp", "/dev/shm")
_SYSV = ("/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem")
_PR_SET_DUMPABLE = 4


def _send(sock: socket.socket, msg: dict[str, Any]) -> bool:
    try:
        sock.send(marshal.dumps(msg))
    except OSError:
        return False
    return True


def sweep() -> bool:
    """Kill every other process in the namespace and reap all; False if that did not finish."""
    deadline = time.monotonic() + _SWEEP_S
    while True:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)  # from init: everyone in the namespace but us
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True  # no child at all: orphans are ours, so nothing else is alive
        if pid == 0:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.0002)


def _fingerprint() -> tuple[Any, ...]:
    """What a tool could change outside its run directory that a wipe cannot restore."""
    def entries(path: str) -> tuple[Any, ...]:
        out = []
        with contextlib.suppress(OSError):
            for name in sorted(os.listdir(path)):
                with contextlib.suppress(OSError):
                    st = os.lstat(os.path.join(path, name))
                    out.append((name, st.st_mode, st.st_rdev, st.st_uid, st.st_size
                                if not name.startswith(("pts", "shm")) else 0))
        return tuple(out)

    def text(path: str) -> str:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError:
            return ""

    # keys: which exist (id, type, description), not their usage counts or timers
    keys = tuple(sorted((f[0], f[7], " ".join(f[8:]).split(":")[0])
                        for f in (line.split() for line in text("/proc/keys").splitlines())
                        if len(f) >= 9))
    return (entries("/dev"), tuple(os.lstat(p).st_mode for p in _SCRATCH if os.path.lexists(p)),
            tuple(text(p) for p in _SYSV), keys)


def _wipe(path: str) -> None:
    """Empty ``path`` (a tmpfs of ours), undoing modes a tool set. Mount points (the jail
    root's bind) and the directories bubblewrap made to hold them stay, mode 0755."""
    dev = os.lstat(path).st_dev
    for entry in os.scandir(path):
        st = entry.stat(follow_symlinks=False)
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(entry.path)
            continue
        if st.st_dev != dev:
            continue  # a mount point
        os.chmod(entry.path, 0o755)
        _wipe(entry.path)
        if not _holds_mount(entry.path, dev):
            os.rmdir(entry.path)


def _holds_mount(path: str, dev: int) -> bool:
    return any(entry.stat(follow_symlinks=False).st_dev != dev or
               (entry.is_dir(follow_symlinks=False) and _holds_mount(entry.path, dev))
               for entry in os.scandir(path))


class _Run:
    __slots__ = ("exited", "pidfd", "reply")

    def __init__(self, reply: socket.socket) -> None:
        self.reply: socket.socket | None = reply
        self.pidfd = -1
        self.exited = False


#: Signals the init ignores; a tool gets them back at their defaults (ignoring survives exec).
_IGNORED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
            signal.SIGALRM, signal.SIGPIPE, signal.SIGXFSZ)


def _default_signals() -> None:
    for sig in _IGNORED:
        signal.signal(sig, signal.SIG_DFL)


def _become(req: dict[str, Any], stdio: Sequence[int]) -> None:
    """In a forked child: apply the run's rlimits and pipes, exec the tool; never returns."""
    code = 127
    try:
        for name, value in req["rlimits"].items():
            resource.setrlimit(getattr(resource, name), (value, value))
        for target, fd in enumerate(stdio):
            os.dup2(fd, target)
        os.execve(req["path"], req["argv"], req["env"])
    except OSError as exc:
        code = 127 if exc.errno == errno.ENOENT else 126
        with contextlib.suppress(OSError):
            os.write(1, f"{req['path']}: cannot execute: {exc.strerror}\n".encode())
    finally:
        os._exit(code)


class _Zygote:
    """A child forked ahead of the next run, while the jail is quiet and the host is busy
    elsewhere: forking this process (and the copy-on-write faults of its first steps) costs
    about a millisecond here, which would otherwise sit between a request and the tool's
    start. It exists only while no run is in flight (a tool never meets it), in its own
    session with default signals, and waits for one request: the run's message and its three
    stdio descriptors. It then sets the rlimits, takes the pipes and execs, exactly as a
    child forked on request does; if the init closes its end instead, it exits."""

    __slots__ = ("pid", "sock")

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock

    @classmethod
    def fork(cls) -> _Zygote | None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            pid = os.fork()
        except OSError:
            ours.close()
            theirs.close()
            return None
        if pid == 0:  # the zygote: only system calls until exec
            try:
                ours.close()
                os.setsid()
                _default_signals()
                raw, ancdata, flags, _ = theirs.recvmsg(
                    MAX_REQUEST, socket.CMSG_SPACE(3 * 4), socket.MSG_CMSG_CLOEXEC)
                fds = array.array("i")
                for level, kind, data in ancdata:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
                if len(fds) != 3 or flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
                    os._exit(0)  # the init gave us up
                req = marshal.loads(raw)
                os.chdir(req["cwd"])
                _become(req, fds)
            finally:
                os._exit(126)
        theirs.close()
        return cls(pid, ours)

    def start(self, raw: bytes, stdio: Sequence[int]) -> bool:
        """Hand the run over; False if the zygote is gone (the caller forks instead)."""
        try:
            socket.send_fds(self.sock, [raw], list(stdio))
        except OSError:
            return False
        finally:
            self.sock.close()
        return True

    def drop(self) -> None:
        """Let it go (it exits on EOF; a sweep kills and reaps it in any case)."""
        self.sock.close()


class _Server:
    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.accepting = True
        self.poller = select.epoll()
        self.handlers: dict[int, Callable[[], None]] = {}
        self.runs: dict[int, _Run] = {}
        self.devnull = os.open(os.devnull, os.O_RDWR)
        self.buf = bytearray(MAX_REQUEST)
        self.baseline = _fingerprint()
        self.zygote: _Zygote | None = None
        self._watch(control.fileno(), self._request)
        self._prefork()

    def _prefork(self) -> None:
        """Fork the next run's child now, if the jail is quiet (nothing of a tool alive)."""
        if self.zygote is None and not self.runs and self.accepting:
            self.zygote = _Zygote.fork()

    def _drop_zygote(self) -> None:
        zygote, self.zygote = self.zygote, None
        if zygote is not None:
            zygote.drop()

    def _watch(self, fd: int, handler: Callable[[], None]) -> None:
        self.poller.register(fd, select.EPOLLIN)
        self.handlers[fd] = handler

    def _unwatch(self, fd: int) -> None:
        if self.handlers.pop(fd, None) is not None:
            self.poller.unregister(fd)

    def serve(self) -> None:
        while self.accepting:
            for fd, _ in self.poller.poll():
                handler = self.handlers.get(fd)
                if handler is not None:
                    handler()
        sweep()

    def _request(self) -> None:
        nbytes, ancdata, flags, _ = self.control.recvmsg_into(
            [self.buf], socket.CMSG_SPACE(_MAX_FDS * 4), socket.MSG_CMSG_CLOEXEC)
        fds = array.array("i")
        for level, kind, data in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
        if not nbytes and not fds:
            self.accepting = False  # the host is gone or closed us: end the jail
            return
        if not fds:
            return
        reply, stdio = socket.socket(fileno=fds[0]), fds[1:]
        try:
            if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
                _send(reply, {"error": "malformed request"})
                reply.close()
                return
            req = marshal.loads(self.buf[:nbytes])
            if req.get("reset"):
                self._reset(reply)
            elif len(stdio) not in (2, 3):
                _send(reply, {"error": "malformed request"})
                reply.close()
            else:
                self._launch(req, reply, stdio, bytes(self.buf[:nbytes]))
        finally:
            for fd in stdio:
                os.close(fd)

    def _reset(self, reply: socket.socket) -> None:
        problem = None
        if self.runs:
            self._drop_zygote()
            problem = "a run is still in flight"
        elif not self._only_zygote_alive():
            self._drop_zygote()
            if not sweep():
                problem = "processes survived SIGKILL"
        if problem is None:
            try:
                for path in _SCRATCH:
                    if os.path.isdir(path):
                        _wipe(path)
                if _fingerprint() != self.baseline:
                    problem = "state outside the run directory changed (/dev, IPC or keys)"
            except Exception as exc:  # noqa: BLE001 - any doubt means a fresh jail
                problem = f"cannot wipe scratch space: {type(exc).__name__}: {exc}"
        _send(reply, {"clean": True} if problem is None else {"dirty": problem})
        reply.close()
        if problem is not None:
            self.accepting = False
        self._prefork()

    def _only_zygote_alive(self) -> bool:
        """Whether nothing but this init and its zygote is in the namespace. The last run's
        release swept the jail and nothing can start between runs, so this is the usual case
        and the zygote is kept (it holds nothing of a workspace; forking a new one is most of
        what a reset would cost); anything else makes the reset sweep."""
        keep = {os.getpid()} | ({self.zygote.pid} if self.zygote is not None else set())
        try:
            return {int(n) for n in os.listdir("/proc") if n.isdigit()} <= keep
        except OSError:
            return False

    def _launch(self, req: dict[str, Any], reply: socket.socket, stdio: Sequence[int],
                raw: bytes) -> None:
        order = [stdio[2] if len(stdio) == 3 else self.devnull, stdio[0], stdio[1]]
        try:
            os.chdir(req["cwd"])
        except OSError as exc:
            _send(reply, {"error": f"{type(exc).__name__}: {exc}"})
            reply.close()
            return
        zygote, self.zygote = self.zygote, None
        if zygote is not None and zygote.start(raw, order):
            pid = zygote.pid
        else:
            try:
                pid = os.fork()
            except OSError as exc:
                _send(reply, {"error": f"{type(exc).__name__}: {exc}"})
                reply.close()
                return
            if pid == 0:  # the child: only system calls from here to exec
                try:
                    os.setsid()
                    _default_signals()
                    _become(req, order)
                finally:
                    os._exit(126)
        run = self.runs[pid] = _Run(reply)
        try:
            run.pidfd = os.pidfd_open(pid)
        except OSError as exc:
            _send(reply, {"error": f"{type(exc).__name__}: {exc}"})
            run.exited = True
            self._release(pid)
            return
        self._watch(run.pidfd, lambda: self._exited(pid))
        if _send(reply, {"pid": pid}):
            self._watch(reply.fileno(), lambda: self._message(pid))
        else:
            self._release(pid)

    def _exited(self, pid: int) -> None:
        run = self.runs[pid]
        self._unwatch(run.pidfd)
        os.close(run.pidfd)
        run.exited = True
        try:
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped already: its status is lost, not the jail
            info = None
        # As a per-run jail's namespace dies with its tool: whatever the tool left running
        # dies now, before the host hears the exit status, so it never meets a leftover.
        if not self._quiet(others=len(self.runs) - 1):
            self.accepting = False
            answer: dict[str, Any] = {"error": "processes survived SIGKILL"}
        elif info is None:
            answer = {"error": "the tool's exit status was lost"}
        else:
            answer = {"rc": info.si_status if info.si_code == os.CLD_EXITED
                      else -info.si_status}
        if run.reply is None or not _send(run.reply, answer):
            self._release(pid)

    def _quiet(self, *, others: int) -> bool:
        """Sweep the jail unless ``others`` runs are still in flight (a sweep would kill their
        tools: the host may send the next run before the last one's close reaches us); False
        if processes survived it."""
        return sweep() if others == 0 else True

    def _message(self, pid: int) -> None:
        run = self.runs[pid]
        assert run.reply is not None
        try:
            data = run.reply.recv(4096)
        except OSError:
            data = b""
        if data:  # {"kill": 1}: the tool's exit is reported as usual once it is gone
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)
            return
        self._release(pid)

    def _release(self, pid: int) -> None:
        """The host is done with ``pid``: kill everything in the jail, reap, acknowledge."""
        run = self.runs.pop(pid)
        if run.pidfd >= 0 and not run.exited:
            self._unwatch(run.pidfd)
            os.close(run.pidfd)
        ok = self._quiet(others=len(self.runs))
        if run.reply is not None:
            self._unwatch(run.reply.fileno())
            run.reply.close()  # the host waits for this EOF: the jail is quiet again
        if not ok:
            self.accepting = False
        self._prefork()  # while the host turns the output into a verdict


def main(argv: Sequence[str]) -> None:
    fd = int(argv[1])
    os.set_inheritable(fd, False)
    control = socket.socket(fileno=fd)
    if os.getpid() != 1:
        control.send(marshal.dumps({"unavailable": "not the init of a PID namespace"}))
        return
    for sig in _IGNORED:
        signal.signal(sig, signal.SIG_IGN)
    try:
        import ctypes

        if ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE)")
        os.close(os.pidfd_open(os.getpid()))
    except (OSError, AttributeError, ImportError) as exc:
        control.send(marshal.dumps({"unavailable": f"{type(exc).__name__}: {exc}"}))
        return
    control.send(marshal.dumps({"ready": os.getpid()}))
    _Server(control).serve()


if __name__ == "__main__":
    main(sys.argv)
