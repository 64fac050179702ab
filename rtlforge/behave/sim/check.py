"""BEHAVE-Sim: check RTL (``check_rtl``) or a behaviour model (``check_model``) against a
task's golden model under the task's matching rules and latency bounds.

Both artifacts take the same code path: one seeded :class:`Stimulus`, the golden run on it in
its own instance, the artifact's outputs gathered per output interface and reset segment, and
:func:`~.match.match_outputs` pairing them under the task's policy. Verdicts: ``pass`` when
every transaction completed with no mismatch and no monitor violation; ``fail`` for mismatches,
violations, a watchdog (the design stopped making progress: a simulated-cycle bound, so the
design's fault, not a wall-clock ``timeout``) or a simulation the design ended early;
``error`` when the design does not compile or a model crashes; ``timeout`` when a tool ran past
its wall-clock limit; ``infra_error`` when the sandbox, a tool or the golden model failed (never
the artifact's fault, so never a fail).
"""

from __future__ import annotations

import bisect
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.behave.base import Failure, ModelInstance, is_dont_care
from rtlforge.behave.model import BehaviorModel, Instance
from rtlforge.behave.sim.golden import GoldenUnavailable, golden_instance
from rtlforge.behave.sim.match import Expected, Observed, Pair, agrees, match_outputs
from rtlforge.behave.sim.monitors import MonitorExercise, monitor_exercise
from rtlforge.behave.sim.protocols import Protocol
from rtlforge.behave.sim.run import SIM_BACKENDS, RunLog, SimBackend, SimRun, simulate
from rtlforge.behave.sim.stimulus import Stimulus, StimulusConfig, generate_stimulus, input_values
from rtlforge.behave.sim.task import BehaveTask, Interface
from rtlforge.behave.sim.testbench import TestbenchPlan, plan_testbench
from rtlforge.behave.types import Value, check_value, from_bits
from rtlforge.core.errors import (
    DesignError,
    RtlforgeError,
    SecurityViolation,
    is_infra,
)
from rtlforge.core.models import Candidate, Verdict

if TYPE_CHECKING:
    from rtlforge.behave.sim.verilator import VerilatorBuilds

__all__ = ["BehaveResult", "Coverage", "GoldenUnavailable", "MismatchRecord", "TraceStep",
           "Violation", "check_model", "check_rtl", "golden_instance"]

#: Transactions of context shown before the first failing one.
TRACE_CONTEXT = 4


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TraceStep(_Frozen):
    transaction: int
    cycle: int | None
    inputs: dict[str, Any]
    expected: dict[str, Any] | None


class MismatchRecord(_Frozen):
    """One failing output transaction, readable on its own."""

    kind: Literal["value", "missing", "unexpected", "latency", "failure"]
    interface: str
    transaction: int | None = None
    cycle: int | None = None
    inputs: dict[str, Any] | None = None
    expected: dict[str, Any] | None = None
    observed: dict[str, Any] | str | None = None
    message: str = ""
    trace: tuple[TraceStep, ...] = ()  # the transactions just before it, same segment

    def describe(self) -> str:
        lines = [f"{self.kind} on {self.interface}: {self.message}"]
        for step in self.trace:
            lines.append(f"  txn {step.transaction} @cycle {step.cycle}: in {step.inputs} "
                         f"-> {step.expected}")
        lines.append(f"> txn {self.transaction} @cycle {self.cycle}: in {self.inputs}")
        lines.append(f"  expected {self.expected}")
        lines.append(f"  observed {self.observed}")
        return "\n".join(lines)


class Violation(_Frozen):
    kind: str  # valid_dropped | unstable | x_data | x_valid | x_ready | watchdog | early_end
    # | incomplete (the log ended cleanly without every transaction accepted)
    interface: str
    cycle: int | None = None
    message: str = ""


class Coverage(_Frozen):
    """What the run exercised: transaction counts, and the golden model's branch goals
    (``branch_goals``: goal name -> hit on this stimulus, source order; None when the golden
    is not a DSL model instance, e.g. a test double). ``unhit_goals`` is what a goal-guided
    search would aim at next."""

    transactions: int = 0
    completed: int = 0
    outputs: int = 0
    resets: int = 0
    branch_goals: dict[str, bool] | None = None
    goals_hit: int | None = None
    goals_total: int | None = None
    unhit_goals: tuple[str, ...] = ()
    monitors: tuple[MonitorExercise, ...] = ()  # RTL: how often each monitor was armed


