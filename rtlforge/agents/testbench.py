"""Generated testbenches: turning the Testbench role's answer into a task, checking it is a
real test, and the rule that keeps it from ever overruling a real testbench.

The rule (:func:`final_judge`): a task's verdict is given by its **real** testbench whenever it
has one (a testbench or a cocotb module that came with the task). A generated testbench is only
a stand-in for tasks that have none; :func:`generated_testbench_task` refuses to replace a real
one, and a task it returns says ``metadata["testbench_origin"] = "generated"`` so every report
can tell which kind judged it.

A generated testbench reports through the lines rtlforge's ``auto`` pass rule reads
(:mod:`rtlforge.eda.verdicts`), which the Testbench role's template asks for:

- ``Mismatches: N in M samples`` (the VerilogEval summary; pass iff N is 0), then
- ``TEST PASSED`` (a line of its own, read as a pass) or ``TEST FAILED`` (read as a failure),
- one ``FAIL test=K time=T: a=.. b=.. gives y=.., expected=..`` line per failing check, which
  :mod:`rtlforge.eda.mismatches` turns into structured failing checks.

It is an untrusted file: the pipeline's gate checks it with the rules for a testbench.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from rtlforge.agents.roles.interface import clock_port, reset_port
from rtlforge.core.errors import ConfigError, ExtractionError
from rtlforge.core.extract import extract_verilog
from rtlforge.core.models import PassRule, SourceFile, Task
from rtlforge.eda.mismatches import timescale_unit
from rtlforge.eda.modules import scan_modules
from rtlforge.eda.vcd import UNIT_FS, unit_fs

__all__ = [
    "GENERATED",
    "GENERATED_FILE",
    "MIN_SCENARIOS",
    "ORIGIN_KEY",
    "STATUS_MARKERS",
    "RealTestbenchError",
    "TestbenchCheck",
    "TestbenchError",
    "check_generated_testbench",
    "final_judge",
    "generated_testbench_task",
    "is_generated",
]

ORIGIN_KEY = "testbench_origin"
GENERATED = "generated"
#: The file name a generated testbench gets in the task (and in the run directory).
GENERATED_FILE = "tb_generated.v"
MIN_SCENARIOS = 5
CLOCK_PERIOD_NS = 10
#: The status lines a generated testbench must be able to print (format strings as written).
STATUS_MARKERS = ("Mismatches: %0d in %0d samples", "TEST PASSED", "TEST FAILED")


class TestbenchError(ExtractionError):
    """The model's answer holds no usable testbench (the answer's fault: a design error)."""

    __test__ = False


class RealTestbenchError(ConfigError, ValueError):
    """Asked to replace a task's real testbench by a generated one, which the rule forbids."""


_COMMENT = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)", re.S)
_HEADER_LINE = re.compile(r"^[ \t]*(?:module|macromodule)[ \t]+([A-Za-z_][\w$]*)", re.M)
_SCENARIO = re.compile(r"//[ \t]*scenario[ \t]*(\d+|[A-Za-z]\b)", re.IGNORECASE)
_MISMATCH_LINE = re.compile(r'"[^"\n]*Mismatches:\s*%0?d\s+in\s+%0?d\s+samples[^"\n]*"')
_CHECK_CALL = re.compile(r"(?<!task)(?<!function)(?<!automatic)\s\b(check\w*)\s*\(", re.I)
_COMPARE_IF = re.compile(r"\bif\s*\([^;]*?(?:!==|!=)")


def is_generated(task: Task) -> bool:
    return task.metadata.get(ORIGIN_KEY) == GENERATED


def final_judge(task: Task) -> Literal["real", "generated"]:
    """Which testbench gives ``task``'s final verdict: ``"real"`` whenever the task came with
    a testbench (or cocotb module), ``"generated"`` only when it has none (or only a generated
    one). A generated testbench never judges a task that has a real one."""
    if is_generated(task):
        return "generated"
    return "real" if task.testbench or task.cocotb_module is not None else "generated"


def _chunks(source: str) -> list[tuple[str, str]]:
    """``(module name, text)`` per module of extracted Verilog; directive lines above a
    header stay with the module below them."""
    heads = list(_HEADER_LINE.finditer(source))
    out: list[tuple[str, str]] = []
    carry = ""
    for k, head in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(source)
        lines = source[head.start():end].rstrip().splitlines()
        trailing: list[str] = []
        while lines and (lines[-1].lstrip().startswith("`") or not lines[-1].strip()):
            trailing.insert(0, lines.pop())
        out.append((head[1], carry + "\n".join(lines)))
        carry = "\n".join(t for t in trailing if t.strip())
        carry = carry + "\n" if carry else ""
    prefix = source[:heads[0].start()].strip() if heads else ""
    if out and prefix:
        out[0] = (out[0][0], f"{prefix}\n{out[0][1]}")
    return out


def generated_testbench_task(task: Task, text: str) -> Task:
    """``task`` judged by the testbench in ``text`` (a model's answer), marked generated.

    Modules named like the design (a model that wrote the design too) are dropped; the
    testbench top is the module that instantiates ``task.top``. Raises
    :class:`TestbenchError` when the answer holds no such module and
    :class:`RealTestbenchError` when ``task`` already has a real testbench.
    """
    if final_judge(task) == "real":
        raise RealTestbenchError(f"task {task.id!r} has a real testbench; a generated one never "
                                 "replaces it")
    try:
        source = extract_verilog(text)
    except ExtractionError as exc:
        raise TestbenchError(f"no testbench in the answer: {exc}") from exc
    kept = [(name, body) for name, body in _chunks(source) if name != task.top]
    if not kept:
        raise TestbenchError(f"the answer defines only the design {task.top!r}, no testbench")
    bench = "\n\n".join(body for _, body in kept).strip() + "\n"
    scan = scan_modules(bench)
    drivers = [m.name for m in scan.modules if task.top in m.instantiates]
    if not drivers:
        raise TestbenchError(f"no module of the answer instantiates the design {task.top!r}")
    used = scan.instantiated
    top = next((name for name in drivers if name not in used), drivers[0])
    return task.model_copy(update={
        "testbench": (SourceFile(name=GENERATED_FILE, content=bench),),
        "testbench_top": top,
        "pass_rule": PassRule(),
        "metadata": {**task.metadata, ORIGIN_KEY: GENERATED},
    })


