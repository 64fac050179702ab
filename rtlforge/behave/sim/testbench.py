"""The generated, file-driven testbench BEHAVE-Sim runs the RTL in (Verilog-2005 + ``-g2012``).

Stimulus comes from ``$readmemh`` files in the run directory and every transaction is logged
with ``$fwrite`` to a file there, one line each, so a run costs one compile and one ``vvp``
regardless of its length and Python only reads a text log afterwards (no co-simulation).

Cycle scheme (10 time units a cycle, race-free because one ``initial`` block does everything):
inputs and readies change after the falling edge, all handshakes and outputs are sampled 1 unit
before the rising edge, the design updates on the rising edge. Log lines (``cycle`` first):

- ``C A <index> <stalls>``: input transaction ``index`` accepted (``stalls``: output stall
  cycles so far, which latency excludes);
- ``C O <iface> <hex> <first> <stalls>``: an output transfer, first offered in cycle ``first``;
- ``C S <iface> <hex>``: a per-cycle sample of a sampled output interface; when it has X/Z
  bits, ``<hex>`` is ``<word with those endpoints zeroed>/<mask of those endpoints>`` (endpoint
  0 the mask's lowest bit), so a don't-care endpoint's X does not hide its neighbours;
- ``C F``: the first input transaction of the run is offered (the start of a workload);
- ``C R``: a reset ended; ``C V <iface> <kind>``: a protocol-monitor violation;
- ``C W``: the watchdog fired (no progress for the stall limit); ``C E``: the run ended.

Before every reset after the first, the testbench stops offering input and drains the design
(outputs always ready) so that no transaction is in flight when it resets.

Further clocks (``[[clocks]]``, ``ratio`` rising edges per transaction-clock cycle, one of its
edges on each rising edge of ``clock``): the cycle is stretched to ``10 x lcm(ratios)`` units
so that every edge falls on a whole time unit, and inputs, readies and reset change 1 unit
after the falling edge instead of at it, where no clock has an edge (a fast clock has one at
the falling edge of the slow one). The one ``initial`` block still makes every edge
(:func:`cycle_schedule`), so the order of events within a time step is the same in every
simulator and in the cocotb bench, which follows the same schedule. The log counts
transaction-clock cycles either way.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict

from rtlforge.behave.sim.protocols import Protocol
from rtlforge.behave.sim.stimulus import BACKPRESSURE_CYCLES, MAX_GAP, Stimulus
from rtlforge.behave.sim.task import BehaveTask, Interface, reset_input_bits
from rtlforge.behave.types import to_bits

__all__ = ["LOG_FILE", "STIM_FILE", "TB_FILE", "TB_TOP", "ScheduledEvent", "TestbenchPlan",
           "clock_start_values", "cycle_schedule", "drive_offset", "plan_testbench"]

TB_TOP = "behave_tb"
TB_FILE = "behave_tb.v"
STIM_FILE = "behave_stim.hex"
LOG_FILE = "behave_log.txt"
GAP_BITS = MAX_GAP.bit_length()
#: At most this many monitor violations are logged (the first ones say what is wrong).
MAX_VIOLATION_LINES = 50


class TestbenchPlan(BaseModel):
    """The testbench text and the support files it reads, ready to put into a run directory."""

    model_config = ConfigDict(frozen=True)
    __test__ = False  # not a pytest class

    text: str
    files: dict[str, str]  # file name -> content (stimulus and backpressure patterns)
    drain_cycles: int
    stall_limit: int


class ScheduledEvent(BaseModel):
    """One thing a testbench cycle does, ``delay`` time units after the previous one."""

    model_config = ConfigDict(frozen=True)

    delay: int
    action: Literal["sample", "clock", "edge", "cycle", "readies"]
    port: str = ""  # an extra clock's port (edge)
    value: int = 0  # the clock's new level (clock, edge)


def drive_offset(task: BehaveTask) -> int:
    """Time units after the falling edge at which inputs, readies and reset change: 0, or 1
    with further clocks (a fast clock has an edge at the falling edge of ``clock``)."""
    return 1 if task.clocks else 0


def _period(task: BehaveTask) -> int:
    return 10 * math.lcm(*(c.ratio for c in task.clocks)) if task.clocks else 10


def clock_start_values(task: BehaveTask) -> tuple[tuple[str, int], ...]:
    """Each further clock's level at time 0 (as just after the falling edge of ``clock``,
    which is its 2 x ratio-th edge of the cycle: with ``align = "rise"`` high when the ratio
    is even, with ``"fall"`` the opposite)."""
    return tuple((c.port, int(c.ratio % 2 == 0) ^ (c.align == "fall")) for c in task.clocks)


def cycle_schedule(task: BehaveTask) -> tuple[ScheduledEvent, ...]:
    """One cycle of the testbench from its drive point: the sample 1 unit before the rising
    edge of ``clock``, that edge at half the period, the falling edge (the cycle count moves
    on), every further clock's edges, then the readies at the next drive point. Events of one
    time step keep this order: sample, ``clock``, cycle count, further clocks, readies."""
    period, drive = _period(task), drive_offset(task)
    half = period // 2
    timed: list[tuple[int, int, ScheduledEvent]] = [
        (half - 1, 0, ScheduledEvent(delay=0, action="sample")),
        (half, 1, ScheduledEvent(delay=0, action="clock", value=1)),
        (period, 1, ScheduledEvent(delay=0, action="clock", value=0)),
        (period, 2, ScheduledEvent(delay=0, action="cycle")),
        (period + drive, 4, ScheduledEvent(delay=0, action="readies")),
    ]
    for spec in task.clocks:
        # its edges: every step; the one at `half` (the rising edge of `clock`) is its rising
        # edge with align = "rise", its falling edge with "fall"
        step, fall = period // (2 * spec.ratio), spec.align == "fall"
        for k in range(1, 2 * spec.ratio + 1):
            level = int((k - spec.ratio) % 2 == 0) ^ fall
            timed.append((k * step, 3, ScheduledEvent(delay=0, action="edge", port=spec.port,
                                                      value=level)))
    timed.sort(key=lambda item: (item[0], item[1]))
    out, now = [], drive
    for at, _, event in timed:
        out.append(event.model_copy(update={"delay": at - now}))
        now = at
    return tuple(out)


def _step_lines(task: BehaveTask, readies: list[str]) -> list[str]:
    """The body of ``bt_step``: the cycle schedule as Verilog (one statement a line)."""
    lines: list[str] = []
    for event in cycle_schedule(task):
        wait = f"#{event.delay} " if event.delay else ""
        if event.action == "sample":
            lines.append(f"      {wait}bt_sample;")
        elif event.action == "clock":
            lines.append(f"      {wait}bt_clk = {event.value};")
        elif event.action == "edge":
            lines.append(f"      {wait}{event.port} = 1'b{event.value};")
        elif event.action == "cycle":
            lines.append(f"      {wait}bt_cycle = bt_cycle + 1;")
        else:
            if event.delay:
                lines.append(f"      #{event.delay};")
            lines.append("\n".join(readies))
    return lines


def bp_file(iface: Interface) -> str:
    return f"behave_bp_{iface.name}.hex"


def _word_expr(iface: Interface) -> str:
    """The interface's endpoints packed, first endpoint in the low bits."""
    parts = [e.pin for e in reversed(iface.endpoints)]
    return parts[0] if len(parts) == 1 else "{" + ", ".join(parts) + "}"


