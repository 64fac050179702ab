"""What the agent is told: the task's spec and interface, the conventions of its tools.

Built from the loaded :class:`BehaveTask`'s spec text and interface declaration only. The
golden model's file name, path and text, and the task directory, are never rendered: the
agent sees what a designer reading the spec would see, nothing of B*.
"""

from __future__ import annotations

from rtlforge.behave.sim.protocols import Protocol
from rtlforge.behave.sim.task import BehaveTask, Interface
from rtlforge.behave.types import ArrayType, ScalarType

__all__ = ["interface_text", "ports_text", "system_prompt", "task_prompt"]

_PIN_DIRECTION = {  # (interface direction, pin) -> the port's direction at the design
    ("input", "valid"): "input", ("input", "ready"): "output", ("input", "start"): "input",
    ("output", "valid"): "output", ("output", "ready"): "input", ("output", "done"): "output",
}

_DSL_EXAMPLE = '''\
from rtlforge.behave.model.dsl import *

class Out(Record):
    count: UInt[4]

class Counter(Model):
    """Counts enabled cycles modulo 16 (an example, not your task)."""
    value: UInt[4]

    def reset(self):
        self.value = 0

    def process(self, enable: Bool) -> Out:
        shown = self.value
        if enable:
            self.value = wrap(self.value + 1, 4)
        return Out(count=shown)
'''


def _type_text(t: ScalarType | ArrayType) -> str:
    if isinstance(t, ArrayType):
        return f"{_type_text(t.element)}[{t.length}] (element 0 in the low bits)"
    return "bool" if t.kind == "bool" else f"{t.kind}{t.width}"


def _dsl_type(t: ScalarType | ArrayType) -> str:
    if isinstance(t, ArrayType):
        return f"Array[{_dsl_type(t.element)}, {t.length}]"
    if t.kind == "bool":
        return "Bool"
    return f"{'UInt' if t.kind == 'uint' else 'SInt'}[{t.width}]"


def _width(t: ScalarType | ArrayType) -> int:
    if isinstance(t, ArrayType):
        return _width(t.element) * t.length
    return 1 if t.kind == "bool" else t.width


def ports_text(task: BehaveTask) -> str:
    """The top module's ports, one per line (``input [7:0] in_data``)."""
    lines: list[str] = []

    def port(direction: str, name: str, width: int) -> None:
        vec = f" [{width - 1}:0]" if width > 1 else ""
        lines.append(f"  {direction}{vec} {name}")

    if task.clock is not None:
        port("input", task.clock, 1)
    if task.reset is not None:
        port("input", task.reset.signal, 1)
    for iface in task.interfaces:
        for pin, name in iface.pins.items():
            port(_PIN_DIRECTION.get((iface.direction, pin), iface.direction), name, 1)
        for e in iface.endpoints:
            port(iface.direction, e.pin, _width(e.type))
    return "\n".join(lines)


def _interface_line(iface: Interface) -> str:
    pins = ", ".join(f"{k}={v}" for k, v in iface.pins.items()) or "no handshake pins"
    extra = f", latency {iface.latency}" if iface.latency is not None else ""
    eps = ", ".join(f"{e.name}: {_type_text(e.type)}" + (f" (port {e.port})" if e.port else "")
                    for e in iface.endpoints)
    return f"- {iface.name} ({iface.direction}, {iface.protocol.value}{extra}; {pins}): {eps}"


def interface_text(task: BehaveTask) -> str:
    """The interface declaration as prose: protocols, endpoints, reset, latency, matching."""
    lines = [f"Top module: `{task.top}`", "", "Ports:", ports_text(task), "", "Interfaces:"]
    lines += [_interface_line(i) for i in task.interfaces]
    if task.reset is not None:
        r = task.reset
        lines.append(f"Reset: `{r.signal}`, active {r.active}, {r.kind}, held {r.cycles} "
                     "cycles.")
    if not task.combinational and task.data_input.protocol not in (Protocol.PER_CYCLE,):
        lines.append(f"Latency from an input transaction to its output (stall cycles "
                     f"excluded): {task.latency.min} to {task.latency.max} cycles.")
    lines.append(f"Output matching: {task.matching.policy}"
                 + (f" by `{task.matching.id_field}`" if task.matching.id_field else "") + ".")
    params = ", ".join(f"{e.name}: {_dsl_type(e.type)}" for e in task.input_endpoints)
    fields = ", ".join(f"{e.name}: {_dsl_type(e.type)}" for i in task.outputs
                       for e in i.endpoints)
    lines += ["", f"A behaviour model of this task has `process(self, {params})` and returns a "
              f"Record with the fields {fields} (or a bare `return` when a transaction emits "
              "no output)."]
    return "\n".join(lines)


def system_prompt(*, max_turns: int, evicts: bool = False) -> str:
    """The environment's rules: tools, file conventions, the behaviour-model language.
    ``evicts``: say that the oldest turns leave the context when it fills."""
    forget = (" When the conversation outgrows your context, the oldest turns are dropped; these "
              "instructions, the task and the latest tool results stay, and so do your files "
              "(list_files, read_file)." if evicts else "")
    return f"""\
You are a hardware design agent. Write synthesisable Verilog RTL that implements the task's \
spec on the given interface, and a behaviour model of it. Work with the tools:
- write_file / edit_file / read_file / list_files manage your files (plain names, no \
directories).
- compile lints your design (Icarus or Verilator).
- run_testbench simulates your design with one of your testbench files; the testbench reports \
by $display: a line `STATUS: PASS` (or `All tests passed`) when every check holds, lines \
containing `FAIL` or `ERROR` otherwise.
- behave_self_check simulates your RTL against your own behaviour model under the task's \
protocol, latency and matching rules (random stimulus, backpressure, resets).
- synthesise reports area (um^2), the critical path delay (ns) and power of your design.
- submit ends the episode; your design (and model) are then checked against a hidden \
reference you never see.
Conventions: testbench files are named tb_*.v, test_*.v or *_tb.v and are never part of the \
design; every other .v/.sv/.vh file is the design unless you name the files. The behaviour \
model is model.py unless you name another file.
You have at most {max_turns} turns; a reply without a tool call ends the episode.{forget}

The behaviour model language is a restricted typed Python: one file with optional UPPER_CASE \
integer constants, Record classes for outputs, and one Model class with typed state fields, \
`reset(self)` assigning every field, and `process(self, <inputs>)` called once per \
transaction returning a Record, a bare `return` (no output) or `fail("reason")`. Types: \
UInt[W], SInt[W], Bool, Array[T, N]. Arithmetic is on unbounded integers; storing into a \
field needs `wrap(x, W)` or `saturate(x, W)` when it may not fit. No imports other than \
`from rtlforge.behave.model.dsl import *`, no I/O, no recursion, only bounded loops \
(`for i in range(N)`). Example:
```python
{_DSL_EXAMPLE}```"""


def task_prompt(task: BehaveTask) -> str:
    """The first user message: the spec and the interface (never anything of the golden)."""
    return (f"# Task {task.id}\n\n## Specification\n\n{task.spec.strip()}\n\n## Interface\n\n"
            f"{interface_text(task)}\n")
