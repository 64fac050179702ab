"""``yosys-sta``: the mapped netlist timed and its power estimated by OpenSTA, kept alive per
worker thread (a big liberty loads slowly, a small netlist times in milliseconds)."""

from __future__ import annotations

import itertools
import math
import os
import re
import selectors
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rtlforge.core.interfaces import PPAResult
from rtlforge.core.models import Candidate, SourceFile, ToolSpec
from rtlforge.eda.liberty import (
    LibertyError,
)
from rtlforge.eda.tools import STA, YOSYS, YOSYS_ABC
from rtlforge.plugins.estimators.ppa.errors import PPAError, PPATimeoutError
from rtlforge.plugins.estimators.ppa.liberty import _liberty_label
from rtlforge.plugins.estimators.ppa.synthesis import _check_identifier, _finite_positive, _Synth
from rtlforge.plugins.estimators.ppa.yosys import _YosysFlow
from rtlforge.sandbox.runner import SandboxRunner, find_tool

if TYPE_CHECKING:
    import subprocess

#: Ports taken as the clock when the caller names none (compared case-insensitively).
CLOCK_NAMES = ("clk", "clock", "clk_i", "i_clk", "clk_in", "aclk")
#: When none of those is an input of a sequential design: 1-bit inputs named like a clock of
#: one of several domains (wclk, rclk, clk_a, sys_clk, clk50) and not like a clock *enable*.
_CLOCK_LIKE = re.compile(r"(?:[a-z0-9]{1,4}_?)?(?:clk|clock)(?:_?[a-z0-9]{1,4})?|clk|clock")
_NOT_A_CLOCK = re.compile(r"(?:en|ena|enable|sel|gate|cnt|count|out)$")
_STA_NETLIST = "rtlforge_sta_netlist.v"
_STA_SCRIPT = "rtlforge_sta.tcl"
_VIRTUAL_CLOCK = "rtlforge_vclk"



# ---------------------------------------------------------------------------------- OpenSTA

_ARRIVAL = re.compile(r"^\s*(-?[0-9.eE+]+)\s+data arrival time", re.M)
_SLACK = re.compile(r"^\s*(-?[0-9.eE+]+)\s+slack \((MET|VIOLATED)\)", re.M)
_POWER = re.compile(r"^Total\s+([0-9.eE+-]+)\s+([0-9.eE+-]+)\s+([0-9.eE+-]+)\s+([0-9.eE+-]+)",
                    re.M)
#: Printed by the catch wrapper; the marker is built in Tcl so an echoed command never matches.
_TCL_ERROR = re.compile(r"^RTLFORGE-ERROR: (.*)$", re.M)


def _catch(body: str) -> str:
    """Run ``body`` so a Tcl error prints one ``RTLFORGE-ERROR:`` line instead of aborting."""
    return ("if {[catch {" + body + "} rtlforge_err]} "
            '{ puts "RTLFORGE[string toupper -error]: [string map {\\n { }} $rtlforge_err]" }')