def _unknown_mask(iface: Interface) -> str:
    """One bit per endpoint (endpoint 0 lowest): the endpoint has X/Z bits."""
    bits = [f"(^({e.pin}) === 1'bx)" for e in reversed(iface.endpoints)]
    return bits[0] if len(bits) == 1 else "{" + ", ".join(bits) + "}"


def _known_expr(iface: Interface) -> str:
    """The interface's word with every endpoint that has X/Z bits zeroed (the rest readable)."""
    parts = [f"((^({e.pin}) === 1'bx) ? {e.width}'d0 : {e.pin})" for e in reversed(iface.endpoints)]
    return parts[0] if len(parts) == 1 else "{" + ", ".join(parts) + "}"


def _stim_lines(task: BehaveTask, stimulus: Stimulus) -> tuple[list[str], int]:
    endpoints = task.input_endpoints
    data_width = sum(e.width for e in endpoints)
    lines = []
    for txn in stimulus.transactions:
        word, offset = 0, 0
        for e in endpoints:
            word |= to_bits(e.type, txn.inputs[e.name]) << offset
            offset += e.width
        word |= min(txn.gap, MAX_GAP) << data_width
        word |= int(txn.reset) << (data_width + GAP_BITS)
        lines.append(f"{word:x}")
    return lines, data_width


