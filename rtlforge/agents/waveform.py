"""Waveform windows: the signals around the first mismatch of a failing run, as a text table.

MAGE's "state checkpoint" idea: a debugging agent fixes a design faster from "these were the
inputs, the expected and the observed outputs at the few steps before and after the first wrong
value" than from "Mismatches: 12 in 100 samples". :func:`mismatch_window` draws that table from
a VCD; :func:`failing_window` runs a (task, candidate) with the simulation stage dumping one
(Icarus' ``wave=True``, as ``rtlforge validate --wave`` does) and draws it.

A row is a time step of the dump: the values as they stood at the end of one time stamp (stamps
where no shown signal changed, only a counter or a time variable, make no row). The
row of the first mismatch is the state "just before" the reported time, as
:func:`rtlforge.eda.vcd.snapshot` reads it (a check on a clock edge sees the values from before
that edge's updates). Columns: the testbench scope's inputs, then per checked output its
expected (``<name>_ref``) and observed (``<name>_dut`` or the output itself) values, then the
other signals. Rows where an expected and an observed value differ (``x`` in the expected value
matches anything, as VerilogEval counts) are marked ``*``; the first mismatch's row says so.

No window (``""``, with the reason in :attr:`Window.reason`) when: no dump (the run stopped
before simulating, the simulator cannot dump, the candidate passed), the mismatch has no time,
or the dump does not reach the mismatch (cut at the byte cap) or has no signals in the scope.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection
from dataclasses import dataclass

from rtlforge.agents.roles.interface import interface_ports
from rtlforge.core.models import Candidate, Mismatch, Task, ValidationReport, Verdict
from rtlforge.eda.mismatches import timescale_unit
from rtlforge.eda.modules import top_modules
from rtlforge.eda.vcd import UNIT_FS, format_value, unit_fs
from rtlforge.validate.pipeline import Pipeline

__all__ = ["MAX_VCD_BYTES", "Window", "failing_window", "mismatch_window", "window_from_report"]

#: How much of a dump is read (the window lies near the start of a failing run: the first
#: mismatch); the rest is ignored.
MAX_VCD_BYTES = 4 * 1024 * 1024
#: Columns shown at most: a window is prompt text.
MAX_COLUMNS = 16
#: The simulate stage's dump file (IverilogSim(wave=True)).
WAVE_NAME = "wave.vcd"

_BOOKKEEPING = {"integer", "int", "shortint", "longint", "real", "realtime", "shortreal",
                "time", "event", "parameter", "string"}
#: VerilogEval testbench signals that are harness bookkeeping, not circuit signals.
_HARNESS = {"tb_match", "tb_mismatch", "wavedrom_title", "wavedrom_enable",
            "wavedrom_hide_after_time", "strobe", "stats1"}
_TIME_TEXT = re.compile(r"^\s*(\d+)\s*(?:(?:x\s*)?(1|10|100)?\s*(s|ms|us|ns|ps|fs))?\s*$")
_UNITS = ("s", "ms", "us", "ns", "ps", "fs")
#: What IverilogSim appends to a dump it cut at ``wave_limit_mb``.
_TRUNCATED = "$comment rtlforge: dump truncated"


@dataclass(frozen=True)
class Window:
    """A drawn window (``text``) or why none could be drawn (``reason``, with text "")."""

    text: str = ""
    reason: str = ""
    rows: int = 0
    first_mismatch_fs: int | None = None

    def __bool__(self) -> bool:
        return bool(self.text)


@dataclass
class _Signal:
    name: str
    width: int
    value: str = "x"


def _header(tokens: list[str], scope: str | None
            ) -> tuple[int, int | None, dict[str, list[_Signal]], list[_Signal], str | None]:
    """Parse the declarations: (position after them, timescale fs, id -> signals, signals in
    declaration order, the scope chosen)."""
    pos, n = 0, len(tokens)
    path: list[str] = []
    chosen = scope
    by_code: dict[str, list[_Signal]] = {}
    ordered: list[_Signal] = []
    seen: set[str] = set()
    timescale: int | None = None

    def after_end(i: int) -> int:
        while i < n and tokens[i] != "$end":
            i += 1
        return i + 1

    while pos < n:
        tok = tokens[pos]
        if tok == "$enddefinitions":
            return after_end(pos), timescale, by_code, ordered, chosen
        if tok == "$timescale":
            end = after_end(pos)
            timescale = unit_fs("".join(tokens[pos + 1:end - 1]))
            pos = end
        elif tok == "$scope":
            path.append(tokens[pos + 2] if pos + 2 < n else "")
            if chosen is None and len(path) == 1:
                chosen = path[0]
            pos = after_end(pos)
        elif tok == "$upscope":
            if path:
                path.pop()
            pos = after_end(pos)
        elif tok == "$var":
            end = after_end(pos)
            if (end - pos >= 6 and path == [chosen] and tokens[pos + 1] not in _BOOKKEEPING):
                name = tokens[pos + 4].split("[", 1)[0]
                if name not in seen and name not in _HARNESS:
                    width = int(tokens[pos + 2]) if tokens[pos + 2].isdigit() else 1
                    signal = _Signal(name, width)
                    seen.add(name)
                    ordered.append(signal)
                    by_code.setdefault(tokens[pos + 3], []).append(signal)
            pos = end
        elif tok.startswith("$"):
            pos = after_end(pos)
        else:
            pos += 1
    return n, timescale, by_code, ordered, chosen


def _mismatch_fs(check: Mismatch, time_unit: str | None, timescale_fs: int) -> int | None:
    """The mismatch's time in fs: ``"40 ns"``, ``"40 x 10ps"``, or bare (``time_unit``, else
    the dump's own unit)."""
    if check.time is None:
        return None
    found = _TIME_TEXT.match(check.time)
    if found is None:
        return None
    if found[3]:
        return int(found[1]) * int(found[2] or 1) * UNIT_FS[found[3]]
    unit = unit_fs(time_unit) if time_unit else None
    return int(found[1]) * (unit or timescale_fs)