def _goal_coverage(instance: ModelInstance) -> dict[str, Any]:
    """The Coverage fields for a DSL instance's branch goals (nothing for other models)."""
    if not isinstance(instance, Instance):
        return {}
    hit = instance.hit_goals()
    goals = {site.goal_name(outcome): (site.id, outcome) in hit
             for site in instance.ir.branches for outcome in (True, False)}
    return {"branch_goals": goals, "goals_hit": sum(goals.values()), "goals_total": len(goals),
            "unhit_goals": tuple(name for name, ok in goals.items() if not ok)}


class BehaveResult(_Frozen):
    verdict: Verdict  # rtlforge's one vocabulary (infra_error and timeout: unresolved)
    artifact: Literal["rtl", "model"]
    mismatches: int = 0
    first_failure: MismatchRecord | None = None
    violations: tuple[Violation, ...] = ()
    coverage: Coverage = Coverage()
    message: str = ""
    metrics: dict[str, float | int] = Field(default_factory=dict)


# ------------------------------------------------------------------------------- models


def _run_model(task: BehaveTask, stimulus: Stimulus, instance: ModelInstance,
               ) -> list[dict[str, Value] | Failure]:
    outs: list[dict[str, Value] | Failure] = []
    instance.reset()
    for n, txn in enumerate(stimulus.transactions):
        if txn.reset and n > 0:
            instance.reset()
        result = instance.process(input_values(task, txn))
        outs.append(result if isinstance(result, Failure) else dict(result))
    return outs


def _split(task: BehaveTask, iface: Interface, out: Mapping[str, Value]) -> dict[str, Value] | None:
    names = [e.name for e in iface.endpoints]
    present = [n for n in names if n in out]
    if not present:
        return None
    if len(present) != len(names):
        raise ValueError(f"the model returned only {present} of interface {iface.name} "
                         f"({names}): an interface's endpoints come together or not at all")
    for e in iface.endpoints:
        if not is_dont_care(out[e.name]):  # ANY: the model leaves it unspecified
            check_value(e.type, out[e.name])
    return {n: out[n] for n in names}


def _shown(values: Any) -> Any:
    """Values for a report (JSON-able): a don't-care as ``"ANY"``, an unknown endpoint ``"X"``."""
    if not isinstance(values, dict):
        return values
    return {k: "ANY" if is_dont_care(v) else ("X" if v is None else v)
            for k, v in values.items()}


def _segments(stimulus: Stimulus) -> list[int]:
    seg, out = -1, []
    for n, txn in enumerate(stimulus.transactions):
        if txn.reset or n == 0:
            seg += 1
        out.append(seg)
    return out


def _decode(iface: Interface, hex_text: str) -> dict[str, Value] | None:
    if any(c in "xz?/" for c in hex_text):
        return None
    try:
        bits = int(hex_text, 16)
    except ValueError:
        return None
    values, offset = {}, 0
    for e in iface.endpoints:
        values[e.name] = from_bits(e.type, (bits >> offset) & ((1 << e.width) - 1))
        offset += e.width
    return values


def _decode_partial(iface: Interface, hex_text: str) -> dict[str, Value | None] | None:
    """A sample with unknown bits, logged as ``<word, X endpoints zeroed>/<X endpoint mask>``:
    each endpoint's value, None for those with X/Z bits (what a don't-care may accept)."""
    word, sep, mask_text = hex_text.partition("/")
    if not sep:
        return None
    try:
        bits, mask = int(word, 16), int(mask_text, 16)
    except ValueError:
        return None
    values: dict[str, Value | None] = {}
    offset = 0
    for k, e in enumerate(iface.endpoints):
        values[e.name] = (None if (mask >> k) & 1
                          else from_bits(e.type, (bits >> offset) & ((1 << e.width) - 1)))
        offset += e.width
    return values


