"""The ``rtlforge`` command line: the only place that configures logging or draws progress.

It sits above every technique: one module per built-in command (:mod:`.validate`,
:mod:`.evaluate`, :mod:`.plugins`, :mod:`.doctor`, :mod:`.examples`, each imported only when its
command runs), the group in :mod:`.root`, the plugin manifest in :mod:`.manifest`, and plugins
add theirs through ``register_commands(cli, host)``. What commands share (exit codes, plugin
selection, task loading) is in :mod:`rtlforge.cmdline`, so nothing below the CLI imports it. Exit
codes: 0 pass, 1 the design did not pass, 2 usage or input error, 3 infrastructure error.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading

from rtlforge.cli.root import cli
from rtlforge.cmdline import Finished

__all__ = ["cli", "main"]


def _exit_on_termination() -> None:
    """Make SIGTERM and SIGHUP end the CLI the way Ctrl-C does: as an exception, so that the
    running tool's process group is killed and every run directory removed on the way out
    (Python's default for these signals ends the process on the spot, leaving both behind).
    Only signals still at their default are taken, and each only once: a second one while the
    CLI cleans up is ignored rather than cutting the clean-up short."""
    def stop(signum: int, _frame: object) -> None:
        for sig in taken:
            signal.signal(sig, signal.SIG_IGN)
        raise SystemExit(128 + signum)

    taken = [sig for sig in (signal.SIGTERM, signal.SIGHUP)
             if signal.getsignal(sig) is signal.SIG_DFL]
    for sig in taken:
        signal.signal(sig, stop)


def _end_now(code: object) -> None:
    """End the process as Python would with ``code``, less the interpreter's teardown: the exit
    handlers run, the output is flushed, then ``os._exit``. A live non-daemon thread (Python
    would wait for it) gets the normal exit instead."""
    status = code if isinstance(code, int) else 0 if code is None else 1
    if any(t.is_alive() and not t.daemon and t is not threading.main_thread()
           for t in threading.enumerate()):
        raise SystemExit(status)
    atexit._run_exitfuncs()  # what Python runs at exit: finalizers, logging's shutdown
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


def main() -> None:
    _exit_on_termination()
    try:
        cli()
    except Finished as done:
        _end_now(done.code)


if __name__ == "__main__":
    main()