def _is_bare(time: str | None) -> bool:
    return time is not None and time.strip().isdigit()


def _time_text(times_fs: list[int]) -> list[str]:
    """Times in the largest unit that writes them all as whole numbers (``35ns``)."""
    for unit in _UNITS:
        size = UNIT_FS[unit]
        if all(t % size == 0 for t in times_fs):
            return [f"{t // size}{unit}" for t in times_fs]
    return [f"{t}fs" for t in times_fs]


def _differs(expected: str, observed: str) -> bool:
    """VerilogEval's rule: an ``x`` bit of the expected value matches anything."""
    exp, obs = expected.split("'")[-1][1:] if "'" in expected else expected, (
        observed.split("'")[-1][1:] if "'" in observed else observed)
    if len(exp) != len(obs):
        return expected != observed
    return any(e not in "x" and e != o for e, o in zip(exp, obs, strict=True))


def _columns(ordered: list[_Signal], check: Mismatch, inputs: Collection[str],
             outputs: Collection[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Column names in display order, and the (expected, observed) column pairs."""
    names = [s.name for s in ordered]
    present = set(names)
    pairs: list[tuple[str, str]] = []
    for name in names:
        if name.endswith("_ref"):
            base = name[:-4]
            observed = f"{base}_dut" if f"{base}_dut" in present else base
            if observed in present:
                pairs.append((name, observed))
    paired = {n for pair in pairs for n in pair}
    checked = check.signal
    if checked is not None and checked in present and checked not in paired:
        paired.add(checked)
    ins = [n for n in names if n not in paired and (n in inputs or not inputs)
           and n not in outputs]
    outs = [n for pair in pairs for n in pair] + (
        [checked] if checked in paired and all(checked not in p for p in pairs) else [])
    rest = [n for n in names if n not in ins and n not in outs]
    return (ins + outs + rest)[:MAX_COLUMNS], pairs


def mismatch_window(vcd_text: str, first_mismatch: Mismatch, *, before: int = 3,
                    after: int = 2, scope: str | None = None, time_unit: str | None = None,
                    inputs: Collection[str] = (), outputs: Collection[str] = (),
                    max_bytes: int = MAX_VCD_BYTES) -> str:
    """The table of :func:`draw_window` (``""`` when none can be drawn)."""
    return draw_window(vcd_text, first_mismatch, before=before, after=after, scope=scope,
                       time_unit=time_unit, inputs=inputs, outputs=outputs,
                       max_bytes=max_bytes).text


def draw_window(vcd_text: str, first_mismatch: Mismatch, *, before: int = 3, after: int = 2,
                scope: str | None = None, time_unit: str | None = None,
                inputs: Collection[str] = (), outputs: Collection[str] = (),
                max_bytes: int = MAX_VCD_BYTES) -> Window:
    """``before`` time steps before the first mismatch's row, that row, and ``after`` after it,
    for the signals of top-level scope ``scope`` (None: the first one).

    ``time_unit`` is the testbench's `` `timescale`` unit, for a mismatch time printed bare;
    ``inputs``/``outputs`` are the design's port names (they order the columns; without them
    every unpaired signal counts as an input). Only the first ``max_bytes`` of the dump are read.
    """
    text = vcd_text[:max_bytes]
    cut = len(vcd_text) > max_bytes
    if cut:
        text = text[:text.rfind("\n") + 1]
    tokens = text.split()
    pos, timescale, by_code, ordered, chosen = _header(tokens, scope)
    if timescale is None:
        return Window(reason="the dump has no $timescale")
    if not ordered:
        return Window(reason=f"the dump has no signals in scope {chosen!r}")
    at = _mismatch_fs(first_mismatch, time_unit, timescale)
    if at is None:
        return Window(reason=f"the first mismatch has no usable time ({first_mismatch.time!r})")
    target = -(-at // timescale)  # the dump's stamps are whole units
    stamps: list[int] = []
    states: list[dict[str, str]] = []
    stamp: int | None = None
    later = 0  # closed rows at or after the mismatch's time

    def close() -> bool:
        """Record the time stamp just ended as a row, unless no shown signal changed."""
        if stamp is None:
            return False
        state = {s.name: s.value for s in ordered}
        if states and states[-1] == state:
            return False
        stamps.append(stamp)
        states.append(state)
        return True

    n = len(tokens)
    while pos < n and later <= after:
        tok = tokens[pos]
        pos += 1
        if tok.startswith("#"):
            if close() and stamp is not None and stamp >= target:
                later += 1
            stamp = int(tok[1:]) if tok[1:].isdigit() else (stamp or 0)
        elif tok[0] in "bBrR" and pos < n:
            code = tokens[pos]
            pos += 1
            for signal in by_code.get(code, ()):
                signal.value = (format_value(tok[1:], signal.width) if tok[0] in "bB"
                                else tok[1:])
        elif tok[0] in "01xzXZ" and len(tok) > 1:
            for signal in by_code.get(tok[1:], ()):
                signal.value = format_value(tok[0], signal.width)
    if later <= after:
        close()  # the dump ended: its last time stamp is a row too
    if not stamps:
        return Window(reason="the dump has no value changes")
    if stamps[-1] < target and (cut or _TRUNCATED in text):
        return Window(reason="the dump was cut at its size cap before the first mismatch")
    if stamps[-1] < target and time_unit is not None and _is_bare(first_mismatch.time):
        # a bare time is ambiguous: $time prints in the timescale unit, %t in its precision;
        # past the end of a complete dump in the unit, it was the precision (the dump's unit)
        return draw_window(vcd_text, first_mismatch, before=before, after=after, scope=scope,
                           time_unit=None, inputs=inputs, outputs=outputs, max_bytes=max_bytes)
    before_target = sum(1 for t in stamps if t < target)
    hit = max(0, before_target - 1)  # the state just before the reported time
    first, last = max(0, hit - before), min(len(stamps), hit + after + 1)
    columns, pairs = _columns(ordered, first_mismatch, inputs, outputs)
    times = _time_text([stamps[i] * timescale for i in range(first, last)])
    header = ["", "time", *columns, ""]
    body: list[list[str]] = []
    for k, i in enumerate(range(first, last)):
        state = states[i]
        wrong = any(_differs(state[e], state[o]) for e, o in pairs)
        note = "<- first mismatch" if i == hit else ""
        if i == hit and not pairs and first_mismatch.expected is not None:
            note += (f" ({first_mismatch.signal or 'output'}: expected "
                     f"{first_mismatch.expected}, observed {first_mismatch.observed})")
        body.append(["*" if wrong or (i == hit and not pairs) else "", times[k],
                     *(state[c] for c in columns), note])
    widths = [max(len(row[c]) for row in (header, *body)) for c in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in (header, *body)]
    return Window(text="\n".join(lines) + "\n", rows=len(body), first_mismatch_fs=at)


def _first_check(report: ValidationReport) -> Mismatch | None:
    for stage in report.stages:
        for feedback in stage.feedback:
            for check in feedback.mismatches:
                if check.time is not None:
                    return check
    return None


def _testbench_scope(task: Task) -> str | None:
    if task.testbench_top:
        return task.testbench_top
    tops = top_modules([f.content for f in task.testbench if f.name.endswith((".v", ".sv"))])
    return tops[0] if len(tops) == 1 else None


def window_from_report(task: Task, report: ValidationReport, **options: int) -> Window:
    """The window of a report whose simulate stage returned a dump (``wave.vcd``)."""
    if report.verdict is Verdict.PASS:
        return Window(reason="the candidate passed: there is no mismatch")
    stage = next((s for s in report.stages if WAVE_NAME in {f.name for f in s.files}), None)
    if stage is None:
        reached = any(s.name.endswith("sim") or s.name == "simulate" for s in report.stages)
        return Window(reason="the simulation left no dump" if reached else
                      "the run stopped before simulation (no dump)")
    check = _first_check(report)
    if check is None:
        return Window(reason="the testbench reported no failing check with a time")
    dump = next(f.content for f in stage.files if f.name == WAVE_NAME)
    unit = next((u for f in task.testbench if (u := timescale_unit(f.content))), None)
    ports = interface_ports(task)  # VerilogEval states them only in the spec
    return draw_window(dump, check, scope=_testbench_scope(task), time_unit=unit,
                       inputs=[p.name for p in ports if p.direction == "input"],
                       outputs=[p.name for p in ports if p.direction == "output"], **options)


def dumping(pipeline: Pipeline, *, limit_mb: float = MAX_VCD_BYTES / 2**20) -> Pipeline | None:
    """``pipeline`` with its simulation stage dumping a VCD, or None when no stage can (only
    the Icarus simulator dumps today). Runner, cache, timeout and options are shared."""
    stages = []
    found = False
    for v in pipeline.validators:
        if v.stage == "simulate" and dataclasses.is_dataclass(v) and {"wave", "wave_limit_mb"} <= {
                f.name for f in dataclasses.fields(v)}:
            v, found = dataclasses.replace(v, wave=True, wave_limit_mb=limit_mb), True
        stages.append(v)
    if not found:
        return None
    return Pipeline(stages, runner=pipeline.runner, cache=pipeline.cache,
                    timeout=pipeline.timeout, options=pipeline.options)


def failing_window(task: Task, candidate: Candidate, pipeline: Pipeline, **options: int
                   ) -> Window:
    """Validate ``candidate`` with a dumping copy of ``pipeline`` and draw its window.

    One more simulation of a failing candidate (with the dump on); a candidate that passes, a
    task without a testbench or a pipeline whose simulator cannot dump gives no window.
    """
    if not task.testbench:
        return Window(reason="the task has no testbench to simulate")
    waves = dumping(pipeline)
    if waves is None:
        return Window(reason="the pipeline's simulator cannot dump a waveform (Icarus only)")
    return window_from_report(task, waves.validate(task, candidate), **options)