class _Judge:
    """Collects mismatches across interfaces and keeps the first failing one (by cycle)."""

    def __init__(self, task: BehaveTask, stimulus: Stimulus,
                 expected: list[dict[str, Value] | Failure], cycles: dict[int, int]) -> None:
        self.task, self.stimulus, self.expected, self.cycles = task, stimulus, expected, cycles
        self.segments = _segments(stimulus)
        self.count = 0
        self.first: MismatchRecord | None = None

    def _trace(self, n: int | None) -> tuple[TraceStep, ...]:
        if n is None:
            return ()
        steps = []
        for k in range(max(0, n - TRACE_CONTEXT), n):
            if self.segments[k] != self.segments[n]:
                continue
            exp = self.expected[k]
            steps.append(TraceStep(transaction=k, cycle=self.cycles.get(k),
                                   inputs=dict(self.stimulus.transactions[k].inputs),
                                   expected=None if isinstance(exp, Failure) else _shown(exp)))
        return tuple(steps)

    def add(self, kind: Any, iface: str, message: str, *, n: int | None, cycle: int | None,
            expected: dict[str, Any] | None = None, observed: Any = None) -> None:
        self.count += 1
        record_cycle = cycle if cycle is not None else (self.cycles.get(n) if n is not None
                                                        else None)
        if self.first is not None and (record_cycle is None or self.first.cycle is None
                                       or record_cycle >= self.first.cycle):
            return
        self.first = MismatchRecord(
            kind=kind, interface=iface, transaction=n, cycle=record_cycle, message=message,
            inputs=dict(self.stimulus.transactions[n].inputs) if n is not None else None,
            expected=_shown(expected), observed=_shown(observed), trace=self._trace(n))

    def pairs(self, iface: str, pairs: Sequence[Pair], *, latency: bool,
              accepts: Mapping[int, Any] | None = None, note: str = "") -> int:
        done = 0
        for p in pairs:
            e, o = p.expected, p.observed
            if e is None:
                assert o is not None
                self.add("unexpected", iface, "an output transaction no input called for",
                         n=None, cycle=o.cycle, observed=o.values or o.raw)
            elif o is None:
                self.add("missing", iface, "the expected output transaction never came",
                         n=e.transaction, cycle=None, expected=e.values)
            elif not agrees(e, o):
                what = "unknown (X/Z) bits" if o.values is None else "a different value"
                self.add("value", iface, f"the output carries {what}{note}", n=e.transaction,
                         cycle=o.cycle, expected=e.values,
                         observed=o.values or o.partial or o.raw)
            else:
                done += 1
                if latency and accepts is not None:
                    acc = accepts[e.transaction]
                    lat = (o.first - acc.cycle) - (o.stalled - acc.stalled)
                    lo, hi = self.task.latency.min, self.task.latency.max
                    if not lo <= lat <= hi:
                        self.add("latency", iface, f"latency {lat} cycles is outside "
                                 f"[{lo}, {hi}]", n=e.transaction, cycle=o.cycle,
                                 expected=e.values, observed=o.values)
        return done


def _expected_by_iface(task: BehaveTask, expected: list[dict[str, Value] | Failure],
                       allowed: set[int] | None) -> dict[str, list[Expected]]:
    out: dict[str, list[Expected]] = {i.name: [] for i in task.outputs}
    for n, exp in enumerate(expected):
        if isinstance(exp, Failure) or (allowed is not None and n not in allowed):
            continue
        for iface in task.outputs:
            values = _split(task, iface, exp)
            if values is not None:
                out[iface.name].append(Expected(transaction=n, values=values))
            elif iface.sampled and iface.protocol is not Protocol.FIXED_LATENCY:
                raise ValueError(f"the model returned no {iface.name} for transaction {n}: a "
                                 f"{iface.protocol.value} interface has an output every "
                                 "transaction")
    return out


def _golden(task: BehaveTask, stimulus: Stimulus, golden: ModelInstance | None,
            ) -> tuple[list[dict[str, Value] | Failure], dict[str, Any]]:
    """The golden's outputs on the stimulus and its goal coverage (Coverage fields)."""
    instance = golden if golden is not None else golden_instance(task)
    if isinstance(instance, Instance):
        instance.clear_coverage()
    outputs = _run_model(task, stimulus, instance)
    return outputs, _goal_coverage(instance)