class _StaProcess:
    """One long-lived sandboxed ``sta`` with the library loaded; used by one thread at a time."""

    _ids = itertools.count()

    def __init__(self, runner: SandboxRunner, liberty: Path, *, timeout: float,
                 max_queries: int) -> None:
        self.runner = runner
        self.liberty = liberty
        self.timeout = timeout
        self.max_queries = max_queries
        self.queries = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._workspace = runner.workspace(prefix="rtlforge-sta-")
        self.workdir = self._workspace.__enter__()

    def _start(self) -> None:
        # cpu_s caps the lifetime; recycling after max_queries keeps us well inside it.
        limits = self.runner.limits.model_copy(update={"timeout_s": self.timeout,
                                                       "cpu_s": 3600})
        self.proc = self.runner.spawn(["sta", "-no_splash", "-no_init"], self.workdir,
                                      limits=limits, ro_paths=[self.liberty], tool=STA)
        self.queries = 0
        out = self._exchange(f"read_liberty {{{self.liberty}}}", timeout=max(self.timeout, 120))
        error = _TCL_ERROR.search(out)
        if error:
            self.stop()  # the library's fault, not any design's: every query would fail
            raise LibertyError(f"sta cannot read {self.liberty.name}: {error.group(1)}")

    def stop(self) -> None:
        if self.proc is not None:
            SandboxRunner.kill(self.proc)
            self.proc = None

    def close(self) -> None:
        self.stop()
        self._workspace.__exit__(None, None, None)

    def _exchange(self, body: str, *, timeout: float) -> str:
        assert self.proc is not None and self.proc.stdin is not None
        assert self.proc.stdout is not None
        tag = next(self._ids)
        sentinel = f"@@RTLFORGE-{tag}@@".encode()
        payload = (_catch(body) + f'\nputs "@@RTLFORGE-[expr {{{tag}}}]@@"\n'
                   "flush stdout\n")
        try:
            self.proc.stdin.write(payload.encode())
            self.proc.stdin.flush()
        except OSError as exc:
            self.stop()
            raise _StaDied(f"sta is gone: {exc}") from exc
        deadline = time.monotonic() + timeout
        buf = bytearray()
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while sentinel not in buf:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.stop()
                    raise PPATimeoutError(f"sta ran past {timeout:g} s", stage="sta",
                                          log=buf.decode(errors="replace"))
                if not sel.select(timeout=min(remaining, 1.0)):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    self.stop()
                    raise _StaDied(buf.decode(errors="replace"))
                buf += chunk
                if len(buf) > self.runner.limits.output_bytes * 8:
                    self.stop()
                    raise PPAError("sta output flood", stage="sta")
        return buf[: buf.index(sentinel)].decode(errors="replace")

    def query(self, body: str, netlist: str) -> str:
        """Read ``netlist`` (text) and run ``body`` on it, both from files in sta's own
        workspace (sta reads stdin a line at a time; its jail sees nothing else)."""
        self.runner.put(self.workdir, [SourceFile(name=_STA_NETLIST, content=netlist)],
                        role="netlist")
        self.runner.put(self.workdir, [SourceFile(name=_STA_SCRIPT, content=body + "\n")],
                        role="trusted")
        return self._query(f"source {{{self.workdir / _STA_SCRIPT}}}")

    def _query(self, body: str) -> str:
        if self.proc is not None and self.queries >= self.max_queries:
            self.stop()  # old netlists accumulate in sta's memory: start afresh now and then
        for attempt in (0, 1):
            try:
                if self.proc is None or self.proc.poll() is not None:
                    self.stop()
                    self._start()
                self.queries += 1
                return self._exchange(body, timeout=self.timeout)
            except _StaDied as exc:
                if attempt:  # died twice on the same design: blame the design
                    raise PPAError("sta crashed on this netlist", stage="sta",
                                   log=str(exc)) from None
        raise AssertionError("unreachable")


class _StaDied(Exception):
    """The persistent sta exited mid-query (crash or CPU limit); retried once on a fresh one."""




