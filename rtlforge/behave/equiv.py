"""Is a mutant equivalent to its golden design? Yosys decides, through the sandbox, or says it
cannot.

A mutation study must not count an equivalent mutant as a bug a testbench missed, and must not
call a mutant equivalent on a hunch: every verdict here is a proof or a counterexample, and
anything else (timeout, unsupported construct, no answer within the bound) is ``unknown``.

Both designs are read, ``proc``-ed and flattened in one Yosys run, the top of each renamed
(``rtlforge_gold``/``rtlforge_gate``; submodules of the same name never meet, each design is
stashed before the other is read), and their state elements counted:

- no state: combinational. ``miter -equiv`` and ``sat -prove trigger 0`` over all inputs (x on
  a golden output is a don't-care; inputs are defined): no model is a proof, a model is a
  counterexample.
- state: sequential, from the all-zero initial state with every input free (reset included, so
  every state after a reset is covered). ``sat -tempinduct`` up to ``depth`` steps: a failing
  base case is a counterexample trace; a proven induction step is a proof. When neither comes
  within the bound, ``equiv_make`` + ``equiv_simple`` + ``equiv_induct`` (which pairs state by
  name and so often proves what plain induction cannot) gets a try; if ``equiv_status
  -assert`` still fails, the answer is unknown. Asynchronous resets become synchronous
  (``async2sync``); a design with several clocks or both clock edges is modelled with
  ``clk2fflogic`` (each step is then a half clock period, so the bound is doubled).

A counterexample may also come from simulation: both designs run under Icarus on the same
seeded random inputs (resets asserted for two cycles, then rarely; clocks toggled), and the
first cycle where a defined golden output bit differs from the mutant's is a concrete witness.
It runs first for sequential designs (cheap, and it reaches states thousands of cycles deep
where the bounded search would give up) and wherever Yosys gives no answer (Yosys 0.23 refuses
some mutated asynchronous resets that Icarus simulates). Its silence proves nothing: only Yosys
ever says ``equivalent``.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Sequence
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from rtlforge.core.models import SourceFile
from rtlforge.eda.stages import bad_identifier, clip_log, compiled_sources
from rtlforge.eda.tools import ICARUS, VVP, YOSYS
from rtlforge.sandbox import runfiles
from rtlforge.sandbox.runner import SandboxRunner, ToolRun

__all__ = ["EquivResult", "Equivalence", "check_equivalence"]

GOLD = "rtlforge_gold"
GATE = "rtlforge_gate"
_LOG = ".rtlforge-equiv.log"
_READ_LIMIT = 64 * 1024 * 1024  # a log or trace read back from the run directory
_PREPARED = ".rtlforge-equiv.il"
#: Yosys cell types that hold state (after ``memory``, memories are flip-flops too).
_STATE = "t:$*dff* t:$*dlatch* t:$sr t:$ff t:$_*DFF* t:$mem*"
_FACTS = {
    "state": _STATE,
    "pos": "t:$*dff* r:CLK_POLARITY=1'1 %i",
    "neg": "t:$*dff* r:CLK_POLARITY=1'0 %i",
    "gold_clocks": f"{GOLD}/t:$*dff* %x:+[CLK] {GOLD}/t:$*dff* %d",
    "gate_clocks": f"{GATE}/t:$*dff* %x:+[CLK] {GATE}/t:$*dff* %d",
}
_COUNT = re.compile(r"(\d+)\s+objects?\.")
_BASE_FAIL = re.compile(r"model found for base case: FAIL")
_INDUCTION_OK = re.compile(r"Induction step proven: SUCCESS")
_MAX_STEPS = re.compile(r"Reached maximum number of time steps")
_TRYING = re.compile(r"Trying induction with length (\d+)")
_COMB_OK = re.compile(r"SAT proof finished - no model found: SUCCESS")
_COMB_FAIL = re.compile(r"SAT proof finished - model found: FAIL")
_ERROR = re.compile(r"^ERROR: .*$", re.MULTILINE)
#: Inputs driven as clocks by the simulation refuter (1-bit, named like a clock).
_CLOCK = re.compile(r"(^|_)(clk|clock)(_|$)|^clk|clk$", re.IGNORECASE)
_RESET = re.compile(r"rst|reset", re.IGNORECASE)
_ACTIVE_LOW = re.compile(r"(_n|n|_b|_l)$|^n", re.IGNORECASE)
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TB = "rtlforge_equiv_tb"
_TB_FILE = "rtlforge_equiv_tb.v"
_STIM_FILE = "rtlforge_equiv_stim.hex"
_TRACE_FILE = ".rtlforge-equiv-trace.txt"
#: Cycles the refuter simulates; resets are rare after the first two so deep states are reached.
SIM_CYCLES = 4096
_RESET_RATE = 1 / 256
_SEGMENT = 128
_CHANGE_RATES = (1.0, 0.5, 1 / 8, 1 / 32)


def _ports(files: Sequence[SourceFile], top: str) -> list[tuple[str, str, int]] | None:
    """(name, direction, width) of ``top``'s ports, elaborated by slang; None if it cannot.

    slang, not Yosys: Yosys 0.23 refuses some goldens outright (``@(posedge clk or rst)``)
    that Icarus simulates. The text is a trusted golden (slang runs in this process).
    """
    from pyslang import ast, syntax  # lazy: heavy, and only the refuter needs it

    compilation = ast.Compilation()
    for f in files:
        if f.name.lower().endswith((".v", ".sv")):
            compilation.addSyntaxTree(syntax.SyntaxTree.fromText(f.content))
    names = {"In": "input", "Out": "output", "InOut": "inout"}
    for inst in compilation.getRoot().topInstances:
        if inst.name == top:
            return [(str(p.name), names.get(p.direction.name, p.direction.name),
                     int(p.type.bitWidth)) for p in inst.body.portList]
    return None


def _stimulus(data: Sequence[tuple[str, int]], cycles: int, seed: str) -> list[int]:
    """One packed input vector per cycle (seeded, so the golden and the mutant see the same
    inputs). Resets are active for two cycles, then rarely. Other inputs change at a rate
    drawn per segment of the run and per input, from every cycle to about once in 32 cycles:
    a start or enable held for many cycles is what multi-cycle designs need to finish."""
    rng = random.Random(seed)
    values = {name: 0 for name, _ in data}
    out = []
    rates: dict[str, float] = {}
    for cycle in range(cycles):
        if cycle % _SEGMENT == 0:
            rates = {name: rng.choice(_CHANGE_RATES) for name, _ in data}
        value = 0
        for name, width in data:
            if _RESET.search(name) and width == 1:
                active = cycle < 2 or rng.random() < _RESET_RATE
                values[name] = int(active) ^ int(bool(_ACTIVE_LOW.search(name)))
            elif cycle == 0 or rng.random() < rates[name]:
                values[name] = rng.getrandbits(width)
            value = (value << width) | values[name]
        out.append(value)
    return out


def _testbench(top: str, ports: Sequence[tuple[str, str, int]], cycles: int,
               width: int) -> str:
    clocks = [n for n, d, w in ports if d == "input" and w == 1 and _CLOCK.search(n)]
    data = [n for n, d, _ in ports if d == "input" and n not in clocks]
    outputs = [n for n, d, _ in ports if d == "output"]
    decl = [f"  reg {n} = 1'b0;" for n in clocks]
    decl += [f"  reg [{w - 1}:0] {n};" for n, d, w in ports if d == "input" and n in data]
    decl += [f"  wire [{w - 1}:0] {n};" for n, d, w in ports if d == "output"]
    conns = ", ".join(f".{n}({n})" for n, _, _ in ports)
    lines = ["`timescale 1ns/1ns", f"module {_TB};", *decl,
             "  integer rtlforge_i, rtlforge_fd;"]
    if data:
        lines.append(f"  reg [{width - 1}:0] rtlforge_stim [0:{cycles - 1}];")
    lines += [f"  {top} rtlforge_dut ({conns});", "  initial begin"]
    if data:
        lines.append(f'    $readmemh("{_STIM_FILE}", rtlforge_stim);')
    fmt = " ".join("%b" for _ in outputs)
    lines += [f'    rtlforge_fd = $fopen("{_TRACE_FILE}", "w");',
              f"    for (rtlforge_i = 0; rtlforge_i < {cycles}; rtlforge_i = rtlforge_i + 1) "
              "begin"]
    if data:
        lines.append(f"      {{{', '.join(data)}}} = rtlforge_stim[rtlforge_i];")
    lines.append(f'      #4 $fdisplay(rtlforge_fd, "{fmt}", {", ".join(outputs)});')
    lines.append("      #1 " + (" ".join(f"{c} = 1'b1;" for c in clocks) or ";"))
    lines.append("      #5 " + (" ".join(f"{c} = 1'b0;" for c in clocks) or ";"))
    lines += ["    end", "    $fclose(rtlforge_fd);", "    $finish;", "  end", "endmodule", ""]
    return "\n".join(lines)


def _first_difference(gold: Sequence[str], gate: Sequence[str]) -> int | None:
    """The first cycle where a defined (0/1) golden output bit is not what the mutant shows."""
    for cycle, (g, m) in enumerate(zip(gold, gate, strict=False)):
        if len(g) != len(m):
            return cycle
        if any(a in "01" and a != b for a, b in zip(g, m, strict=True)):
            return cycle
    return None


class Equivalence(StrEnum):
    EQUIVALENT = "equivalent"
    NON_EQUIVALENT = "non_equivalent"
    UNKNOWN = "unknown"


class EquivResult(BaseModel):
    """The verdict, how it was reached and why (for ``unknown``: what stopped it)."""

    model_config = ConfigDict(frozen=True)

    verdict: Equivalence
    method: str | None = None  # "sat", "tempinduct", "equiv_induct"; None when unknown
    sequential: bool | None = None  # None when the designs could not even be read
    steps: int | None = None  # induction length or counterexample depth (sequential)
    reason: str = ""
    seconds: float = 0.0
    log: str = ""  # clipped log of the last Yosys run


def _named(files: Sequence[SourceFile], prefix: str) -> list[SourceFile]:
    return [SourceFile(name=f"{prefix}{f.name}", content=f.content) for f in files]


def _load(sources: Sequence[str], top: str, as_name: str) -> list[str]:
    return [f"read_verilog -sv {' '.join(sources)}", f"hierarchy -check -top {top}",
            "proc", "flatten", "memory", "opt_clean", f"rename {top} {as_name}",
            f"hierarchy -top {as_name}", f"design -stash {as_name}"]


def _miter() -> list[str]:
    return [f"miter -equiv -flatten -make_outputs -ignore_gold_x {GOLD} {GATE} rtlforge_miter",
            "hierarchy -top rtlforge_miter"]


def check_equivalence(
    golden: Sequence[SourceFile], mutant: Sequence[SourceFile], top: str, *,
    runner: SandboxRunner, timeout: float = 60.0, depth: int = 32, simulate: bool = True,
    sim_timeout: float = 10.0,
    yosys: str = "yosys", iverilog: str = "iverilog", vvp: str = "vvp",
) -> EquivResult:
    """Whether ``mutant`` behaves as ``golden`` (same top module name and ports) at every output.

    ``timeout`` bounds each tool run; ``depth`` is the number of clock steps the sequential
    search goes. ``simulate`` lets a seeded random Icarus run of both designs look for a
    counterexample first (sequential designs, or where Yosys gives no answer): a difference it
    shows is a fact, its silence proves nothing; each simulation gets ``sim_timeout`` seconds
    (a mutant that loops forever is cut there and what it printed is still compared). Never
    raises for what the designs do; a missing tool or a sandbox failure raises as the runner
    does (that is not a property of the mutant).
    """
    start = time.perf_counter()
    bad = bad_identifier(top, "top module", stage="equiv")
    if bad is not None:
        return EquivResult(verdict=Equivalence.UNKNOWN, reason=bad.message)
    gold_files, gate_files = _named(golden, "gold__"), _named(mutant, "gate__")

    def result(verdict: Equivalence, reason: str, run: ToolRun | None, log: str = "",
               **kw: object) -> EquivResult:
        return EquivResult(verdict=verdict, reason=reason, seconds=time.perf_counter() - start,
                           log=clip_log(log or (run.output if run else "")), **kw)  # type: ignore[arg-type]

    with runner.workspace(prefix="rtlforge-equiv-") as workdir:
        runner.put(workdir, [*gold_files, *gate_files], role="design")

        def yosys_run(commands: Sequence[str]) -> tuple[ToolRun, str]:
            (workdir / _LOG).unlink(missing_ok=True)
            run = runner.run([yosys, "-q", "-l", _LOG, "-p", "; ".join(commands)],
                             cwd=workdir, timeout=timeout, tool=YOSYS)
            text = runfiles.read_text(workdir, _LOG, _READ_LIMIT, truncate=True) or ""
            return run, text if len(text) >= len(run.output) else run.output

        def refute() -> EquivResult | None:
            """A counterexample from simulating both designs on the same random inputs."""
            ports = _ports(golden, top) if simulate else None
            if not ports or not any(d == "output" for _, d, _ in ports) or any(
                    d not in ("input", "output") or not _PLAIN.match(n) or w < 1
                    for n, d, w in ports):
                return None
            data = [(n, w) for n, d, w in ports
                    if d == "input" and not (w == 1 and _CLOCK.search(n))]
            width = sum(w for _, w in data)
            stimulus = _stimulus(data, SIM_CYCLES, seed=top)
            digits = max(1, -(-width // 4))
            runner.put(workdir, [
                SourceFile(name=_TB_FILE, content=_testbench(top, ports, SIM_CYCLES, width)),
                SourceFile(name=_STIM_FILE,
                           content="".join(f"{v:0{digits}x}\n" for v in stimulus)),
            ], role="trusted")
            traces: list[list[str]] = []
            for name, files in (("gold", gold_files), ("gate", gate_files)):
                image = f".rtlforge-equiv-{name}.vvp"
                run = runner.run([iverilog, "-g2012", "-s", _TB, "-o", image, _TB_FILE,
                                  *compiled_sources(f.name for f in files)],
                                 cwd=workdir, timeout=timeout, tool=ICARUS)
                if not run.ok:
                    return None
                trace = workdir / _TRACE_FILE
                trace.unlink(missing_ok=True)
                run = runner.run([vvp, "-n", image], cwd=workdir,
                                 timeout=min(timeout, sim_timeout), tool=VVP)
                lines = (runfiles.read_text(workdir, _TRACE_FILE, _READ_LIMIT) or "").splitlines()
                if name == "gold" and (not run.ok or len(lines) != SIM_CYCLES):
                    return None
                traces.append(lines)
            cycle = _first_difference(*traces)
            if cycle is None:
                return None
            return result(Equivalence.NON_EQUIVALENT,
                          f"simulation: an output differs at cycle {cycle} of a seeded random "
                          "run (resets, then random inputs)", None, method="simulation",
                          sequential=sequential, steps=cycle)

        def failure(run: ToolRun, log: str, what: str) -> EquivResult:
            found = refute()
            if found is not None:
                return found
            if run.timed_out:
                return result(Equivalence.UNKNOWN, f"{what}: yosys ran past {timeout:g} s", run,
                              log, sequential=sequential)
            errors = _ERROR.findall(log) or [" | ".join(log.strip().splitlines()[-2:])]
            return result(Equivalence.UNKNOWN, f"{what}: yosys failed: {errors[0][:300]}", run,
                          log, sequential=sequential)

        sequential: bool | None = None
        facts = [f"tee -q -o .fact-{name}.txt select -count {sel}"
                 for name, sel in _FACTS.items()]
        prep = [*_load(compiled_sources(f.name for f in gold_files), top, GOLD),
                *_load(compiled_sources(f.name for f in gate_files), top, GATE),
                f"design -copy-from {GOLD} -as {GOLD} {GOLD}",
                f"design -copy-from {GATE} -as {GATE} {GATE}",
                *facts, "select -clear", f"write_rtlil {_PREPARED}"]
        run, log = yosys_run(prep)
        if not run.ok:
            return failure(run, log, "reading the designs")
        counts: dict[str, int] = {}
        for name in _FACTS:
            fact = runfiles.read_text(workdir, f".fact-{name}.txt", _READ_LIMIT)
            found = _COUNT.search(fact) if fact is not None else None
            if found is None:
                return result(Equivalence.UNKNOWN, f"yosys printed no {name} count", run, log)
            counts[name] = int(found.group(1))
        sequential = counts["state"] > 0

        if not sequential:
            run, log = yosys_run([f"read_rtlil {_PREPARED}", *_miter(),
                                  "sat -prove trigger 0 -enable_undef -set-def-inputs "
                                  "rtlforge_miter"])
            if run.ok and _COMB_OK.search(log):
                return result(Equivalence.EQUIVALENT, "SAT: no input makes an output differ",
                              run, log, method="sat", sequential=False)
            if run.ok and _COMB_FAIL.search(log):
                return result(Equivalence.NON_EQUIVALENT, "SAT: an input makes an output differ",
                              run, log, method="sat", sequential=False)
            return failure(run, log, "combinational SAT")

        simulated = refute()
        if simulated is not None:
            return simulated
        mixed = (counts["pos"] and counts["neg"]) or max(counts["gold_clocks"],
                                                         counts["gate_clocks"]) > 1
        clocking = "clk2fflogic" if mixed else "async2sync"
        steps = 2 * depth if mixed else depth
        run, log = yosys_run([f"read_rtlil {_PREPARED}", clocking, *_miter(),
                              f"sat -tempinduct -prove trigger 0 -set-init-zero -enable_undef "
                              f"-set-def-inputs -maxsteps {steps} rtlforge_miter"])
        tried = [int(n) for n in _TRYING.findall(log)]
        length = tried[-1] if tried else None
        if run.ok and _BASE_FAIL.search(log):
            return result(Equivalence.NON_EQUIVALENT,
                          f"counterexample: outputs differ {length} steps after the all-zero "
                          f"state ({clocking})", run, log, method="tempinduct",
                          sequential=True, steps=length)
        if run.ok and _INDUCTION_OK.search(log):
            return result(Equivalence.EQUIVALENT,
                          f"temporal induction proved equal outputs (length {length}, "
                          f"{clocking})", run, log, method="tempinduct", sequential=True,
                          steps=length)
        if not (run.ok and _MAX_STEPS.search(log)) and not run.timed_out:
            return result(Equivalence.UNKNOWN, "temporal induction: yosys failed: "
                          + (_ERROR.findall(log) or ["no verdict"])[0][:300], run, log,
                          sequential=True)
        bounded = "timed out" if run.timed_out else f"no proof or counterexample in {steps} steps"

        # -undef: an x the mutant makes must not be read as whatever value suits the proof
        run, log = yosys_run([f"read_rtlil {_PREPARED}", clocking,
                              f"equiv_make {GOLD} {GATE} rtlforge_equiv",
                              "hierarchy -top rtlforge_equiv", f"equiv_simple -undef -seq {depth}",
                              f"equiv_induct -undef -seq {depth}", "equiv_status -assert"])
        if run.ok:
            return result(Equivalence.EQUIVALENT,
                          f"equiv_induct proved every matched signal equal ({bounded} before)",
                          run, log, method="equiv_induct", sequential=True)
        if run.timed_out:
            return result(Equivalence.UNKNOWN, f"{bounded}; equiv_induct ran past {timeout:g} s",
                          run, log, sequential=True)
        return result(Equivalence.UNKNOWN, f"{bounded}; equiv_induct left cells unproven", run,
                      log, sequential=True)