def _infra(artifact: Any, message: str) -> BehaveResult:
    return BehaveResult(verdict="infra_error", artifact=artifact, message=message)


#: Why an empty stimulus is not checked: with nothing compared, every artifact would pass.
_EMPTY = ("the stimulus has no transactions, so nothing would be checked (no sequences and no "
          "edge sweep, or an input interface with no endpoints to sweep)")


# ------------------------------------------------------------------------------- public


def check_model(task: BehaveTask, model: ModelInstance | BehaviorModel, *, seed: int = 0,
                stimulus: Stimulus | StimulusConfig | None = None,
                golden: ModelInstance | None = None) -> BehaveResult:
    """Check a behaviour model against the golden on the same stimulus (independent state).

    ``model`` is an instance, or a :class:`BehaviorModel` (an agent's DSL model: load it with
    :func:`~.golden.load_task_model`, which checks it and its fit to the interface; it is
    interpreted, never executed). A model's transactions have no cycles: the transaction index
    stands in, and latency is not checked. A declared failure matches a declared failure
    (reasons may differ). ``coverage`` reports the golden's branch goals.
    """
    if isinstance(model, BehaviorModel):
        model = model.instance()
    stim = _stimulus(task, stimulus, seed)
    if not stim.transactions:
        return _infra("model", _EMPTY)
    try:
        expected, goal_cov = _golden(task, stim, golden)
    except GoldenUnavailable as exc:
        return _infra("model", str(exc))
    except Exception as exc:  # noqa: BLE001 - the golden is ours: its failure is infrastructure
        return _infra("model", f"the golden model failed: {exc!r}")
    try:
        observed = _run_model(task, stim, model)
    except Exception as exc:  # noqa: BLE001 - the artifact crashed: its fault
        return BehaveResult(verdict="error", artifact="model",
                            message=f"the model raised {exc!r}")
    cycles = {n: n for n in range(len(stim.transactions))}
    judge = _Judge(task, stim, expected, cycles)
    try:
        exp_by = _expected_by_iface(task, expected, None)
    except ValueError as exc:
        return _infra("model", f"the golden model broke the interface: {exc}")
    segments = _segments(stim)
    completed = 0
    for n, (e, o) in enumerate(zip(expected, observed, strict=True)):
        if isinstance(e, Failure) != isinstance(o, Failure):
            judge.add("failure", "*", "one model declared a failure, the other did not", n=n,
                      cycle=n, expected=None if isinstance(e, Failure) else e,
                      observed=o.reason if isinstance(o, Failure) else o)
    outputs = 0
    try:
        for iface in task.outputs:
            obs_all: list[tuple[int, Observed]] = []
            for n, o in enumerate(observed):
                if isinstance(o, Failure):
                    continue
                values = _split(task, iface, o)
                if values is not None:
                    obs_all.append((n, Observed(cycle=n, values=values)))
            exp_seg: dict[int, list[Expected]] = defaultdict(list)
            obs_seg: dict[int, list[Observed]] = defaultdict(list)
            for x in exp_by[iface.name]:
                exp_seg[segments[x.transaction]].append(x)
            for n, o in obs_all:
                obs_seg[segments[n]].append(o)
            for seg in sorted(set(exp_seg) | set(obs_seg)):
                policy = "in_order" if iface.sampled else task.matching.policy
                pairs = match_outputs(exp_seg[seg], obs_seg[seg], policy=policy,
                                      id_field=task.matching.id_field)
                completed += judge.pairs(iface.name, pairs, latency=False)
                outputs += len(obs_seg[seg])
    except ValueError as exc:
        return BehaveResult(verdict="fail", artifact="model", mismatches=judge.count + 1,
                            first_failure=judge.first, message=str(exc))
    coverage = Coverage(transactions=len(stim.transactions), completed=completed,
                        outputs=outputs, resets=len(set(segments)), **goal_cov)
    return BehaveResult(verdict="fail" if judge.count else "pass", artifact="model",
                        mismatches=judge.count, first_failure=judge.first, coverage=coverage)


