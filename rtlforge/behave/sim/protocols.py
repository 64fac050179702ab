"""The interface protocols BEHAVE-Sim knows, and what each one needs from a task.

A protocol says how pin events on one interface form logical transactions. Every protocol is
driven and observed by the generated testbench (:mod:`.testbench`) in the same cycle scheme:
inputs change right after a falling clock edge, everything is sampled just before the rising
edge, the design updates on the rising edge. So a transaction's cycle is the cycle whose rising
edge accepts it.

- ``combinational``: no clock reaches the design; each stimulus vector is one transaction and
  the outputs are read after the vector settles (the sample point of the same cycle).
- ``per_cycle``: every rising edge is a transaction (counters, FSMs): the inputs of cycle k go
  into ``process``, whose result is compared with the outputs sampled in cycle k (before the
  edge that commits the state), so Moore and Mealy outputs both fit.
- ``valid_only``: a transaction is a cycle with ``valid`` high; there is no backpressure.
- ``ready_valid``: a transfer is a cycle with ``valid`` and ``ready`` both high; a sender holds
  ``valid`` and its data until the transfer. The testbench applies random backpressure to the
  design's outputs and monitors that the design obeys the rule.
- ``start_done``: an input transaction is a one-cycle ``start`` pulse; the output transaction
  is the cycle with ``done`` high; one operation is in flight at a time.
- ``fixed_latency``: an output interface whose transaction is the sample exactly ``latency``
  cycles after the input transaction that produced it (no handshake pins). As an input
  protocol it is ``valid_only`` (with or without a ``valid`` pin: every cycle without one).
- ``static``: a configuration interface: its values are held from one reset to the next and
  join every transaction of the data interface (configuration + data combined).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["HANDSHAKE_PINS", "Protocol", "required_pins"]


class Protocol(StrEnum):
    COMBINATIONAL = "combinational"
    PER_CYCLE = "per_cycle"
    VALID_ONLY = "valid_only"
    READY_VALID = "ready_valid"
    START_DONE = "start_done"
    FIXED_LATENCY = "fixed_latency"
    STATIC = "static"


#: Control pins an interface of each protocol may name, by direction of the interface.
HANDSHAKE_PINS: dict[tuple[Protocol, str], tuple[str, ...]] = {
    (Protocol.VALID_ONLY, "input"): ("valid",),
    (Protocol.VALID_ONLY, "output"): ("valid",),
    (Protocol.READY_VALID, "input"): ("valid", "ready"),
    (Protocol.READY_VALID, "output"): ("valid", "ready"),
    (Protocol.START_DONE, "input"): ("start",),
    (Protocol.START_DONE, "output"): ("done",),
    (Protocol.FIXED_LATENCY, "input"): ("valid",),
}

#: Pins that must be named (the rest of HANDSHAKE_PINS are optional).
_REQUIRED: dict[tuple[Protocol, str], tuple[str, ...]] = {
    (Protocol.VALID_ONLY, "input"): ("valid",),
    (Protocol.VALID_ONLY, "output"): ("valid",),
    (Protocol.READY_VALID, "input"): ("valid", "ready"),
    (Protocol.READY_VALID, "output"): ("valid", "ready"),
    (Protocol.START_DONE, "input"): ("start",),
    (Protocol.START_DONE, "output"): ("done",),
}


def allowed_pins(protocol: Protocol, direction: str) -> tuple[str, ...]:
    return HANDSHAKE_PINS.get((protocol, direction), ())


def required_pins(protocol: Protocol, direction: str) -> tuple[str, ...]:
    return _REQUIRED.get((protocol, direction), ())
