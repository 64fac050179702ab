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
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from rtlforge.core.models import SourceFile
from rtlforge.eda.stages import bad_identifier, clip_log, compiled_sources
from rtlforge.eda.tools import YOSYS
from rtlforge.sandbox.runner import SandboxRunner, ToolRun

__all__ = ["EquivResult", "Equivalence", "check_equivalence"]

GOLD = "rtlforge_gold"
GATE = "rtlforge_gate"
_LOG = ".rtlforge-equiv.log"
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
    runner: SandboxRunner, timeout: float = 60.0, depth: int = 32, yosys: str = "yosys",
) -> EquivResult:
    """Whether ``mutant`` behaves as ``golden`` (same top module name and ports) at every output.

    ``timeout`` bounds each Yosys run (three at most); ``depth`` is the number of clock steps
    the sequential search goes. Never raises for what the designs do; a missing tool or a
    sandbox failure raises as the runner does (that is not a property of the mutant).
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
            path = workdir / _LOG
            text = path.read_text(errors="replace") if path.is_file() else ""
            return run, text if len(text) >= len(run.output) else run.output

        def failure(run: ToolRun, log: str, what: str) -> EquivResult:
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
            path = workdir / f".fact-{name}.txt"
            found = _COUNT.search(path.read_text()) if path.is_file() else None
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
            return failure(run, log, "temporal induction")
        bounded = "timed out" if run.timed_out else f"no proof or counterexample in {steps} steps"

        run, log = yosys_run([f"read_rtlil {_PREPARED}", clocking,
                              f"equiv_make {GOLD} {GATE} rtlforge_equiv",
                              "hierarchy -top rtlforge_equiv", f"equiv_simple -seq {depth}",
                              f"equiv_induct -seq {depth}", "equiv_status -assert"])
        if run.ok:
            return result(Equivalence.EQUIVALENT,
                          f"equiv_induct proved every matched signal equal ({bounded} before)",
                          run, log, method="equiv_induct", sequential=True)
        if run.timed_out:
            return result(Equivalence.UNKNOWN, f"{bounded}; equiv_induct ran past {timeout:g} s",
                          run, log, sequential=True)
        return result(Equivalence.UNKNOWN, f"{bounded}; equiv_induct left cells unproven", run,
                      log, sequential=True)
