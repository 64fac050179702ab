"""The one PPA model, a measurement's outcome and the once-per-task golden service."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from pydantic import ValidationError

from rtlforge.core.errors import DesignError, SandboxError, ToolMissingError, is_infra
from rtlforge.core.interfaces import PPAEstimator
from rtlforge.core.interfaces import PPAResult as ReExported
from rtlforge.core.models import PPAResult, SourceFile, Task
from rtlforge.evaluation.golden import GoldenPPA, PPAMeasure

TASK = Task(id="t", spec="", top="t",
            golden=(SourceFile(name="t.v", content="module t; endmodule\n"),))
PPA = PPAResult(power_mw=0.5, delay_ns=2.0, area_um2=30.0, cells=7, liberty="lib")


class Scripted(PPAEstimator):
    """Answers from a script of outcomes (a PPAResult or an exception to raise), counting calls."""

    name: ClassVar[str] = "scripted"

    def __init__(self, *outcomes: PPAResult | Exception, delay: float = 0.0) -> None:
        self.outcomes = list(outcomes)
        self.calls = 0
        self.delay = delay
        self.seen: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def estimate(self, candidate: Any, top: str, runner: Any, **options: Any) -> PPAResult:
        with self._lock:
            self.calls += 1
            self.seen.append(options)
            outcome = self.outcomes.pop(0) if len(self.outcomes) > 1 else self.outcomes[0]
        time.sleep(self.delay)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def service(est: PPAEstimator, **options: Any) -> GoldenPPA:
    return GoldenPPA(est, runner=None, options=options)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ the model


def test_ppa_result_is_the_interfaces_model_and_reads_both_spellings() -> None:
    assert ReExported is PPAResult
    short = PPAResult.model_validate({"power": 1, "delay": 2.5, "area": 3})
    long = PPAResult.model_validate({"power_mw": 1, "delay_ns": 2.5, "area_um2": 3})
    assert short == long and short.triple() == {"power": 1.0, "delay": 2.5, "area": 3.0}
    assert short.cells is None and short.liberty is None  # optional: records do not carry them
    with pytest.raises(ValidationError) as info:
        PPAResult.model_validate({"power": 1, "delay": 2})
    assert info.value.errors()[0]["loc"] == ("area",)


def test_measure_serialises_flat_and_reads_its_own_output_back() -> None:
    measured = PPAMeasure(ppa=PPA)
    assert measured.model_dump() == {"power": 0.5, "delay": 2.0, "area": 30.0, "cells": 7,
                                     "error": None}
    again = PPAMeasure.model_validate(measured.model_dump())
    assert again.ok and again.triple() == PPA.triple() and again.cells == 7
    failed = PPAMeasure(error="SandboxError: no jail", infra=True)
    assert failed.model_dump() == {"power": None, "delay": None, "area": None, "cells": None,
                                   "error": "SandboxError: no jail", "infra": True}
    back = PPAMeasure.model_validate(failed.model_dump())
    assert not back.ok and back.infra
    # records written before ``infra`` existed read back as design errors
    assert not PPAMeasure.model_validate({"power": None, "error": "PPAError: x"}).infra
    flat = PPAMeasure(power=1.0, delay=2.0, area=3.0, cells=4)  # the flat keyword form
    assert flat.ppa is not None and flat.ppa.area_um2 == 3.0 and flat.cells == 4


@pytest.mark.parametrize("bad", [
    {"power": 1.0, "delay": 2.0},  # a partial measurement
    {"power": 1.0, "delay": 2.0, "area": 3.0, "error": "both"},
    {"power": 1.0, "delay": 2.0, "area": 3.0, "watts": 1},
])
def test_measure_refuses_inconsistent_input(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        PPAMeasure.model_validate(bad)


# ------------------------------------------------------------------------------ the service


def test_golden_is_measured_once_however_many_threads_ask() -> None:
    est = Scripted(PPA, delay=0.05)
    golden = service(est, clock="clk")
    results: list[PPAMeasure] = []
    threads = [threading.Thread(target=lambda: results.append(golden.measure(TASK)))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert est.calls == 1 and est.seen == [{"clock": "clk"}]
    assert len(results) == 8 and all(r.ppa == PPA for r in results)
    assert golden.known(TASK) == results[0]


@pytest.mark.parametrize("failure", [ToolMissingError("sta", "install it"),
                                     SandboxError("no jail"), RuntimeError("crash")])
def test_infrastructure_failures_raise_and_are_retried(failure: Exception) -> None:
    est = Scripted(failure, PPA)
    golden = service(est)
    with pytest.raises(type(failure)):
        golden.measure(TASK)
    assert golden.known(TASK) is None and is_infra(failure)
    assert golden.measure(TASK).ppa == PPA and est.calls == 2


def test_a_design_the_estimator_cannot_measure_is_cached_with_its_error() -> None:
    class Unmeasurable(DesignError):
        pass

    est = Scripted(Unmeasurable("no output is driven"))
    golden = service(est)
    first = golden.measure(TASK)
    assert first.error == "Unmeasurable: no output is driven" and not first.ok
    assert not first.infra
    assert golden.measure(TASK) is first and est.calls == 1


def test_load_skips_the_measurement_and_save_receives_a_fresh_one() -> None:
    stored = PPAMeasure(ppa=PPA)
    est = Scripted(RuntimeError("must not be called"))
    assert service(est).measure(TASK, load=lambda: stored) is stored and est.calls == 0
    saved: list[PPAMeasure] = []
    load: Callable[[], PPAMeasure | None] = lambda: None  # noqa: E731
    fresh = service(Scripted(PPA)).measure(TASK, load=load, save=saved.append)
    assert saved == [fresh] and fresh.ppa == PPA


def test_a_changed_golden_is_measured_again() -> None:
    est = Scripted(PPA)
    golden = service(est)
    golden.measure(TASK)
    edited = TASK.model_copy(update={"golden": (SourceFile(name="t.v", content="module t;\n"
                                                           "wire w; endmodule\n"),)})
    golden.measure(edited)
    assert est.calls == 2


def test_a_task_without_golden_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="no golden"):
        service(Scripted(PPA)).measure(Task(id="x", spec="", top="x"))
