"""Builders for the inputs a plugin's tests need: tasks, candidates, contexts and plugin hosts.

A plugin author wants to test a validator's verdict logic on a two-line design without writing
a task directory, a testbench and a ``ValidationContext`` by hand each time; these helpers build
valid, frozen rtlforge models from the smallest description that still says what is checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from rtlforge.core.interfaces import ValidationContext
from rtlforge.core.models import Candidate, Port, SourceFile, Task
from rtlforge.core.plugins import PluginHost
from rtlforge.testing.fake_runner import FakeRunner

if TYPE_CHECKING:
    from rtlforge.sandbox.runner import SandboxRunner

#: "input a", "output [7:0] y", "input signed [3:0] b", "inout wire x".
_PORT = re.compile(
    r"^\s*(?P<dir>input|output|inout)\s+(?:(?:wire|reg|logic)\s+)?(?P<signed>signed\s+)?"
    r"(?:\[\s*(?P<msb>\d+)\s*:\s*(?P<lsb>\d+)\s*\]\s*)?(?P<name>[A-Za-z_]\w*)\s*$"
)

#: Name of the module the generated testbench declares (and ``Task.testbench_top``).
TESTBENCH_TOP = "tb"


def parse_port(text: str) -> Port:
    """A :class:`Port` from one Verilog-style declaration such as ``"input [7:0] a"``."""
    m = _PORT.match(text)
    if m is None:
        raise ValueError(f"cannot read a port from {text!r}; write it like 'input [7:0] a'")
    msb, lsb = m["msb"], m["lsb"]
    width = abs(int(msb) - int(lsb)) + 1 if msb is not None else 1
    return Port(name=m["name"], direction=cast(Any, m["dir"]), width=width,
                signed=m["signed"] is not None)


def make_candidate(source: str | Mapping[str, str], *, name: str = "design.v",
                   top: str | None = None, task_id: str | None = None) -> Candidate:
    """A Candidate from Verilog text (one file called ``name``) or from ``{file name: text}``."""
    files = {name: source} if isinstance(source, str) else dict(source)
    return Candidate(files=tuple(SourceFile(name=n, content=c) for n, c in files.items()),
                     top=top, task_id=task_id)


def make_task(
    top: str = "dut",
    *,
    ports: Iterable[Port | str] = (),
    vectors: Sequence[Mapping[str, int]] = (),
    testbench: str | None = None,
    golden: str | None = None,
    spec: str | None = None,
    task_id: str | None = None,
    **fields: Any,
) -> Task:
    """A valid Task for module ``top``.

    ``ports`` are Port objects or declarations (``"input [7:0] a"``). ``vectors`` are test
    vectors for a combinational design, one ``{port: value}`` per step: every input is driven,
    and every output named is checked after a delay, so the generated testbench (``tb.v``,
    module ``tb``) prints ``Mismatches: N in M samples`` and a ``FAIL`` line per wrong output,
    which rtlforge's ``auto`` pass rule reads. ``testbench`` gives your own testbench text
    instead. ``golden`` is a reference design (``golden.v``). Other keyword arguments are Task
    fields (``support``, ``pass_rule``, ``category``, ``metadata``, ...).
    """
    port_list = tuple(p if isinstance(p, Port) else parse_port(p) for p in ports)
    if vectors and testbench is not None:
        raise ValueError("give either vectors (a testbench is generated) or testbench, not both")
    if vectors:
        testbench = vector_testbench(top, port_list, vectors)
        fields.setdefault("testbench_top", TESTBENCH_TOP)
    if testbench is not None:
        fields["testbench"] = (SourceFile(name="tb.v", content=testbench),)
    if golden is not None:
        fields["golden"] = (SourceFile(name="golden.v", content=golden),)
    if spec is None:
        signature = ", ".join(_declaration(p) for p in port_list)
        spec = f"Implement module {top}({signature})." if port_list else f"Implement {top}."
    return Task(id=task_id or top, spec=spec, top=top, ports=port_list, **fields)


def vector_testbench(top: str, ports: Sequence[Port],
                     vectors: Sequence[Mapping[str, int]]) -> str:
    """A self-checking Verilog testbench that applies ``vectors`` to ``top`` (see make_task)."""
    by_name = {p.name: p for p in ports}
    inputs = [p for p in ports if p.direction == "input"]
    if not inputs or not any(p.direction == "output" for p in ports):
        raise ValueError("test vectors need ports with at least one input and one output")
    decls = [f"  {'reg' if p.direction == 'input' else 'wire'} {_range(p)}{p.name};"
             for p in ports if p.direction != "inout"]
    body: list[str] = []
    checks = 0
    for index, vector in enumerate(vectors):
        unknown = sorted(set(vector) - set(by_name))
        missing = [p.name for p in inputs if p.name not in vector]
        if unknown or missing:
            raise ValueError(f"vector {index}: unknown ports {unknown}, inputs not driven "
                             f"{missing}")
        body += [f"    {p.name} = {_literal(p, vector[p.name])};" for p in inputs]
        body.append("    #1;")
        driven = ", ".join(f"{p.name}=%0d" for p in inputs)
        args = ", ".join(p.name for p in inputs)
        for name, value in vector.items():
            port = by_name[name]
            if port.direction != "output":
                continue
            checks += 1
            expected = _literal(port, value)
            body += [
                f"    if ({name} !== {expected}) begin",
                "      errors = errors + 1;",
                f'      $display("FAIL vector {index}: {driven} gives {name}=%0d, expected '
                f'{expected}", {args}, {name});',
                "    end",
            ]
    if not checks:
        raise ValueError("no vector names an output, so the testbench would check nothing")
    connections = ", ".join(f".{p.name}({p.name})" for p in ports if p.direction != "inout")
    return "\n".join([
        f"module {TESTBENCH_TOP};",
        *decls,
        "  integer errors = 0;",
        f"  {top} dut({connections});",
        "  initial begin",
        *body,
        f'    $display("Mismatches: %0d in {checks} samples", errors);',
        "    $finish;",
        "  end",
        "endmodule",
        "",
    ])


def make_context(task: Task, candidate: Candidate, runner: FakeRunner | SandboxRunner, *,
                 workdir: str | Path | None = None, timeout: float = 60.0,
                 options: Mapping[str, Any] | None = None) -> ValidationContext:
    """What a pipeline hands a validator: the candidate and the task's testbench and support
    files put into a run directory through ``runner`` (roles as the pipeline gives them)."""
    if workdir is None:
        if not isinstance(runner, FakeRunner):
            raise ValueError("with a real SandboxRunner pass workdir= (a path from "
                             "runner.workspace())")
        workdir = runner.make_workspace()
    path = Path(workdir)
    runner.put(path, task.support, role="testbench")
    runner.put(path, candidate.files, role="design")
    runner.put(path, task.testbench, role="testbench")
    return ValidationContext(task=task, candidate=candidate, workdir=path,
                             runner=cast("SandboxRunner", runner), timeout=timeout,
                             options=dict(options or {}))


def make_plugin_host(*plugins: object | tuple[str, object]) -> PluginHost:
    """A PluginHost with exactly these plugins: no entry points, and the
    ``RTLFORGE_PLUGINS_ALLOW``/``_BLOCK`` variables of the shell running the tests ignored.

    Each plugin is a module or object with hookimpls, or a ``(name, plugin)`` pair; a bare
    module is named after its ``__name__``, another object after its class.
    """
    named = [p if isinstance(p, tuple) else (_plugin_name(p), p) for p in plugins]
    return PluginHost(load_entrypoints=False, allow=[n for n, _ in named], block=(),
                      plugins=named)


def _plugin_name(plugin: object) -> str:
    return plugin.__name__ if isinstance(plugin, ModuleType) else type(plugin).__name__


def _range(port: Port) -> str:
    signed = "signed " if port.signed else ""
    return f"{signed}[{port.width - 1}:0] " if port.width > 1 else signed


def _declaration(port: Port) -> str:
    return f"{port.direction} {_range(port)}{port.name}"


def _literal(port: Port, value: int) -> str:
    """``value`` as a sized Verilog literal; negative values wrap (two's complement)."""
    if not -(1 << port.width) < value < (1 << port.width):
        raise ValueError(f"{value} does not fit port {port.name!r} ({port.width} bit(s))")
    return f"{port.width}'d{value & ((1 << port.width) - 1)}"
