"""Persistent jails, one per workspace at a time: the host side of :mod:`._jailserver`.

A fresh bubblewrap per tool run costs more than a small simulation. So each workspace of a
:class:`~rtlforge.sandbox.runner.SandboxRunner` leases a jail from the runner's pool: a
bubblewrap sandbox (the same namespaces, uid, binds and capabilities as a per-run jail) whose
only writable host directory is the jail's own *root*, a fresh directory in which the
workspace's run directory is created. The jail serves that workspace's tool runs one at a time
(the lease holds a lock around each run), killing everything in the jail after each; when the
workspace closes, its root is emptied by the host and the jail is reset (scratch space wiped,
nothing else changed); the next workspace's first tool run starts only once the init has
answered that reset clean, and in a fresh jail if it did not (the answer is read then, so
neither the workspace that ended nor the next one's gate check waits for it). So a later
workspace never meets a process, file or IPC object of an earlier one.

The jail root is not writable from inside when the host runs as root (it is owned by an uid
the jail does not map); elsewhere it is, and the host empties it between leases.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from rtlforge.core.log import get_logger
from rtlforge.sandbox import stale
from rtlforge.sandbox._spawner import SpawnedProcess, SpawnError, SpawnerUnavailable
from rtlforge.sandbox.jail import interpreter

log = get_logger("rtlforge.sandbox.pool")

_SERVER = str(Path(__file__).with_name("_jailserver.py"))
#: Idle jails a pool keeps; more are closed when their workspace ends.
MAX_IDLE = 8
#: How long the host waits for the jail to confirm a run's processes are gone.
_ACK_S = 10.0
_UNMAPPED_UID = 65534

_Starter = Callable[[Callable[[], "subprocess.Popen[bytes]"]], "subprocess.Popen[bytes]"]


class JailedProcess(SpawnedProcess):
    """A tool run inside a pooled jail. Its pid is the jail's, never a host pid: ending it goes
    through the jail (:meth:`kill`), never ``killpg``."""

    def __init__(self, reply: socket.socket, jail: PooledJail) -> None:
        super().__init__(reply)
        self._jail = jail

    @property
    def pid(self) -> int | None:
        return None  # nothing on the host to signal

    def kill(self) -> None:
        """Kill everything in the jail; the tool's exit is reported as usual."""
        with contextlib.suppress(OSError):
            self.reply.send(marshal.dumps({"kill": 1}))

    def release(self) -> None:
        """Done. Once the exit status came, the jail had already killed and reaped everything
        else; before that, it does so now and we wait until it says so."""
        if self.returncode is not None:
            self.reply.close()
            return
        try:
            self.reply.shutdown(socket.SHUT_WR)
            self.reply.settimeout(_ACK_S)
            while self.reply.recv(4096):
                pass
        except OSError:  # the timeout included: the jail cannot be trusted to be quiet
            self._jail.close()
        finally:
            self.reply.close()


