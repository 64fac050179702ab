"""What a tool run may see, write and outlive: a bubblewrap jail per run.

The static gate (:mod:`rtlforge.sandbox.security`) judges a model of the input; the tools execute
the real thing, and a policy searching for reward will find any place where the two differ. So
the jail has to hold on its own, with the gate switched off. Each run is started as
``bwrap <jail> -- tool ...`` and gets:

- fresh user, mount, PID, network, IPC, UTS and cgroup namespaces (``--unshare-all``): no
  network, no view of the host's processes, nothing to signal outside;
- uid/gid 65534 inside with every capability dropped (``--cap-drop ALL``);
- a root that is an empty tmpfs holding only read-only binds of ``/usr`` (and the merged-/usr
  links), the few ``/etc`` files the dynamic linker and compilers read, the Python runtime
  (cocotb and the gate's worker need it), what the caller names read-only (a liberty file), and
  the run directory itself, read-write, at its own path (the root itself is remounted
  read-only). The host's home, ``/tmp``, other run
  directories and the project tree are simply not there; ``/tmp``, ``/dev`` and ``/proc`` are
  private;
- ``--die-with-parent`` and a PID namespace: when the launcher is killed (timeout, output flood,
  caller gone) the namespace's init dies and the kernel kills every descendant, ``setsid`` or
  double-forked daemons included.

Rlimits (CPU, address space, file size, process count) are applied by the launcher before
``bwrap`` starts and are inherited. Starting a jail costs about 3.5 ms on an idle machine and
much more under load, so workspaces normally lease a persistent jail
(:meth:`Jail.pooled_argv`, :mod:`rtlforge.sandbox.pool`) whose init applies the rlimits per run.

On a root host the uid inside maps to root outside (bubblewrap maps the caller's uid); the
process still has no capability and sees only what is bound above, which is what keeps the host
safe. Where namespaces are not available, :class:`Jail` cannot be built and the runner refuses
to run untrusted input unless the user opts out explicitly (``RTLFORGE_SANDBOX=none``).
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rtlforge.core.errors import IsolationUnavailableError
from rtlforge.core.log import get_logger
from rtlforge.sandbox import stale

log = get_logger("rtlforge.jail")

#: Environment variable choosing the isolation: ``bwrap`` (default) or ``none`` (opt-out).
#: The installed rtlforge package: a jailed Python (the gate worker) needs it, and nothing else
#: of the checkout it lives in.
PACKAGE_DIR = Path(__file__).resolve().parents[1]

ISOLATION_ENV = "RTLFORGE_SANDBOX"
ISOLATION_KINDS = ("bwrap", "none")

#: The uid/gid tools run as inside the jail ("nobody").
JAIL_UID = 65534

#: Top-level system paths: bound read-only, or recreated as the symlinks they are on the host.
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
#: Files under /etc that the dynamic linker, g++ (via alternatives) and perl read.
_ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives")


def isolation_choice(explicit: str | None) -> str:
    """The isolation asked for: the argument, else ``$RTLFORGE_SANDBOX``, else ``bwrap``."""
    choice = explicit or os.environ.get(ISOLATION_ENV) or "bwrap"
    if choice not in ISOLATION_KINDS:
        raise ValueError(f"isolation must be one of {ISOLATION_KINDS}, not {choice!r} "
                         f"(from {'the argument' if explicit else ISOLATION_ENV})")
    return choice


def interpreter() -> str:
    """This process's Python as a path a jail (and any working directory) resolves.

    ``sys.executable`` keeps the path Python was started by: ``../venv/bin/python`` gives
    ``/x/y/../venv/bin/python``, which does not resolve where ``/x/y`` is not mounted (every
    jail), so every jailed Python failed to start. The directory is resolved; the file name is
    kept, since a venv's ``python`` is a link whose own path is what selects the venv.
    """
    exe = Path(sys.executable)
    return str(Path(os.path.realpath(exe.parent)) / exe.name)


@functools.cache
def _dependency_sites() -> frozenset[Path]:
    """The installation directories on ``sys.path``: those holding ``*.dist-info``.

    A jailed Python (the gate, the cocotb driver, the pyosys worker) imports rtlforge's
    dependencies, and they need not be under the venv: a ``.pth`` line or ``pip install
    --target`` adds a site of their own. Only directories that hold installed distributions
    are taken, never other ``sys.path`` entries (the working directory, a project with
    secrets). Listing a few directories costs about a millisecond; reading every installed
    distribution's requirements instead cost 140 ms per process.
    """
    sites: set[Path] = set()
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        try:
            with os.scandir(entry) as found:
                if any(e.name.endswith(".dist-info") and e.is_dir() for e in found):
                    sites.add(Path(entry).resolve())
        except OSError:
            continue
    return frozenset(sites)


def _python_roots() -> list[Path]:
    """Directories a sandboxed Python needs: the venv, the base install, rtlforge itself and
    the directories its dependencies are installed in."""
    roots = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    roots.add(Path(os.path.realpath(sys.executable)).parent.parent)
    roots.add(PACKAGE_DIR)
    roots.update(site for site in _dependency_sites() if site.is_dir())
    return sorted(r for r in roots if not any(o != r and r.is_relative_to(o) for o in roots))


#: The device nodes bubblewrap's ``--dev`` binds from the host: (name, major, minor).
_DEVICES = (("null", 1, 3), ("zero", 1, 5), ("full", 1, 7), ("random", 1, 8),
            ("urandom", 1, 9), ("tty", 5, 0))


def _private_devices() -> Path | None:
    """A directory of our own device nodes for the jail's ``/dev``, when the host runs as root.

    Why: bubblewrap maps the jail's uid to its caller's, so on a root host a jailed tool owns
    every root-owned file it can reach on a writable mount. ``--dev`` bind-mounts the host's
    own ``/dev/null`` (and zero, random, ...), so ``chmod 0 /dev/null`` inside a jail changed
    the host's ``/dev/null``. Nodes we create, owned by a host uid the jail does not map
    (``JAIL_UID`` on the host), work the same but cannot be chmod-ed from inside, and are
    not the host's. Unprivileged callers need none: root's nodes are not theirs to change.
    """
    if os.geteuid() != 0:
        return None
    path = Path(tempfile.mkdtemp(prefix=stale.prefix("dev")))
    try:
        os.chmod(path, 0o755)
        for name, major, minor in _DEVICES:
            node = path / name
            os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
            os.chmod(node, 0o666)  # mknod applies the umask
            os.chown(node, JAIL_UID, JAIL_UID)
    except OSError as exc:
        shutil.rmtree(path, ignore_errors=True)
        log.warning("jail_devices_shared", error=str(exc),
                    effect="the jail binds the host's device nodes: a jailed tool running as "
                           "root's uid could change their modes")
        return None
    return path


def _covered(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == r or r in path.parents for r in roots)


@dataclass(frozen=True)
class Jail:
    """The bubblewrap argv prefix for one run directory. Immutable; build once per runner."""

    bwrap: str
    base: tuple[str, ...]
    roots: tuple[Path, ...]  # what is visible read-only (besides the run directory)
    #: The Python runtime (venv, base install, rtlforge), bound only for runs that start
    #: Python (cocotb, the gate's worker): every bind costs a little on every start.
    python: tuple[Path, ...] = ()

    @classmethod
    def discover(cls, extra_ro: Sequence[str | Path] = (), *, prove: bool = True) -> Jail:
        """Find bubblewrap and prove it can isolate here; raise IsolationUnavailableError.

        ``prove=False`` leaves the proof to the caller (:meth:`start_probe`), who must have it
        before the jail isolates anything: a one-shot command starts it beside its imports."""
        bwrap = shutil.which("bwrap") or shutil.which("bwrap", path="/usr/bin:/bin")
        if bwrap is None:
            raise IsolationUnavailableError(
                "bubblewrap ('bwrap') is not installed, so tool runs cannot be isolated and "
                "untrusted Verilog is refused. Install it (`apt-get install bubblewrap`), or "
                f"opt out explicitly with {ISOLATION_ENV}=none (unsafe).")
        base = ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                "--uid", str(JAIL_UID), "--gid", str(JAIL_UID)]
        roots: list[Path] = []
        for path in _SYSTEM_DIRS:
            if os.path.islink(path):
                base += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                base += ["--ro-bind", path, path]
                roots.append(Path(path))
        for path in _ETC:
            if os.path.exists(path):
                base += ["--ro-bind", path, path]
                roots.append(Path(path))
        extra = [Path(p).resolve() for p in extra_ro]
        if os.environ.get("VERILATOR_ROOT"):
            extra.append(Path(os.environ["VERILATOR_ROOT"]).resolve())
        for path in extra:
            if path.exists() and not _covered(path, roots):
                base += ["--ro-bind", str(path), str(path)]
                roots.append(path)
        base += ["--proc", "/proc", "--dev", "/dev"]
        devices = _private_devices()
        if devices is not None:
            for name, _, _ in _DEVICES:
                base += ["--dev-bind", str(devices / name), f"/dev/{name}"]
        base += ["--tmpfs", "/tmp"]
        jail = cls(bwrap=bwrap, base=tuple(base), roots=tuple(roots),
                   python=tuple(p for p in _python_roots() if not _covered(p, roots)))
        if devices is not None:
            weakref.finalize(jail, shutil.rmtree, devices, True)
        if not prove:
            return jail
        try:
            jail.probe()
        except IsolationUnavailableError:
            if devices is not None:
                shutil.rmtree(devices, ignore_errors=True)
            raise
        return jail

    def argv(self, run_dir: Path, ro_paths: Sequence[str | Path] = (), *,
             python: bool = False) -> list[str]:
        """``bwrap ... --`` for a run in ``run_dir``; ``ro_paths`` are bound read-only too, and
        the Python runtime with ``python``."""
        run = str(run_dir)
        out = [self.bwrap, *self.base]
        for path in (*(self.python if python else ()), *ro_paths):
            real = Path(path).resolve()
            if not _covered(real, self.roots):
                out += ["--ro-bind", str(real), str(real)]
        out += ["--bind", run, run, "--remount-ro", "/", "--chdir", run, "--setenv", "HOME",
                run, "--setenv", "TMPDIR", "/tmp", "--"]
        return out

    def pooled_argv(self, root: Path) -> list[str]:
        """``bwrap ... --`` for a persistent jail whose only writable host directory is
        ``root`` (run directories are made inside it): the Python runtime is always bound (the
        jail's init is Python), and the command runs as the PID namespace's init."""
        run = str(root)
        out = [self.bwrap, *self.base]
        for path in self.python:
            out += ["--ro-bind", str(path), str(path)]
        out += ["--bind", run, run, "--remount-ro", "/", "--chdir", run, "--as-pid-1",
                "--setenv", "HOME", run, "--setenv", "TMPDIR", "/tmp", "--"]
        return out

    def visible_pooled(self, path: str | Path) -> bool:
        """Whether a host path is visible (read-only) inside every pooled jail."""
        return _covered(Path(path).resolve(), (*self.roots, *self.python))

    def visible(self, path: str | Path) -> bool:
        """Whether a host path is visible (read-only) inside every jail."""
        return _covered(Path(path).resolve(), self.roots)

    def starts_python(self, exe: str | Path) -> bool:
        """Whether ``exe`` is (a link to) the Python interpreter of this process."""
        return Path(os.path.realpath(exe)) == Path(os.path.realpath(interpreter())) or \
            Path(exe).name.startswith("python")

    def probe(self) -> None:
        """Run ``true`` in a jail; raise IsolationUnavailableError with bwrap's words if not."""
        self.start_probe().result()

    def start_probe(self) -> JailProbe:
        """Start :meth:`probe` without waiting for it; raise IsolationUnavailableError if
        bubblewrap cannot even be started."""
        tmp = Path(tempfile.mkdtemp(prefix="rtlforge-probe-"))
        try:
            proc = subprocess.Popen([*self.argv(tmp), "/bin/true"], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise IsolationUnavailableError(f"bubblewrap cannot start: {exc}") from exc
        return JailProbe(proc, tmp)


class JailProbe:
    """A started :meth:`Jail.probe`: ``result()`` waits for it (once; later calls repeat the
    answer) and raises IsolationUnavailableError with bubblewrap's words where it failed."""

    def __init__(self, proc: subprocess.Popen[bytes], tmp: Path) -> None:
        self._proc = proc
        self._error: str | None = None
        self._done = False
        # one never asked (its command ended first) is reaped and its directory removed
        self._forget = weakref.finalize(self, _end_probe, proc, tmp)

    def result(self, timeout: float = 20) -> None:
        if not self._done:
            try:
                _, stderr = self._proc.communicate(timeout=timeout)
                if self._proc.returncode != 0:
                    self._error = (
                        "bubblewrap cannot isolate tool runs on this platform "
                        f"({stderr.decode(errors='replace').strip()}); user namespaces may be "
                        "disabled (sysctl kernel.unprivileged_userns_clone, or a container "
                        "without them). Untrusted Verilog is refused. Run inside a VM/container "
                        f"that allows them, or opt out explicitly with {ISOLATION_ENV}=none "
                        "(unsafe).")
            except subprocess.TimeoutExpired:
                self._error = f"bubblewrap cannot start: it did not finish in {timeout:g} s"
            finally:
                self._forget()
                self._done = True
        if self._error is not None:
            raise IsolationUnavailableError(self._error)


def _end_probe(proc: subprocess.Popen[bytes], tmp: Path) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    if proc.stderr is not None:
        proc.stderr.close()
    shutil.rmtree(tmp, ignore_errors=True)