class YosysStaPPA(_YosysFlow):
    """Full flow: yosys mapping + ``stat -liberty`` area, OpenSTA delay and power.

    ``delay_ns`` is the worst data arrival time: input-to-output for combinational designs (under
    a virtual clock), register-to-register or I/O for sequential ones. That is what bounds the
    clock period, not the latency of an operation: pass ``cycles=N`` to :meth:`estimate` and
    ``details["latency_ns"]`` gives ``N * delay_ns``. Power is OpenSTA's ``report_power`` under
    one global ``activity`` (toggles per clock on every net) at ``period_ns``.
    """

    name: ClassVar[str] = "yosys-sta"
    tools: ClassVar[tuple[ToolSpec, ...]] = (YOSYS, YOSYS_ABC, STA)

    def __init__(self, *, liberty: str | Path | None = None,
                 dont_use: Sequence[str] | None = None, activity: float = 0.1,
                 period_ns: float = 10.0, input_transition_ns: float = 0.05,
                 output_load_pf: float = 0.005, persistent: bool = True,
                 timeout: float = 300.0, sta_timeout: float = 60.0, max_queries: int = 500,
                 flatten: bool = True, yosys: str = "auto", max_jobs: int = 2000) -> None:
        """Args:
            activity: toggles per clock period on every net, for ``report_power`` (0 to 2].
            period_ns: the clock period (or the virtual clock's, for combinational designs).
            input_transition_ns: the slew set on every input.
            output_load_pf: the load set on every output.
            persistent: keep one OpenSTA process per thread between designs (False starts one
                per design).
            sta_timeout: wall-clock seconds for one OpenSTA query.
            max_queries: designs one persistent OpenSTA answers before it is restarted.

        The other options are :class:`_YosysFlow`'s (yosys-abc's).
        """
        super().__init__(liberty=liberty, dont_use=dont_use, timeout=timeout, flatten=flatten,
                         yosys=yosys, max_jobs=max_jobs)
        if not 0 < activity <= 2:
            raise ValueError(f"activity is toggles per clock period, in (0, 2]: {activity!r}")
        for key, value in (("period_ns", period_ns), ("input_transition_ns", input_transition_ns),
                           ("output_load_pf", output_load_pf)):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{key} must be a positive number, not {value!r}")
        self.activity = activity
        self.period_ns = period_ns
        self.input_transition_ns = input_transition_ns
        self.output_load_pf = output_load_pf
        self.persistent = persistent
        self.sta_timeout = sta_timeout
        self.max_queries = max_queries

    def __enter__(self) -> YosysStaPPA:
        return self

    def cache_key(self) -> dict[str, Any]:
        return {**super().cache_key(), "activity": self.activity, "period_ns": self.period_ns,
                "input_transition_ns": self.input_transition_ns,
                "output_load_pf": self.output_load_pf}

    # ------------------------------------------------------------------ constraints

    def _pick_clock(self, synth: _Synth, clock: str | None) -> str | None:
        """The clock port(s), comma-separated: ``clock`` (a task's hint or the caller's), else
        the first 1-bit input with a usual clock name, else, for a sequential design only,
        every 1-bit input whose name reads as a clock (``wclk``, ``clk_a``: designs with
        several clock domains). None: combinational, timed under a virtual clock."""
        names = {name: width for name, width in synth.inputs}
        if clock is not None:
            picked = [c.strip() for c in clock.split(",") if c.strip()]
            if not picked:
                raise ValueError(f"clock names no port: {clock!r}")
            for name in picked:
                _check_identifier(name, "clock")
                if name not in names:
                    raise PPAError(f"clock port {name!r} is not an input of the design "
                                   f"(inputs: {sorted(names)})", stage="sta")
            return ",".join(dict.fromkeys(picked))
        for name, width in synth.inputs:
            if width == 1 and name.lower() in CLOCK_NAMES:
                return name
        if not synth.flops:
            return None
        found = [name for name, width in synth.inputs
                 if width == 1 and _CLOCK_LIKE.fullmatch(name.lower())
                 and not _NOT_A_CLOCK.search(name.lower())]
        if found:
            return ",".join(found)
        raise PPAError("sequential design with no recognisable clock port (looked for "
                       f"{', '.join(CLOCK_NAMES)} and names like wclk or clk_a among its 1-bit "
                       f"inputs {sorted(n for n, w in synth.inputs if w == 1)}); name it with "
                       "--clock NAME (several: --clock A,B) or the task's metadata "
                       "ppa_clock", stage="sta")

    def sta_commands(self, netlist: Path, top: str, clock: str | None, period_ns: float) -> str:
        """The Tcl that times and powers one linked netlist (library units throughout)."""
        units = self.liberty[1].units
        period = units.to_lib_time(period_ns)
        clocks = clock.split(",") if clock is not None else []
        if not clocks:
            clk, inputs = _VIRTUAL_CLOCK, "[all_inputs]"
            make_clock = f"create_clock -name {clk} -period {period:g}"
        else:
            ports = " ".join(clocks)
            clk, inputs = clocks[0], f"[delete_from_list [all_inputs] [get_ports {{{ports}}}]]"
            make_clock = "; ".join(f"create_clock -name {c} -period {period:g} "
                                   f"[get_ports {{{c}}}]" for c in clocks)
        # Several clocks: unrelated domains (cross-domain paths go through synchronisers and are
        # not timed); every input and output is constrained against each clock, so the paths
        # inside each domain are.
        extra = clocks[1:]
        groups = (f"set_clock_groups -asynchronous {' '.join(f'-group {{{c}}}' for c in clocks)}"
                  if extra else "")
        more_in = "".join(f"; set_input_delay 0 -clock {c} -add_delay $rtlforge_in"
                          for c in extra)
        more_out = "".join(f"; set_output_delay 0 -clock {c} -add_delay $rtlforge_out"
                           for c in extra)
        return "\n".join(line for line in (
            f"read_verilog {{{netlist}}}",
            f"link_design {top}",
            make_clock,
            groups,
            f"set rtlforge_in {inputs}",
            "if {[llength $rtlforge_in]} { set_input_delay 0 -clock "
            f"{clk} $rtlforge_in{more_in}; set_input_transition "
            f"{units.to_lib_time(self.input_transition_ns):g} $rtlforge_in }}",
            "set rtlforge_out [all_outputs]",
            f"if {{[llength $rtlforge_out]}} {{ set_output_delay 0 -clock {clk} $rtlforge_out"
            f"{more_out}; set_load {units.to_lib_cap(self.output_load_pf):g} $rtlforge_out }}",
            "report_checks -path_delay max -digits 6",
            f"set_power_activity -global -activity {self.activity:g}",
            "report_power -digits 6",
        ) if line)

    # ------------------------------------------------------------------ running sta

    def _session(self, runner: SandboxRunner) -> _StaProcess:
        proc: _StaProcess | None = getattr(self._local, "proc", None)
        if proc is None or proc.runner is not runner:
            proc = _StaProcess(runner, self.liberty[0], timeout=self.sta_timeout,
                               max_queries=self.max_queries)
            with self._procs_lock:
                self._procs.append(proc)
            self._local.proc = proc
        return proc

    _unique = itertools.count()

    def _run_sta(self, synth: _Synth, top: str, clock: str | None, period_ns: float,
                 runner: SandboxRunner, workdir: Path) -> str:
        lib = self.liberty[0]
        if self.persistent:
            # A fresh module name per query: sta keeps every netlist it has read.
            unique = f"{top}__rtlforge{next(self._unique)}"
            text = re.sub(rf"^module\s+{re.escape(top)}\b", f"module {unique}",
                          synth.netlist_text, count=1, flags=re.M)
            session = self._session(runner)
            out = session.query(
                self.sta_commands(session.workdir / _STA_NETLIST, unique, clock, period_ns),
                text)
        else:
            runner.put(workdir, [SourceFile(name=synth.netlist.name,
                                            content=synth.netlist_text)], role="netlist")
            body = self.sta_commands(synth.netlist, top, clock, period_ns)
            runner.put(workdir, [SourceFile(
                name=_STA_SCRIPT,
                content=f"read_liberty {{{lib}}}\n{_catch(chr(10) + body + chr(10))}\nexit\n")],
                role="trusted")
            run = runner.run(["sta", "-no_splash", "-no_init", "-exit", _STA_SCRIPT],
                             cwd=workdir, timeout=self.sta_timeout, ro_paths=[lib], tool=STA)
            if run.timed_out:
                raise PPATimeoutError(f"sta ran past {self.sta_timeout:g} s", stage="sta",
                                      log=run.output)
            out = run.output
            if not run.ok and not _TCL_ERROR.search(out):
                raise PPAError(f"sta failed (exit {run.returncode})", stage="sta", log=out)
        error = _TCL_ERROR.search(out)
        if error:
            raise PPAError(f"sta: {error.group(1).strip()}", stage="sta", log=out)
        return out

    def estimate(self, candidate: Candidate, top: str, runner: SandboxRunner, *,
                 clock: str | None = None, period_ns: float | None = None,
                 cycles: int | None = None) -> PPAResult:
        _, info = self.liberty
        start = time.perf_counter()
        sta_tool = find_tool(STA)  # fail fast (ToolMissingError) before synthesising
        with runner.workspace(prefix="rtlforge-ppa-") as workdir:
            synth = self._synthesise(candidate, top, runner, workdir, period_ns)
            picked = self._pick_clock(synth, clock)
            period = period_ns if period_ns is not None else self.period_ns
            t_sta = time.perf_counter()
            out = self._run_sta(synth, top, picked, period, runner, workdir)
            sta_seconds = time.perf_counter() - t_sta
        # One path per path group (clock, async recovery/removal, ...): the worst is the largest
        # arrival. The slack section repeats each arrival negated, which max() passes over.
        arrivals = [float(v) for v in _ARRIVAL.findall(out)]
        slacks = [float(v) for v, _ in _SLACK.findall(out)]
        power = _POWER.search(out)
        if not arrivals or power is None:
            raise PPAError("OpenSTA found no timing path or power figure (is the logic "
                           "constant or disconnected?)", stage="sta", log=out)
        scale = info.units.time_ns
        delay_ns = max(arrivals) * scale
        # report_power prints watts whatever the library's units (checked against leakage).
        internal, switching, leakage, total = (float(g) * 1e3 for g in power.groups())
        _finite_positive(area_um2=synth.area_um2, delay_ns=delay_ns, power_mw=total)
        details = self._details(
            synth, clock=picked or _VIRTUAL_CLOCK, virtual_clock=picked is None,
            period_ns=period, activity=self.activity,
            slack_ns=min(slacks) * scale if slacks else None,
            power_breakdown_mw={"internal": internal, "switching": switching,
                                "leakage": leakage},
            power_kind="total", delay_source="opensta arrival",
            input_transition_ns=self.input_transition_ns, output_load_pf=self.output_load_pf,
            sta_mode="persistent" if self.persistent else "oneshot",
            seconds={"synth": synth.seconds, "sta": sta_seconds,
                     "total": time.perf_counter() - start},
        )
        if cycles is not None:
            if cycles < 1:
                raise ValueError(f"cycles must be >= 1, not {cycles}")
            details.update(cycles=cycles, latency_ns=cycles * delay_ns)
        return PPAResult(
            area_um2=synth.area_um2, delay_ns=delay_ns, power_mw=total, cells=synth.cells,
            liberty=_liberty_label(self.liberty_source, info),
            tools=tuple(t for t in (synth.tool, sta_tool) if t is not None), details=details,
        )