def _stimulus(task: BehaveTask, stimulus: Stimulus | StimulusConfig | None, seed: int
              ) -> Stimulus:
    if isinstance(stimulus, Stimulus):
        return stimulus
    config = stimulus or StimulusConfig(seed=seed)
    return generate_stimulus(task, config)


def check_rtl(task: BehaveTask, candidate: Candidate, *, runner: Any = None,
              pipeline: Any = None, seed: int = 0,
              stimulus: Stimulus | StimulusConfig | None = None,
              golden: ModelInstance | None = None, timeout_s: float = 120.0,
              stall_limit: int | None = None, backend: SimBackend = "icarus",
              builds: VerilatorBuilds | None = None) -> BehaveResult:
    """Simulate ``candidate`` in the generated testbench and judge it against the golden.

    ``runner`` (a SandboxRunner) or ``pipeline`` (its runner is used); with neither, a runner
    is made for this call and closed after it. ``backend``: ``icarus`` (the default),
    ``verilator`` (a compile of seconds, then fast runs: pass ``builds`` to share the compiled
    design across checks, e.g. seeds; without it the build is this call's only) or ``cocotb``
    (Python drives the design through cocotb and Icarus: slower, for comparison).
    """
    from rtlforge.sandbox.runner import SandboxRunner

    if backend not in SIM_BACKENDS:
        raise ValueError(f"unknown simulation backend {backend!r}; one of {SIM_BACKENDS}")
    start = time.perf_counter()
    stim = _stimulus(task, stimulus, seed)
    if not stim.transactions:
        return _infra("rtl", _EMPTY)
    try:
        expected, goal_cov = _golden(task, stim, golden)
        if any(isinstance(e, Failure) for e in expected):
            return _infra("rtl", "the golden model declared a failure on generated stimulus: "
                                 "the task does not constrain its inputs to the spec's domain")
    except GoldenUnavailable as exc:
        return _infra("rtl", str(exc))
    except Exception as exc:  # noqa: BLE001 - the golden is ours: infrastructure
        return _infra("rtl", f"the golden model failed: {exc!r}")
    plan = plan_testbench(task, stim, stall_limit=stall_limit)
    own = runner is None and pipeline is None
    active = runner if runner is not None else (pipeline.runner if pipeline is not None
                                                else SandboxRunner())
    try:
        run_seed = stimulus.seed if isinstance(stimulus, StimulusConfig) else seed
        run = _simulate(backend, plan, candidate, active, builds, timeout_s=timeout_s,
                        seed=run_seed, task=task)
    except SecurityViolation as exc:
        return BehaveResult(verdict="fail", artifact="rtl", message=f"security: {exc}")
    except RtlforgeError as exc:
        if is_infra(exc):
            return _infra("rtl", str(exc))
        assert isinstance(exc, DesignError)
        return BehaveResult(verdict="error", artifact="rtl", message=str(exc))
    finally:
        if own:
            active.close()
    metrics: dict[str, float | int] = {"compile_s": round(run.compile_s, 4),
                                       "sim_s": round(run.sim_s, 4),
                                       "transactions": len(stim.transactions),
                                       "build_cached": int(run.cached)}
    if run.status == "compile_error":
        text = "; ".join(f.message for f in run.feedback if f.severity == "error")
        return BehaveResult(verdict="error", artifact="rtl", metrics=metrics,
                            message=f"the design does not compile: {text or run.message}")
    if run.status == "timeout":
        return BehaveResult(verdict="timeout", artifact="rtl", message=run.message,
                            metrics=metrics)
    if run.status != "ok" or run.log is None:
        return _infra("rtl", run.message)
    metrics["cycles"] = run.log.cycles
    try:
        result = _judge_rtl(task, stim, expected, run.log, metrics, goal_cov)
    except ValueError as exc:
        return _infra("rtl", f"the golden model broke the interface: {exc}")
    return result.model_copy(update={"metrics": {
        **result.metrics, "total_s": round(time.perf_counter() - start, 4)}})


