"""Read failing checks out of a testbench's own lines, as :class:`Mismatch` records.

A refinement agent fixes a wrong design from "out was 1, expected 0, at time 40 with a=1 b=0",
not from "Mismatches: 12 in 100 samples". Testbenches print that in a few common styles:

- VerilogEval: ``Hint: Output 'out' has 12 mismatches. First mismatch occurred at time 40.``
  (no values: :func:`fill_from_dump` takes them from the ``*_ref``/``*_dut`` signals of a dump);
- rtlforge's vector testbench: ``FAIL vector 3: a=1, b=0 gives out=1, expected 1'd0``;
- RTLLM and hand-written ones: ``name = value`` lists with an expected value
  (``Failed at i=3, out=101, expected=110``; ``clk=1, ins=5 (expected 7)``;
  ``A = 5, B = 3, Expected Product = 15, Got = 14``) and ``expected X, got Y`` phrases.

Callers pass only lines the testbench printed (:func:`~rtlforge.eda.verdicts.testbench_lines`):
a design cannot forge a check here.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from rtlforge.core.models import Mismatch
from rtlforge.eda.vcd import UNIT_FS, Snapshot, snapshot, unit_fs

#: Failing checks carried in one feedback item; the rest stay in the stage log.
MAX_MISMATCHES = 5

_VALUE = r"-?[\w'.]*\w"
_VERILOG_EVAL = re.compile(
    r"\bOutput\s+'(?P<signal>[^']+)'\s+has\s+(?P<count>\d+)\s+mismatch(?:es)?\."
    r"(?:\s*First\s+mismatch\s+occurred\s+at\s+time\s+(?P<time>\d+))?", re.IGNORECASE)
_VECTOR = re.compile(
    rf"\bFAIL\s+vector\s+(?P<index>\d+):\s*(?P<inputs>.*?)\s+gives\s+(?P<signal>[\w.\[\]]+)"
    rf"\s*=\s*(?P<observed>{_VALUE}),\s*expected\s+(?P<expected>{_VALUE})", re.IGNORECASE)
_EXPECTING = r"expected|expect|exp|ref|reference|golden|correct"
_OBSERVING = r"got|actual|observed|obs|received|dut"
#: ``name = value`` (not ``name: value``: "Error: a=1" would read as ``Error``); a two-word
#: name only after an expected/observed word ("Expected Result = 15"), so "Failed at i=3"
#: reads as ``i``.
_PAIR = re.compile(
    rf"(?<![\w'.])(?P<key>(?:(?:{_EXPECTING}|{_OBSERVING})\s+)?[A-Za-z_][\w.\[\]]*)"
    rf"\s*==?\s*(?P<value>{_VALUE})", re.IGNORECASE)
#: ``(expected 7)``, ``expected: 7``, ``but got 5``: the forms without ``=``.
_PHRASE = re.compile(
    rf"\b(?P<kind>expected|expecting|exp|got|actual|observed|obs|received)\b\s*:?\s*"
    rf"(?:value\s+)?(?P<value>{_VALUE})", re.IGNORECASE)
_AT_TIME = re.compile(r"\b(?:at\s+)?time\s*(?:=|:)?\s*(?P<time>\d+(?:\.\d+)?)\s*"
                      r"(?P<unit>[munpf]?s\b)?", re.IGNORECASE)
#: "y: expected=1 actual=0": the name leading the line is the signal checked.
_LEADING_SIGNAL = re.compile(rf"^\W*(?P<name>[A-Za-z_][\w.\[\]]*)\s*:\s*(?:{_EXPECTING})\b",
                             re.IGNORECASE)
_NOT_SIGNALS = {"error", "errors", "fail", "failed", "failure", "mismatch", "check", "warning",
                "test", "info", "assertion"}
_INDEX_KEYS = {"i", "j", "idx", "index", "vector", "cycle", "test", "case", "step", "iteration"}
_TIME_KEYS = {"time", "t", "at_time", "sim_time"}
_EXPECTED_KEY = re.compile(rf"^(?:{_EXPECTING})(?:[_\s]+(?P<rest>\w+))?$|^(?P<head>\w+?)_"
                           rf"(?:{_EXPECTING})$", re.IGNORECASE)
_OBSERVED_KEY = re.compile(rf"^(?:{_OBSERVING})(?:[_\s]+(?P<rest>\w+))?$|^(?P<head>\w+?)_"
                           rf"(?:{_OBSERVING})$", re.IGNORECASE)
_TIMESCALE_DIRECTIVE = re.compile(r"`timescale\s+(1|10|100)\s*([munpf]?s)\s*/", re.IGNORECASE)
#: VerilogEval testbench signals that are bookkeeping, not inputs of the design.
_HARNESS_SIGNALS = {"tb_match", "tb_mismatch", "wavedrom_title", "wavedrom_enable",
                    "wavedrom_hide_after_time", "strobe", "stats1"}


def timescale_unit(source: str) -> str | None:
    """The time unit of the first `` `timescale`` in ``source`` (``"1ps"``, ``"10ns"``)."""
    found = _TIMESCALE_DIRECTIVE.search(source)
    return f"{found[1]}{found[2].lower()}" if found else None


def _with_unit(time: str, unit: str | None) -> str:
    if unit is None:
        return time
    return f"{time} {unit[1:]}" if unit.startswith("1") and unit[1:] in UNIT_FS else \
        f"{time} x {unit}"


def _verilog_eval(line: str, time_unit: str | None) -> Mismatch | None:
    found = _VERILOG_EVAL.search(line)
    if found is None:
        return None
    time = _with_unit(found["time"], time_unit) if found["time"] else None
    return Mismatch(signal=found["signal"], time=time, count=int(found["count"]),
                    raw=line.strip())


def _vector(line: str) -> Mismatch | None:
    found = _VECTOR.search(line)
    if found is None:
        return None
    inputs = {m["key"]: m["value"] for m in _PAIR.finditer(found["inputs"])}
    return Mismatch(signal=found["signal"], cycle=int(found["index"]), observed=found["observed"],
                    expected=found["expected"], inputs=inputs, raw=line.strip())


def _role(key: str) -> tuple[str, str | None]:
    """``("expected"|"observed"|"index"|"time"|"signal", named signal)`` of a printed name."""
    plain = re.sub(r"\s+", "_", key.strip()).lower()
    for role, pattern in (("expected", _EXPECTED_KEY), ("observed", _OBSERVED_KEY)):
        found = pattern.match(plain)
        if found:
            return role, found["rest"] or found["head"]
    if plain in _INDEX_KEYS:
        return "index", None
    if plain in _TIME_KEYS:
        return "time", None
    return "signal", None


def _generic(line: str, outputs: Collection[str]) -> Mismatch | None:
    expected = observed = signal = time = None
    expected_at: int | None = None
    cycle: int | None = None
    named: dict[str, tuple[int, str]] = {}  # plain signal name -> (end of its pair, value)
    taken: list[tuple[int, int]] = []
    for m in _PAIR.finditer(line):
        role, about = _role(m["key"])
        taken.append(m.span())
        if role == "expected" and expected is None:
            expected, expected_at, signal = m["value"], m.start(), signal or about
        elif role == "observed" and observed is None:
            observed, signal = m["value"], signal or about
        elif role == "index" and cycle is None and m["value"].isdigit():
            cycle = int(m["value"])
        elif role == "time" and time is None:
            time = m["value"]
        elif role == "signal":
            named.setdefault(m["key"].strip(), (m.end(), m["value"]))
    for m in _PHRASE.finditer(line):
        if any(a <= m.start() < b for a, b in taken):
            continue
        if m["kind"].lower().startswith("exp"):
            if expected is None:
                expected, expected_at = m["value"], m.start()
        elif observed is None:
            observed = m["value"]
    if expected is None and observed is None:
        return None
    if time is None and (at := _AT_TIME.search(line)) is not None:
        time = at["time"] + (f" {at['unit'].lower()}" if at["unit"] else "")
    if (signal is None and (lead := _LEADING_SIGNAL.match(line)) is not None
            and lead["name"].lower() not in _NOT_SIGNALS):
        signal = lead["name"]
    by_lower = {name.lower(): name for name in named}
    if signal is not None and signal.lower() in by_lower:
        signal = by_lower[signal.lower()]
        if observed is None:
            observed = named[signal][1]
    elif observed is None and expected_at is not None:
        # "out=101, expected=110", "ins=5 (expected 7)": the value printed just before the
        # expected one is the check (an output the caller names, when one is listed there).
        before = [name for name, (end, _) in named.items() if end <= expected_at]
        listed = [name for name in before if name in outputs]
        if before:
            signal = (listed or before)[-1]
            observed = named[signal][1]
    inputs = {name: value for name, (_, value) in named.items()
              if name != signal and name not in outputs}
    return Mismatch(signal=signal, time=time, cycle=cycle, expected=expected, observed=observed,
                    inputs=inputs, raw=line.strip())


def parse_mismatch(line: str, *, time_unit: str | None = None,
                   outputs: Collection[str] = ()) -> Mismatch | None:
    """One failing check from one testbench line, or None when the line names none.

    ``time_unit`` is the testbench's `` `timescale`` unit (VerilogEval prints ``$time`` bare);
    ``outputs`` are the design's output names, which pick the checked signal among the values
    a line lists.
    """
    return _verilog_eval(line, time_unit) or _vector(line) or _generic(line, outputs)


def failing_checks(lines: Iterable[str], *, time_unit: str | None = None,
                   outputs: Collection[str] = (), limit: int = MAX_MISMATCHES,
                   ) -> tuple[Mismatch, ...]:
    """The first ``limit`` failing checks among the testbench's failing lines."""
    found: list[Mismatch] = []
    for line in lines:
        check = parse_mismatch(line, time_unit=time_unit, outputs=outputs)
        if check is not None:
            found.append(check)
            if len(found) >= limit:
                break
    return tuple(found)


