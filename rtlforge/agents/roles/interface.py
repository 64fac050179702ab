"""A task's ports, from ``Task.ports`` or, when a loader left them empty, from the spec.

VerilogEval v2 states the interface only in prose, one port a line (`` - input  in  (8 bits)``);
the waveform role needs to know which table columns are inputs, and the testbench checks need
the clock and reset, so both read the ports through :func:`interface_ports`.
"""

from __future__ import annotations

import re

from rtlforge.core.models import Port, Task

__all__ = ["CLOCK_NAME", "RESET_NAME", "clock_port", "interface_ports", "reset_port"]

#: `` - input  a``, `` - output out (32 bits)``, ``- input [7:0] a`` (a bullet, then a port).
_SPEC_PORT = re.compile(
    r"^\s*[-*]\s*(?P<dir>input|output|inout)\s+(?:(?:wire|reg|logic)\s+)?"
    r"(?:\[\s*(?P<msb>\d+)\s*:\s*(?P<lsb>\d+)\s*\]\s*)?(?P<name>[A-Za-z_]\w*)"
    r"(?:\s*\(\s*(?P<bits>\d+)\s*bits?\s*\))?\s*$", re.IGNORECASE | re.MULTILINE)
#: Names that read as a clock or a reset (the conventions of VerilogEval, RTLLM and ours).
CLOCK_NAME = re.compile(r"^(?:clk|clock|i_clk|clk_i|sys_clk|clk_in)$", re.IGNORECASE)
RESET_NAME = re.compile(r"^(?:a?rst|a?reset)(?:_?n|_ni?|_b)?$|^(?:i_)?rst(?:_i|_ni)$",
                        re.IGNORECASE)


def interface_ports(task: Task) -> tuple[Port, ...]:
    """``task.ports``, else the ports the spec lists one per line; () when neither says."""
    if task.ports:
        return task.ports
    ports: list[Port] = []
    seen: set[str] = set()
    for m in _SPEC_PORT.finditer(task.spec):
        if m["name"] in seen:
            continue
        seen.add(m["name"])
        if m["bits"]:
            width = int(m["bits"])
        elif m["msb"] is not None:
            width = abs(int(m["msb"]) - int(m["lsb"])) + 1
        else:
            width = 1
        ports.append(Port(name=m["name"], direction=m["dir"].lower(),  # type: ignore[arg-type]
                          width=max(1, width)))
    return tuple(ports)


def clock_port(task: Task) -> str | None:
    """The task's clock input, by name, or None for a combinational task."""
    return next((p.name for p in interface_ports(task)
                 if p.direction == "input" and p.width == 1 and CLOCK_NAME.match(p.name)), None)


def reset_port(task: Task) -> str | None:
    """The task's reset input, by name, or None when it has none."""
    return next((p.name for p in interface_ports(task)
                 if p.direction == "input" and p.width == 1 and RESET_NAME.match(p.name)), None)