@dataclass(frozen=True)
class TestbenchCheck:
    """What :func:`check_generated_testbench` found: ``problems`` as sentences a model can act
    on (empty when the testbench is fine), and what it counted."""

    __test__ = False

    problems: tuple[str, ...]
    scenarios: int
    clock: str | None = None  # the testbench's clock signal, when the task has a clock
    reset: str | None = None  # the testbench's reset signal, when the task has a reset

    @property
    def ok(self) -> bool:
        return not self.problems


def _connected(code: str, port: str) -> str:
    """The testbench signal wired to the design's ``port`` (``.clk(tb_clk)``), else ``port``."""
    found = re.search(rf"\.{re.escape(port)}\s*\(\s*([A-Za-z_]\w*)\s*\)", code)
    return found[1] if found else port


def _clock_problem(code: str, source: str, clock: str) -> str | None:
    name = re.escape(clock)
    toggle = re.search(rf"#\s*(\d+(?:\.\d+)?)\s*(?:begin\s+)?{name}\s*=\s*[~!]\s*{name}\b", code)
    if toggle is None:
        return (f"no clock: toggle `{clock}` every 5 ns, e.g. `always #5 {clock} = ~{clock};`")
    unit = timescale_unit(source)
    fs = unit_fs(unit) if unit else None
    if fs is None:
        return "no `timescale: start the file with `timescale 1ns/1ps so #5 means 5 ns"
    period_ns = 2 * float(toggle[1]) * fs / UNIT_FS["ns"]
    if abs(period_ns - CLOCK_PERIOD_NS) > 1e-9:
        return (f"the clock period is {period_ns:g} ns; it must be {CLOCK_PERIOD_NS} ns "
                f"(half period 5 ns)")
    return None


def _level(value: str) -> str | None:
    """``1``/``0`` for a constant assignment (``1'b1``, ``0``, ``1'd0``), else None."""
    found = re.fullmatch(r"\s*(?:\d*'[bdhBDH])?\s*([01])\s*", value)
    return found[1] if found else None


def _reset_problem(code: str, reset: str) -> str | None:
    active_low = bool(re.search(r"(?:_?n|_ni?|_b)$", reset, re.IGNORECASE))
    asserted, released = ("0", "1") if active_low else ("1", "0")
    levels = [_level(m[1]) for m in re.finditer(
        rf"(?<![\w.]){re.escape(reset)}\s*<?=\s*([^;,)]+)", code)]
    if asserted not in levels or released not in levels[levels.index(asserted):]:
        state = "low" if active_low else "high"
        return (f"no reset sequence: drive `{reset}` {state} (asserted) at the start for a few "
                f"cycles, then release it")
    return None


def _scenarios(source: str, code: str) -> int:
    labelled = {m[1].lower() for m in _SCENARIO.finditer(source)}
    if labelled:
        return len(labelled)
    return len(_CHECK_CALL.findall(code)) + len(_COMPARE_IF.findall(code))


def check_generated_testbench(task: Task, source: str) -> TestbenchCheck:
    """Sanity checks of a generated testbench's text before it is trusted to judge designs.

    It must instantiate ``task.top``, have a 10 ns clock when the task has a clock input, a
    reset sequence (asserted, then released) when it has a reset input, at least
    :data:`MIN_SCENARIOS` scenarios (distinct ``// Scenario N`` labels; a testbench with no
    label is counted by its check sites instead: calls of a ``check*`` task and ``if``
    conditions comparing with ``!==``/``!=``, a loop counting once), the
    status lines of :data:`STATUS_MARKERS` and a ``$finish``.
    """
    code = _COMMENT.sub(" ", source)
    problems: list[str] = []
    if not any(task.top in m.instantiates for m in scan_modules(code).modules):
        problems.append(f"the testbench does not instantiate `{task.top}`")
    clock = reset = None
    if (port := clock_port(task)) is not None:
        clock = _connected(code, port)
        if (problem := _clock_problem(code, source, clock)) is not None:
            problems.append(problem)
    if (port := reset_port(task)) is not None:
        reset = _connected(code, port)
        if (problem := _reset_problem(code, reset)) is not None:
            problems.append(problem)
    scenarios = _scenarios(source, code)
    if scenarios < MIN_SCENARIOS:
        problems.append(f"only {scenarios} scenario(s); write at least {MIN_SCENARIOS}, each "
                        "starting with a `// Scenario N: ...` comment")
    if not _MISMATCH_LINE.search(code):
        problems.append('no summary line: print $display("Mismatches: %0d in %0d samples", '
                        "mismatches, samples) at the end")
    for marker in STATUS_MARKERS[1:]:
        if f'"{marker}"' not in code:
            problems.append(f'no status line {marker!r}: print $display("{marker}") when it '
                            "applies")
    if not re.search(r"\$finish\b", code):
        problems.append("no $finish: the simulation must end by itself")
    return TestbenchCheck(problems=tuple(problems), scenarios=scenarios, clock=clock,
                          reset=reset)