def fill_from_dump(checks: Iterable[Mismatch], dump: str, *, time_unit: str | None,
                   scope: str | None) -> tuple[Mismatch, ...]:
    """Expected, observed and input values from a dump, for checks that name a signal and a
    time but no values (VerilogEval's): ``<signal>_ref`` is expected, ``<signal>_dut`` observed,
    the other signals of the testbench's scope the inputs."""
    unit = unit_fs(time_unit) if time_unit else None
    out: list[Mismatch] = []
    snapshots: dict[int, Snapshot] = {}
    for check in checks:
        stamp = check.time.split()[0] if check.time else ""
        if (unit is None or check.signal is None or not stamp.isdigit()
                or check.expected is not None or check.observed is not None):
            out.append(check)
            continue
        at = int(stamp) * unit
        if at not in snapshots:
            snapshots[at] = snapshot(dump, at, scope)
        values = snapshots[at].values
        ref, dut = values.get(f"{check.signal}_ref"), values.get(f"{check.signal}_dut")
        if ref is None and dut is None:
            out.append(check)
            continue
        inputs = {name: value for name, value in sorted(values.items())
                  if not name.endswith(("_ref", "_dut")) and name not in _HARNESS_SIGNALS}
        out.append(check.model_copy(update={"expected": ref, "observed": dut,
                                            "inputs": inputs}))
    return tuple(out)