def plan_testbench(task: BehaveTask, stimulus: Stimulus, *, stall_limit: int | None = None,
                   ) -> TestbenchPlan:
    """Generate the testbench for ``task`` driving ``stimulus``."""
    data = task.data_input
    outs = task.outputs
    every_cycle = data.protocol in (Protocol.COMBINATIONAL, Protocol.PER_CYCLE)
    fixed = max((o.latency or 0 for o in outs), default=0)
    drain = 0 if every_cycle else task.latency.max + fixed + 8
    stall = (stall_limit if stall_limit is not None
             else 4 * task.latency.max + 2 * BACKPRESSURE_CYCLES)
    lines, data_width = _stim_lines(task, stimulus)
    n = max(1, len(lines))
    sw = data_width + GAP_BITS + 1
    files = {STIM_FILE: "\n".join(lines) + "\n"}
    rv_outs = [o for o in outs if o.protocol is Protocol.READY_VALID]
    for o in rv_outs:
        files[bp_file(o)] = "\n".join("1" if r else "0"
                                      for r in stimulus.backpressure[o.name]) + "\n"
    reset = task.reset
    # the violation task's interface-name argument holds the longest name whole
    name_chars = max(16, *(len(i.name) for i in task.interfaces))
    active = "1'b0" if reset is not None and reset.active == "low" else "1'b1"
    inactive = "1'b1" if active == "1'b0" else "1'b0"

    decl: list[str] = []
    conns: list[str] = []
    if task.clock and not task.combinational:
        conns.append(f".{task.clock}(bt_clk)")
    for port, level in clock_start_values(task):
        decl.append(f"  reg {port} = 1'b{level};")
        conns.append(f".{port}({port})")
    if reset is not None:
        decl.append(f"  reg {reset.signal} = {inactive};")
        conns.append(f".{reset.signal}({reset.signal})")
        for extra in reset.extra:
            decl.append(f"  reg {extra.signal} = 1'b{int(extra.active == 'low')};")
            conns.append(f".{extra.signal}({extra.signal})")
    for iface in task.interfaces:
        kind = "reg" if iface.direction == "input" else "wire"
        for e in iface.endpoints:
            rng = f"[{e.width - 1}:0] " if e.width > 1 else ""
            decl.append(f"  {kind} {rng}{e.pin}{' = 0' if kind == 'reg' else ''};")
            conns.append(f".{e.pin}({e.pin})")
        for pin, port in iface.pins.items():
            drives = (iface.direction == "input") != (pin == "ready")
            decl.append(f"  {'reg' if drives else 'wire'} {port}{' = 0' if drives else ''};")
            conns.append(f".{port}({port})")
    for o in outs:
        decl.append(f"  reg [{o.width - 1}:0] bt_prev_{o.name} = 0;")
        decl.append(f"  reg bt_pend_{o.name} = 0;")
        decl.append(f"  integer bt_first_{o.name} = 0, bt_fst_{o.name} = 0;")
    for o in rv_outs:
        decl.append(f"  reg bt_bp_{o.name} [0:{BACKPRESSURE_CYCLES - 1}];")

    # --- the sample point: acceptance, receivers, monitors
    valid = data.pins.get("valid") or data.pins.get("start")
    if data.protocol is Protocol.READY_VALID:
        ready = data.pins["ready"]
        accept = f"bt_offering && ({ready} === 1'b1)"
    else:
        accept = "bt_offering"
    sample = [f"      bt_accepted = !bt_in_reset && ({accept});",
              "      if (bt_accepted) $fwrite(bt_fd, \"%0d A %0d %0d\\n\", bt_cycle, bt_ip, "
              "bt_stalled);"]
    if data.protocol is Protocol.READY_VALID:
        sample.append(f"      if (!bt_in_reset && bt_offering && {data.pins['ready']} !== 1'b0 "
                      f"&& {data.pins['ready']} !== 1'b1) "
                      f"bt_violation(\"{data.name}\", \"x_ready\");")
    stall_terms = []
    for o in outs:
        word = _word_expr(o)
        s = [f"      // receiver for {o.name} ({o.protocol.value})"]
        if o.sampled:
            s += [f"      if (!bt_in_reset && ^({word}) === 1'bx) $fwrite(bt_fd, "
                  f"\"%0d S {o.name} %h/%h\\n\", bt_cycle, {_known_expr(o)}, {_unknown_mask(o)});",
                  f"      else if (!bt_in_reset) $fwrite(bt_fd, \"%0d S {o.name} %h\\n\", "
                  f"bt_cycle, {word});"]
        else:
            v = o.pins.get("valid") or o.pins["done"]
            take = o.pins["ready"] if o.protocol is Protocol.READY_VALID else "1'b1"
            s += [
                f"      if (!bt_in_reset && {v} === 1'b1) begin",
                f"        if (!bt_pend_{o.name}) begin bt_first_{o.name} = bt_cycle; "
                f"bt_fst_{o.name} = bt_stalled; end",
                f"        if (^({word}) === 1'bx) bt_violation(\"{o.name}\", \"x_data\");",
                f"        if (bt_pend_{o.name} && ({word}) !== bt_prev_{o.name}) "
                f"bt_violation(\"{o.name}\", \"unstable\");",
                f"        if ({take}) begin",
                f"          $fwrite(bt_fd, \"%0d O {o.name} %h %0d %0d\\n\", bt_cycle, {word}, "
                f"bt_first_{o.name}, bt_fst_{o.name});",
                f"          bt_pend_{o.name} = 0;",
                *(["          bt_outstanding = bt_outstanding - 1;"]
                  if o.protocol is Protocol.START_DONE else []),
                "        end else begin",
                f"          bt_pend_{o.name} = 1; bt_prev_{o.name} = {word};",
                "        end",
                "      end else if (!bt_in_reset) begin",
                f"        if ({v} !== 1'b0) bt_violation(\"{o.name}\", \"x_valid\");",
                f"        if (bt_pend_{o.name}) bt_violation(\"{o.name}\", \"valid_dropped\");",
                f"        bt_pend_{o.name} = 0;",
                "      end",
            ]
            if o.protocol is Protocol.READY_VALID:
                stall_terms.append(f"({v} === 1'b1 && {o.pins['ready']} !== 1'b1)")
        sample += s
    if stall_terms:
        sample.append(f"      if (!bt_in_reset && ({' || '.join(stall_terms)})) "
                      "bt_stalled = bt_stalled + 1;")

    readies = [f"      {o.pins['ready']} = (bt_draining || bt_in_reset) ? 1'b1 : "
               f"bt_bp_{o.name}[bt_cycle % {BACKPRESSURE_CYCLES}];" for o in rv_outs]
    clear = [f"      bt_pend_{o.name} = 0;" for o in outs]

    offset = 0
    drive_static, drive_data = [], []
    static_names = {e.name for i in task.static_inputs for e in i.endpoints}
    for e in task.input_endpoints:
        line = f"          {e.pin} = bt_word[{offset + e.width - 1}:{offset}];"
        (drive_static if e.name in static_names else drive_data).append(line)
        offset += e.width
    valid_on = [f"          {valid} = 1'b1;"] if valid else []
    valid_off = [f"        {valid} = 1'b0;"] if valid else []
    start_done = data.protocol is Protocol.START_DONE
    can_offer = "bt_outstanding == 0" if start_done else "1'b1"

    # endpoints the task holds at a value while reset is active ([reset] inputs)
    held = [f"      {e.pin} = {e.width}'h{bits:x};" for e, bits in reset_input_bits(task)]
    # further reset ports go with the main one, each at its own polarity
    extra_on = "".join(f" {x.signal} = 1'b{int(x.active == 'high')};"
                       for x in (reset.extra if reset is not None else ()))
    extra_off = "".join(f" {x.signal} <= 1'b{int(x.active == 'low')};"
                        for x in (reset.extra if reset is not None else ()))
    reset_body = ([f"      {reset.signal} = {active};{extra_on} bt_in_reset = 1;", *held,
                   f"      repeat ({reset.cycles}) bt_step;",
                   # released with <=: a design's negedge logic in this same time step
                   # (the falling edge just made) still sees reset, in any simulator order
                   f"      {reset.signal} <= {inactive};{extra_off} bt_in_reset = 0;"]
                  if reset is not None else [])
    start = [line.replace("      ", "    ") for line in readies] or [""]
    if drive_offset(task):
        start.append(f"    #{drive_offset(task)};  // to the drive point, clear of clock edges")
    text = f"""`timescale 1ns/1ps
// Generated by rtlforge BEHAVE-Sim for task {task.id}: do not edit.
module {TB_TOP};
  reg [{sw - 1}:0] bt_stim [0:{n - 1}];
  reg [{sw - 1}:0] bt_word = 0;
  reg bt_clk = 0, bt_offering = 0, bt_loaded = 0, bt_accepted = 0, bt_dead = 0;
  reg bt_draining = 0, bt_in_reset = 0, bt_first_reset = 1, bt_started = 0;
  integer bt_fd, bt_cycle = 0, bt_ip = 0, bt_gap = 0, bt_stall = 0, bt_stalled = 0;
  integer bt_outstanding = 0, bt_nviol = 0;
{chr(10).join(decl)}

  {task.top} bt_dut ({", ".join(conns)});

  task bt_violation(input [8*{name_chars}-1:0] where, input [8*16-1:0] what);
    begin
      if (bt_nviol < {MAX_VIOLATION_LINES})
        $fwrite(bt_fd, "%0d V %0s %0s\\n", bt_cycle, where, what);
      bt_nviol = bt_nviol + 1;
    end
  endtask

  task bt_sample;
    begin
{chr(10).join(sample)}
    end
  endtask

  task bt_step;
    begin
{chr(10).join(_step_lines(task, readies))}
    end
  endtask

  task bt_reset;
    begin
      if (!bt_first_reset) begin
        bt_draining = 1;
        repeat ({drain}) bt_step;
        bt_draining = 0;
      end
      bt_first_reset = 0;
{chr(10).join(line[4:] for line in drive_static)}
{chr(10).join(reset_body)}
{chr(10).join(clear)}
      bt_outstanding = 0;
      $fwrite(bt_fd, "%0d R\\n", bt_cycle);
    end
  endtask

  initial begin
    $readmemh("{STIM_FILE}", bt_stim);
{chr(10).join(f'    $readmemh("{bp_file(o)}", bt_bp_{o.name});' for o in rv_outs)}
    bt_fd = $fopen("{LOG_FILE}", "w");
{chr(10).join(start)}
    while (bt_ip < {len(lines)} && !bt_dead) begin
      if (!bt_offering) begin
        if (!bt_loaded) begin
          bt_word = bt_stim[bt_ip];
          bt_loaded = 1;
          bt_gap = bt_word[{data_width + GAP_BITS - 1}:{data_width}];
          if (bt_word[{sw - 1}]) bt_reset;
{chr(10).join(drive_static)}
        end
        if (bt_gap > 0) bt_gap = bt_gap - 1;
        else if ({can_offer}) begin
{chr(10).join(drive_data)}
{chr(10).join(valid_on)}
          bt_offering = 1;
          if (!bt_started) begin $fwrite(bt_fd, "%0d F\\n", bt_cycle); bt_started = 1; end
        end
      end
      bt_step;
      if (bt_offering && bt_accepted) begin
        bt_offering = 0; bt_loaded = 0; bt_ip = bt_ip + 1; bt_stall = 0;
{chr(10).join(valid_off)}
{"        bt_outstanding = bt_outstanding + 1;" if start_done else ""}
      end else if (bt_offering || bt_outstanding > 0) begin
        bt_stall = bt_stall + 1;
        if (bt_stall > {stall}) begin
          $fwrite(bt_fd, "%0d W\\n", bt_cycle);
          bt_dead = 1;
        end
      end
    end
    if (!bt_dead) begin
      bt_draining = 1;
      repeat ({drain}) bt_step;
    end
    $fwrite(bt_fd, "%0d E\\n", bt_cycle);
    $fclose(bt_fd);
    $finish;
  end
endmodule
"""
    return TestbenchPlan(text=text, files=files, drain_cycles=drain, stall_limit=stall)
