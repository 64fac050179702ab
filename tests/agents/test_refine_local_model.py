"""A tiny local model end to end: the loop talks to it through the openai generator over HTTP.

The model is random, so its answers are not designs; what is checked is the path a real model
takes: prompts rendered by the roles, sampling settings sent, real token counts summed into the
task's cost, and a design verdict (never an infrastructure one) for text that is not Verilog.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rtlforge.agents.orchestrator import Orchestrator
from rtlforge.agents.trace import ThoughtKind, read_trace
from rtlforge.core.models import Verdict
from rtlforge.tasks.loader import load_task

pytest.importorskip("transformers", reason="the local model server needs the [train] extra")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.tools
def test_refine_against_a_tiny_local_model_through_the_openai_generator(
        tiny_model: Path, tmp_path: Path) -> None:
    import torch

    from rtlforge.testing.openai_server import LocalModelServer

    torch.set_num_threads(1)
    task = load_task(ROOT / "examples" / "tasks" / "mux4")
    with LocalModelServer(tiny_model, max_new_tokens=16) as server, Orchestrator(
            generator="openai", generator_options={
                "model": "tiny", "base_url": server.url, "api_key_env": None},
            max_iterations=2, symbolic=False, run_dir=tmp_path) as orch:
        result = orch.solve(task)
        served = server.requests
    assert result.verdict in (Verdict.ERROR, Verdict.FAIL) and result.error is None
    assert result.iterations == 2 and result.llm_calls == 2 == served
    generations = [e for e in read_trace(tmp_path / "traces" / "mux4.jsonl")
                   if e.kind is ThoughtKind.GENERATION]
    counted = sum(e.data["prompt_tokens"] + e.data["completion_tokens"] for e in generations)
    assert result.tokens == counted > 0
    assert all(r.completion_tokens <= 16 for r in result.records)
