"""How often each protocol monitor of the testbench was *exercised*: the stimulus created the
condition under which the monitor can fire, so a report can say "data-stable-while-stalled was
checked N times" rather than only "no violation".

The counts are derived from the transaction log the testbench already writes (no extra
instrumentation): an output transfer logged in cycle ``c`` that was first offered in cycle ``f``
was stalled (valid high, ready low) in the samples ``f .. c-1``, so the ``unstable`` and
``valid_dropped`` monitors were armed in the ``c - f`` samples ``f+1 .. c`` (the testbench
compares the data with the stalled copy and checks that valid is still high), and ``x_data``
looked at the data in the ``c - f + 1`` samples where valid was high. ``x_valid`` looks at the
valid/done pin in every sample outside reset. Interfaces without a valid pin (combinational,
per-cycle, fixed-latency) have no such monitors and are not listed; ``x_ready`` (the design's
input ready) is not counted: the log does not record the cycles an input was offered.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from rtlforge.behave.sim.protocols import Protocol
from rtlforge.behave.sim.run import RunLog
from rtlforge.behave.sim.task import BehaveTask

__all__ = ["MonitorExercise", "monitor_exercise"]


class MonitorExercise(BaseModel):
    """Per output interface with a valid (or done) pin: the samples in which each monitor was
    armed. ``stalls``: output transfers that waited at least one cycle for ready."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    interface: str
    protocol: str
    transfers: int
    stalls: int
    valid_dropped: int
    unstable: int
    x_data: int
    x_valid: int


def monitor_exercise(task: BehaveTask, log: RunLog) -> tuple[MonitorExercise, ...]:
    """The monitors' exercise counts on one run (format of the log: :mod:`.testbench`)."""
    reset_cycles = len(log.resets) * (task.reset.cycles if task.reset is not None else 0)
    samples = max(0, log.cycles - reset_cycles)
    out = []
    for iface in task.outputs:
        if iface.protocol not in (Protocol.READY_VALID, Protocol.VALID_ONLY,
                                  Protocol.START_DONE):
            continue
        waits = [o.cycle - o.first for o in log.outputs if o.iface == iface.name]
        stalled = sum(waits)
        out.append(MonitorExercise(
            interface=iface.name, protocol=iface.protocol.value, transfers=len(waits),
            stalls=sum(w > 0 for w in waits), valid_dropped=stalled, unstable=stalled,
            x_data=stalled + len(waits), x_valid=samples))
    return tuple(out)