def _simulate(backend: SimBackend, plan: TestbenchPlan, candidate: Candidate, runner: Any,
              builds: VerilatorBuilds | None, *, timeout_s: float, seed: int,
              task: BehaveTask) -> SimRun:
    """One simulation on the chosen backend (a Verilator build cache made for the call when
    none is given; ``seed`` + 1 seeds Verilator's random initial state)."""
    if backend == "icarus":
        return simulate(plan, candidate, runner, timeout_s=timeout_s)
    if backend == "cocotb":
        from rtlforge.behave.sim.cocotb_bench import simulate_cocotb

        return simulate_cocotb(task, plan, candidate, runner, timeout_s=timeout_s)
    from rtlforge.behave.sim.verilator import VerilatorBuilds, simulate_verilator

    if builds is not None:
        return simulate_verilator(plan, candidate, runner, builds, timeout_s=timeout_s,
                                  x_seed=seed + 1)
    with VerilatorBuilds() as own:
        return simulate_verilator(plan, candidate, runner, own, timeout_s=timeout_s,
                                  x_seed=seed + 1)


def _judge_rtl(task: BehaveTask, stim: Stimulus, expected: list[dict[str, Value] | Failure],
               log: RunLog, metrics: dict[str, float | int],
               goal_cov: dict[str, Any]) -> BehaveResult:
    accepts = {a.index: a for a in log.accepts}
    cycles = {n: a.cycle for n, a in accepts.items()}
    judge = _Judge(task, stim, expected, cycles)
    exp_by = _expected_by_iface(task, expected, set(accepts))
    segments = _segments(stim)
    resets = list(log.resets)
    violations = [Violation(kind=v.kind, interface=v.iface, cycle=v.cycle,
                            message=_VIOLATION_TEXT.get(v.kind, v.kind))
                  for v in log.violations]
    if log.watchdog is not None:
        offered = len(accepts)
        violations.append(Violation(
            kind="watchdog", interface=task.data_input.name, cycle=log.watchdog,
            message=f"no progress for the stall limit: input transaction {offered} was offered "
                    "and not accepted, or an operation never finished"))
    elif not log.ended:
        violations.append(Violation(kind="early_end", interface="*", cycle=log.cycles,
                                    message="the simulation ended before the testbench did "
                                            "(the design called $finish/$stop/$fatal, flooded "
                                            "the output or was killed, or the log was cut)"))
    elif missing := len(stim.transactions) - len(accepts.keys() & range(len(stim.transactions))):
        # the testbench ends only after the last transaction was accepted or by its watchdog:
        # a clean end short of that is a log something other than the testbench shaped
        violations.append(Violation(
            kind="incomplete", interface=task.data_input.name, cycle=log.cycles,
            message=f"the run ended with {missing} of {len(stim.transactions)} input "
                    "transactions never accepted, without a watchdog: the testbench did not "
                    "end it"))

    def segment_of_cycle(cycle: int) -> int:
        return max(0, bisect.bisect_right(resets, cycle) - 1)

    completed = outputs = 0
    last_output: int | None = None  # the cycle the last output transfer (or sample) happened
    for iface in task.outputs:
        if iface.sampled:
            samples = log.samples.get(iface.name, {})
            exp = exp_by[iface.name]
            note = ""
            if iface.delay is None:
                shift = iface.latency or 0
                pairs = _sample_pairs(iface, exp, samples,
                                      lambda n, shift=shift: cycles[n] + shift)
            else:
                delay, pairs = _delayed_pairs(iface, exp, samples, cycles, segments)
                metrics = {**metrics, f"delay.{iface.name}": delay}
                note = (f" (delay {delay}: the sample {delay} cycle(s) after the transaction, "
                        f"the best fit in the window {list(iface.delay)})")
            for p in pairs:
                if p.observed is not None:
                    cyc = p.observed.cycle
                    last_output = cyc if last_output is None else max(cyc, last_output)
            completed += judge.pairs(iface.name, pairs, latency=False, note=note)
            outputs += len(pairs)
            continue
        events = [Observed(cycle=o.cycle, values=_decode(iface, o.hex), first=o.first,
                           stalled=o.stalled, raw=o.hex)
                  for o in log.outputs if o.iface == iface.name]
        outputs += len(events)
        if events:
            newest = max(o.cycle for o in events)
            last_output = newest if last_output is None else max(last_output, newest)
        exp_by_seg: dict[int, list[Expected]] = defaultdict(list)
        obs_by_seg: dict[int, list[Observed]] = defaultdict(list)
        for x in exp_by[iface.name]:
            exp_by_seg[segments[x.transaction]].append(x)
        for o in events:
            obs_by_seg[segment_of_cycle(o.cycle)].append(o)
        for seg in sorted(set(exp_by_seg) | set(obs_by_seg)):
            pairs = match_outputs(exp_by_seg[seg], obs_by_seg[seg], policy=task.matching.policy,
                                  id_field=task.matching.id_field)
            completed += judge.pairs(iface.name, pairs, latency=True, accepts=accepts)
    failed = judge.count > 0 or bool(violations)
    if log.first_offer is not None and last_output is not None:  # the span area-time measures
        metrics = {**metrics, "first_offer_cycle": log.first_offer,
                   "last_output_cycle": last_output}
    coverage = Coverage(transactions=len(stim.transactions), completed=completed,
                        outputs=outputs, resets=len(resets),
                        monitors=monitor_exercise(task, log), **goal_cov)
    message = ""
    if judge.first is not None:
        message = judge.first.describe()
    elif violations:
        message = f"{violations[0].kind} on {violations[0].interface} at cycle " \
                  f"{violations[0].cycle}: {violations[0].message}"
    return BehaveResult(verdict="fail" if failed else "pass", artifact="rtl",
                        mismatches=judge.count, first_failure=judge.first,
                        violations=tuple(violations), coverage=coverage, message=message,
                        metrics=metrics)


