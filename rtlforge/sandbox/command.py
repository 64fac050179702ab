"""How a jailed process's command line and environment are built, without pydantic.

:class:`~rtlforge.sandbox.runner.SandboxRunner` and :mod:`rtlforge.sandbox.gate` build the same
pieces here: the ``prlimit`` wrapper, the rlimits a limit set means, the environment a tool
sees and what the jail must bind for an executable. Kept free of heavy imports so that a
one-shot command can start its gate worker before it imports pydantic
(:meth:`rtlforge.sandbox.gate.EarlyWorker.start`), exactly as the runner would start it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rtlforge.core.errors import SandboxError

if TYPE_CHECKING:
    from rtlforge.sandbox.jail import Jail

#: Environment variables passed through to tools (everything else is dropped).
ENV_PASSTHROUGH = ("PATH", "LANG", "LC_ALL", "VERILATOR_ROOT", "SYSTEMC_HOME", "SYSTEMC_INCLUDE",
                   "SYSTEMC_LIBDIR", "PYTHONPATH", "VIRTUAL_ENV")

#: prlimit(1) flags for the rlimits the runner sets (names as in the ``resource`` module).
PRLIMIT_FLAGS = {"RLIMIT_CPU": "--cpu", "RLIMIT_FSIZE": "--fsize", "RLIMIT_AS": "--as",
                 "RLIMIT_NPROC": "--nproc"}


def rlimit_values(*, timeout_s: float, cpu_s: int | None, file_size_mb: int,
                  address_space_mb: int | None, processes: int | None) -> dict[str, int]:
    """The rlimits of a limit set (:class:`~rtlforge.sandbox.runner.Limits`'s fields); CPU time
    defaults to the timeout rounded down plus a margin."""
    cpu = cpu_s if cpu_s is not None else int(timeout_s) + 5
    values = {"RLIMIT_CPU": cpu, "RLIMIT_FSIZE": file_size_mb * 1024 * 1024}
    if address_space_mb is not None:
        values["RLIMIT_AS"] = address_space_mb * 1024 * 1024
    if processes is not None:
        values["RLIMIT_NPROC"] = processes
    return values


def prlimit_chain(prefix: Sequence[str], prlimit: str | None,
                  rlimits: Mapping[str, int]) -> list[str]:
    """The wrapper chain that applies ``rlimits`` and execs the command after it."""
    if not prlimit:
        raise SandboxError("util-linux 'prlimit' is required to apply resource limits "
                           "(apt-get install util-linux)")
    flags = [f"{PRLIMIT_FLAGS[name]}={value}" for name, value in rlimits.items()]
    return [*prefix, prlimit, *flags, "--"]


def tool_environment(cwd: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a tool sees: a few passed-through variables, its run directory as home and temp."""
    run_env = {k: os.environ[k] for k in ENV_PASSTHROUGH if k in os.environ}
    run_env.update({"HOME": str(cwd), "TMPDIR": str(cwd), "LC_ALL": "C"})
    if env:
        run_env.update(env)
    return run_env


def exe_facts(jail: Jail, exe: str) -> tuple[bool, Path | None, bool]:
    """Whether ``exe`` needs the Python runtime bound, the directory to bind for a tool outside
    the system directories (a venv's launcher script) or None, and whether the pooled jails
    already see that directory."""
    visible = jail.visible(exe)
    home = None if visible else Path(os.path.realpath(exe)).parent.parent
    return (jail.starts_python(exe) or not visible, home,
            home is None or jail.visible_pooled(home))


def jailed_argv(jail: Jail, run_dir: Path, exe: str, args: Sequence[str],
                ro_paths: Sequence[str | Path] = (), *,
                facts: tuple[bool, Path | None, bool] | None = None) -> list[str]:
    """``bwrap ... -- exe args`` in a jail of its own for ``run_dir``; ``facts`` are
    :func:`exe_facts` of ``exe`` where the caller keeps them."""
    python, home, _ = facts if facts is not None else exe_facts(jail, exe)
    extra = [*ro_paths, *((home,) if home is not None else ())]
    return [*jail.argv(run_dir, extra, python=python), exe, *args]


def end_process_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill a long-lived process's whole group (it leads one), close our pipes, reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
