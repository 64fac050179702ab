"""The ``rtlforge`` command line: the only place that configures logging or draws progress.

It sits above every technique: one module per built-in command (:mod:`.validate`,
:mod:`.evaluate`, :mod:`.plugins`, :mod:`.doctor`, :mod:`.examples`, each imported only when its
command runs), the group in :mod:`.root`, the plugin manifest in :mod:`.manifest`, and plugins
add theirs through ``register_commands(cli, host)``. What commands share (exit codes, plugin
selection, task loading) is in :mod:`rtlforge.cmdline`, so nothing below the CLI imports it. Exit
codes: 0 pass, 1 the design did not pass, 2 usage or input error, 3 infrastructure error.
"""

from __future__ import annotations

import signal

from rtlforge.cli.root import cli

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


def main() -> None:
    _exit_on_termination()
    cli()


if __name__ == "__main__":
    main()