def _sample_pairs(iface: Interface, expected: Sequence[Expected], samples: Mapping[int, str],
                  cycle_of: Any) -> list[Pair]:
    """Each expectation with the sample at the cycle ``cycle_of(transaction)`` (None: that
    expectation is not compared)."""
    pairs = []
    for e in expected:
        cyc = cycle_of(e.transaction)
        if cyc is None:
            continue
        raw = samples.get(cyc)
        obs = (Observed(cycle=cyc, values=_decode(iface, raw),
                        partial=_decode_partial(iface, raw), raw=raw)
               if raw is not None else None)
        pairs.append(Pair(expected=e, observed=obs))
    return pairs


def _delayed_pairs(iface: Interface, expected: Sequence[Expected], samples: Mapping[int, str],
                   cycles: Mapping[int, int], segments: Sequence[int]) -> tuple[int, list[Pair]]:
    """A per_cycle output with a delay window: the model's output of transaction n is the
    sample of transaction n + d, for one d in the window for the whole run (the d with the
    fewest mismatches, the smallest of equals). The first d samples after each reset show no
    model output and the last d model outputs before it no sample: neither is compared."""
    assert iface.delay is not None
    seen: dict[int, Observed | None] = {}  # each sample decoded once, whatever the delay

    def observed(cyc: int) -> Observed | None:
        if cyc not in seen:
            raw = samples.get(cyc)
            seen[cyc] = (Observed(cycle=cyc, values=_decode(iface, raw),
                                  partial=_decode_partial(iface, raw), raw=raw)
                         if raw is not None else None)
        return seen[cyc]

    def cycle_of(n: int, d: int) -> int | None:
        later = n + d
        if later >= len(segments) or segments[later] != segments[n]:
            return None
        return cycles.get(later)

    best_d, best_bad = iface.delay[0], -1
    for d in range(iface.delay[0], iface.delay[1] + 1):
        bad = 0
        for e in expected:
            cyc = cycle_of(e.transaction, d)
            if cyc is None:
                continue
            obs = observed(cyc)
            bad += obs is None or not agrees(e, obs)
            if 0 <= best_bad <= bad:  # no better than a delay already tried
                break
        else:
            best_d, best_bad = d, bad
        if best_bad == 0:
            break
    return best_d, _sample_pairs(iface, expected, samples, lambda n: cycle_of(n, best_d))


_VIOLATION_TEXT = {
    "valid_dropped": "valid fell before the transfer (ready was low): a ready/valid sender "
                     "holds valid until ready",
    "unstable": "the data changed while valid was high and ready low",
    "x_data": "unknown (X/Z) bits on a valid output",
    "x_valid": "the valid/done signal is unknown (X/Z)",
    "x_ready": "the design's ready is unknown (X/Z)",
}