class PooledJail:
    """One persistent jail: its root directory and (once started) its init server."""

    def __init__(self, prefix_for: Callable[[Path], list[str]], starter: _Starter,
                 base_dir: Path | None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=stale.prefix("jail"), dir=base_dir)).resolve()
        self._secure_root()
        self._prefix_for = prefix_for  # bwrap ... -- for a root
        self._starter = starter
        self._proc: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self.lock = threading.Lock()  # one run at a time
        self.broken = False
        self._pending: socket.socket | None = None  # the answer to a reset not yet read

    def _secure_root(self) -> None:
        os.chmod(self.root, 0o711)  # traversable, not listable
        if os.geteuid() == 0:
            # owned by an uid the jail does not map: it may enter, never create or chmod here
            os.chown(self.root, _UNMAPPED_UID, _UNMAPPED_UID)

    def start(self) -> None:
        """Start the init now rather than at the first tool run (a prestart)."""
        with self.lock:
            if self._control is None:
                self._start()

    def _start(self) -> socket.socket:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [*self._prefix_for(self.root), interpreter(), "-I", "-S", _SERVER,
                str(theirs.fileno())]
        try:
            proc = self._starter(lambda: subprocess.Popen(
                argv, pass_fds=(theirs.fileno(),), start_new_session=True, cwd="/", env={},
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        except OSError as exc:
            ours.close()
            raise SpawnerUnavailable(f"cannot start a pooled jail: {exc}") from exc
        finally:
            theirs.close()
        ours.settimeout(20)
        try:
            hello = marshal.loads(ours.recv(4096))
        except (OSError, EOFError, ValueError):
            hello = {}
        ours.settimeout(None)
        if "ready" not in hello:
            ours.close()
            self._kill(proc)
            raise SpawnerUnavailable(f"the pooled jail did not start: {hello}")
        self._proc, self._control = proc, ours
        return ours

    @staticmethod
    def _kill(proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, 9)  # bwrap leads its session; its init dies with it
        proc.wait()

    def spawn(self, path: str, argv: Sequence[str], *, cwd: str, env: Mapping[str, str],
              rlimits: Mapping[str, int], stdout: int, stderr: int,
              stdin: int | None = None) -> JailedProcess:
        if self.broken:
            raise SpawnError("the pooled jail was closed")
        if self._pending is not None:
            # a dirty answer ends the old init: this workspace gets a fresh jail, below
            self.finish_reset(close=False)
        if self._proc is not None and self._proc.poll() is not None:
            # it died between runs (nothing of it is left): start a fresh one
            self._drop()
        control = self._control or self._start()
        msg = marshal.dumps({"path": path, "argv": list(argv), "cwd": cwd, "env": dict(env),
                             "rlimits": dict(rlimits)})
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        stdio = [stdout, stderr] if stdin is None else [stdout, stderr, stdin]
        try:
            socket.send_fds(control, [msg], [theirs.fileno(), *stdio])
        except OSError as exc:
            ours.close()
            self.close()
            raise SpawnError(f"the pooled jail is gone: {exc}") from exc
        finally:
            theirs.close()
        return JailedProcess(ours, self)

    def reset(self) -> bool:
        """Make the jail fit for another workspace; False (and closed) if it is not."""
        return self.begin_reset() and self.finish_reset()

    def begin_reset(self) -> bool:
        """Empty the root and ask the init to wipe and check its scratch state, without
        waiting for the answer; False (and closed) if the root cannot be emptied.

        The answer is read before the next tool run starts (:meth:`spawn`), not at the lease:
        the init wipes and checks while the next workspace's files go through the gate, so
        the reset costs no time on a validation's path. A dirty answer then gets that
        workspace a fresh jail on the same root (the host emptied it; it holds only the new
        workspace's own files), so nothing of the old jail reaches it."""
        if self.broken:
            return False
        try:
            self._empty_root()
        except OSError as exc:
            log.warning("pooled_jail_discarded", reason=f"cannot empty its root: {exc}")
            self.close()
            return False
        if self._control is None or self._pending is not None:
            return True  # never started, or nothing ran since the reset still unanswered
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            socket.send_fds(self._control, [marshal.dumps({"reset": 1})], [theirs.fileno()])
        except OSError:
            pass  # no answer will come: finish_reset says so
        finally:
            theirs.close()
        self._pending = ours
        return True

    def finish_reset(self, *, close: bool = True) -> bool:
        """The init's answer to :meth:`begin_reset`: True if the jail is clean; otherwise it is
        closed (and the caller discards it), or with ``close=False`` only its init is ended
        (:meth:`spawn` then starts a fresh one)."""
        pending, self._pending = self._pending, None
        if self.broken:
            if pending is not None:
                pending.close()
            return False
        if pending is None:
            return True
        try:
            pending.settimeout(_ACK_S)
            answer = marshal.loads(pending.recv(4096))
        except (OSError, EOFError, ValueError) as exc:
            answer = {"dirty": f"no answer: {exc}"}
        finally:
            pending.close()
        if not answer.get("clean"):
            log.warning("pooled_jail_discarded", reason=answer.get("dirty"))
            if close:
                self.close()
            else:
                self._drop()
            return False
        return True

    def _empty_root(self) -> None:
        """Remove whatever is left in the root (links are removed, never followed)."""
        self._secure_root()
        for entry in os.scandir(self.root):
            if stat.S_ISDIR(entry.stat(follow_symlinks=False).st_mode):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)

    def close(self) -> None:
        """End the jail: every process in it dies with its init. Its root stays until
        :meth:`discard` (a workspace may still live there)."""
        self.broken = True
        self._drop()

    def _drop(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.close()
        control, self._control = self._control, None
        if control is not None:
            control.close()
        proc, self._proc = self._proc, None
        if proc is not None:
            self._kill(proc)

    def discard(self) -> None:
        """Close the jail and remove its root."""
        self.close()
        shutil.rmtree(self.root, ignore_errors=True)


class JailPool:
    """Idle persistent jails of one runner; a workspace leases one for its lifetime.

    ``starter`` runs the ``Popen`` of a jail on a thread that lives as long as the runner
    (bubblewrap's ``--die-with-parent`` follows the starting thread)."""

    def __init__(self, prefix_for: Callable[[Path], list[str]], starter: _Starter,
                 base_dir: Path | None) -> None:
        self._prefix_for = prefix_for
        self._starter = starter
        self._base_dir = base_dir
        # what killed processes left: their jail roots here, their /dev directories in tmp
        for directory in {str(base_dir or tempfile.gettempdir()), tempfile.gettempdir()}:
            stale.sweep(directory)
        self._idle: list[PooledJail] = []
        #: Jails a workspace holds now: ended with the runner's finalizer too, so a process
        #: that exits mid-run (its timeout, a signal) leaves no jail root behind.
        self._leased: set[PooledJail] = set()
        self._lock = threading.Lock()
        self._started = threading.Condition(self._lock)  # a prestarted jail became idle
        self._starting = 0  # prestarts in flight
        self._closed = False  # a jail given back after close() is discarded, never kept

    def prestart(self, count: int = 1) -> None:
        """Have ``count`` jails idle or starting: those missing start (bubblewrap and their
        init) on background threads and are kept idle. A one-shot command so overlaps their
        start with its own set-up, and its first workspace leases one that is already up. A
        start that fails is dropped (the lease then starts a jail itself and reports why it
        cannot)."""
        with self._lock:
            if self._closed:
                return
            missing = max(0, count - len(self._idle) - self._starting)
            self._starting += missing
        for _ in range(missing):
            threading.Thread(target=self._prestart_one, daemon=True,
                             name="rtlforge-jail-prestart").start()

    def _prestart_one(self) -> None:
        jail: PooledJail | None = None
        try:
            jail = PooledJail(self._prefix_for, self._starter, self._base_dir)
            with self._lock:  # held like a leased one: the runner's end discards it too
                self._leased.add(jail)
            jail.start()
        except Exception as exc:  # noqa: BLE001 - a lease waits on this: it must always end
            log.debug("pooled_jail_prestart_failed", error=f"{type(exc).__name__}: {exc}")
            if jail is not None:
                jail.discard()
        with self._started:
            self._starting -= 1
            if jail is not None:
                self._leased.discard(jail)
                if not jail.broken and not self._closed and len(self._idle) < MAX_IDLE:
                    self._idle.append(jail)
                    jail = None
            self._started.notify_all()
        if jail is not None:
            jail.discard()

    def lease(self) -> PooledJail:
        """An idle jail (its reset is judged before its first tool run), one a prestart is
        bringing up (waited for: it started earlier than a new one would), or a new one."""
        with self._started:
            while not self._idle and self._starting > 0:
                self._started.wait()
            jail = self._idle.pop(0) if self._idle else None  # the longest idle first
        if jail is None:
            jail = PooledJail(self._prefix_for, self._starter, self._base_dir)
        with self._lock:
            self._leased.add(jail)
        return jail

    def give_back(self, jail: PooledJail) -> None:
        """Start the jail's reset and keep it idle; its answer is read when it is next leased
        (off the path of the workspace that just ended)."""
        with self._lock:
            self._leased.discard(jail)
        if jail.begin_reset():
            with self._lock:
                if not self._closed and len(self._idle) < MAX_IDLE:
                    self._idle.append(jail)
                    return
        jail.discard()

    def close(self, *, leased: bool = False) -> None:
        """Discard the idle jails, and with ``leased`` also those workspaces still hold (only
        when the runner itself ends: their workspaces die with them)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            held = list(self._leased) if leased else []
            if leased:
                self._leased.clear()
        for jail in (*idle, *held):
            jail.discard()
