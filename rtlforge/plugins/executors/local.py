"""The in-process executors (``serial``, ``thread``), registered like any executor plugin.

They live in the kernel (every batch API defaults to a thread pool without a host); this module
only names them to the plugin host, so ``host.create("executor", "thread", workers=4)`` and a
third party's ``host.create("executor", "ray", ...)`` read the same.
"""

from __future__ import annotations

from rtlforge.core.executor import SerialExecutor, ThreadExecutor
from rtlforge.core.hookspecs import Register, hookimpl


@hookimpl
def register_executors(register: Register) -> None:
    register(SerialExecutor)
    register(ThreadExecutor)
