"""The router state: 40 documented features + a 128-dim deterministic spec identifier."""

from __future__ import annotations

import ast
import math
import re
import subprocess
import sys
from pathlib import Path

from rtlforge.agents.models import IterationRecord, RouterContext, Tier
from rtlforge.agents.router.features import (
    FEATURES,
    SPEC_DIMS,
    STATE_DIM,
    spec_id,
    state_vector,
)
from rtlforge.core.models import Verdict

DOC = Path(__file__).resolve().parents[3] / "docs" / "router.md"


def _record(i: int, agent: str, category: str | None, errors: int, stages: tuple[str, ...],
            verdict: Verdict = Verdict.ERROR) -> IterationRecord:
    return IterationRecord(iteration=i, tier=Tier.ROUTER, agent=agent, verdict=verdict,
                           stages_passed=stages, error_count=errors, error_category=category,
                           prompt_tokens=100, completion_tokens=100)


def test_the_state_has_40_structural_features_and_128_spec_dims() -> None:
    assert len(FEATURES) == 40 and SPEC_DIMS == 128 and STATE_DIM == 168
    assert len({f.name for f in FEATURES}) == 40
    assert len(state_vector(RouterContext(task_id="t", spec="x"))) == 168


def test_features_follow_their_definitions() -> None:
    ctx = RouterContext(
        task_id="t", spec="An FSM with a FIFO and a counter.", ports=8, max_iterations=5,
        iteration=2, history=(_record(0, "fast", "syntax", 3, ("security",)),
                              _record(1, "debug", "syntax", 1, ("security",))))
    values = dict(zip((f.name for f in FEATURES), state_vector(ctx), strict=False))
    assert values["progress"] == 2 / 5 and values["remaining"] == 3 / 5
    assert values["ports"] == 8 / 32
    assert values["complexity"] == 3 / 5  # fsm, fifo, counter
    assert values["error_syntax"] == 1.0 and values["error_functional"] == 0.0
    assert values["error_delta"] == -1.0  # 3 errors, then 1
    assert values["category_repeated"] == 1.0
    assert values["share_fast"] == 0.5 and values["share_debug"] == 0.5
    assert values["same_agent_streak"] == 1 / 5
    assert values["last_stages"] == 1 / 4 and values["stage_delta"] == 0.0
    assert values["verdict_error"] == 1.0 and values["first_iteration"] == 0.0
    assert values["tokens_used"] == math.log1p(400) / math.log1p(100_000)


def test_spec_id_is_unit_length_and_the_same_in_another_process() -> None:
    spec = "Build a 4-bit counter with synchronous reset"
    here = spec_id(spec)
    assert abs(math.sqrt(sum(v * v for v in here)) - 1.0) < 1e-9
    code = ("from rtlforge.agents.router.features import spec_id;"
            f"print(repr(spec_id({spec!r})))")
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={"PYTHONHASHSEED": "123",
                                            "PYTHONPATH": ":".join(sys.path)}).stdout
    assert ast.literal_eval(there) == here
    assert spec_id("") == (0.0,) * SPEC_DIMS
    assert spec_id(spec) != spec_id("Build an 8-bit shift register")


def test_the_docs_table_lists_every_feature_in_order() -> None:
    rows = re.findall(r"^\| (\d+) \| `([a-z_]+)` \| ([a-z]+) \|", DOC.read_text(), re.M)
    assert [(int(n), name, group) for n, name, group in rows] == [
        (i + 1, f.name, f.group) for i, f in enumerate(FEATURES)]
