"""The ``openai`` generator against a REAL OpenAI-compatible server (opt-in).

Run by ``make test-llm-server`` (``scripts/llm-server-test.sh``), which serves a tiny random
model with vLLM on CPU and sets the variables below; skipped as a whole module otherwise, so the
default ``pytest``/``make test`` run never touches the network. The model's output is gibberish:
what is checked is the real protocol path — both endpoints, parallel requests, per-request
timeouts, typed non-retried errors — and that an ``rtlforge explore`` run over the server left a
record for every sample.

Environment:

- ``RTLFORGE_LLM_SERVER_URL``: base URL including the API prefix (``http://127.0.0.1:8000/v1``);
- ``RTLFORGE_LLM_SERVER_MODEL``: served model name (default: the first id of ``/models``);
- ``RTLFORGE_LLM_SERVER_API_KEY``: bearer key, when the server wants one;
- ``RTLFORGE_LLM_EXPLORE_DIR``: run dir of the explore run to check (the explore test is
  skipped without it), with its shape in ``RTLFORGE_LLM_EXPLORE_{TASKS,ITERATIONS,TRIALS,N}``.
"""

from __future__ import annotations

import itertools
import json
import os
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

URL = os.environ.get("RTLFORGE_LLM_SERVER_URL", "").rstrip("/")
if not URL:
    pytest.skip("opt-in: set RTLFORGE_LLM_SERVER_URL (make test-llm-server does)",
                allow_module_level=True)

from rtlforge.core.errors import RtlforgeError  # noqa: E402 - after the opt-in guard
from rtlforge.core.interfaces import GenerationRequest, SamplingParams  # noqa: E402
from rtlforge.core.models import Verdict  # noqa: E402
from rtlforge.generation.base import (  # noqa: E402
    GenerationError,
    GenerationHTTPError,
    GenerationTimeout,
    RetryPolicy,
)
from rtlforge.plugins.generators.openai import OpenAIGenerator  # noqa: E402

KEY_ENV = "RTLFORGE_LLM_SERVER_API_KEY"
PROMPT = "Write a Verilog module mux2 with inputs a, b, sel and output y."
SHORT = SamplingParams(n=1, temperature=0.8, max_tokens=24, seed=0)


def _get_json(url: str) -> Any:
    request = urllib.request.Request(url)
    if key := os.environ.get(KEY_ENV):
        request.add_header("Authorization", f"Bearer {key}")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def model() -> str:
    name = os.environ.get("RTLFORGE_LLM_SERVER_MODEL")
    return name or str(_get_json(f"{URL}/models")["data"][0]["id"])


def _generator(model: str, **options: Any) -> OpenAIGenerator:
    options.setdefault("timeout", 60.0)
    return OpenAIGenerator(model=model, base_url=URL, api_key_env=KEY_ENV, **options)


def test_models_endpoint_lists_the_model(model: str) -> None:
    ids = [m["id"] for m in _get_json(f"{URL}/models")["data"]]
    assert model in ids


@pytest.mark.parametrize("mode", ["chat", "completions"])
def test_endpoint_answers_with_n_samples(model: str, mode: str) -> None:
    gen = _generator(model, mode=mode)
    params = SamplingParams(n=2, temperature=0.8, max_tokens=24, seed=0)
    out = gen.generate([GenerationRequest(prompt=PROMPT, request_id="probe")], params)
    assert len(out) == 1
    assert len(out[0]) == 2
    for g in out[0]:
        assert isinstance(g.text, str)
        assert g.generator == "openai"
        assert g.finish_reason in {"stop", "length"}
        assert g.latency_s is not None and g.latency_s > 0
    usage = gen.usage()
    assert usage.failures == 0
    assert usage.generations == 2
    assert usage.prompt_tokens > 0  # the server's usage block made it through


def test_parallel_requests_all_succeed(model: str) -> None:
    gen = _generator(model, mode="completions", max_concurrency=4)
    requests = [GenerationRequest(prompt=f"{PROMPT} ({i})", request_id=f"r{i}")
                for i in range(12)]
    params = SamplingParams(n=1, temperature=0.8, max_tokens=64, seed=0)
    out = gen.generate(requests, params)
    assert [len(gens) for gens in out] == [1] * len(requests)
    usage = gen.usage()
    assert usage.requests == len(requests)
    assert usage.failures == 0 and usage.retries == 0
    # More than one request was really in flight at once, and never more than the limit.
    assert 2 <= gen.peak_concurrency <= 4


def test_per_request_timeout_raises_typed_error(model: str) -> None:
    # No server finishes a chat request (HTTP, tokenise, schedule, decode) in 5 ms.
    gen = _generator(model, mode="chat", timeout=0.005,
                     retry=RetryPolicy(max_attempts=2, base_delay=0.0, jitter=0.0))
    params = SamplingParams(n=1, temperature=0.8, max_tokens=256, seed=0)
    start = time.monotonic()
    with pytest.raises(GenerationTimeout) as info:
        gen.generate([GenerationRequest(prompt=PROMPT)], params)
    elapsed = time.monotonic() - start
    assert isinstance(info.value, RtlforgeError)
    assert info.value.retryable  # a timeout is worth another try ...
    assert gen.usage().attempts == 2  # ... and got exactly the one the policy allows
    assert gen.usage().failures == 1
    assert elapsed < 5.0, f"the 5 ms deadline took {elapsed:.2f}s to fire"


def test_unknown_model_is_a_typed_error_and_not_retried(model: str) -> None:
    gen = _generator(f"{model}-no-such-model", mode="chat",
                     retry=RetryPolicy(max_attempts=4, base_delay=1.0))
    start = time.monotonic()
    with pytest.raises(GenerationHTTPError) as info:
        gen.generate([GenerationRequest(prompt=PROMPT)], SHORT)
    elapsed = time.monotonic() - start
    err = info.value
    assert err.status in (400, 404), err  # vLLM and OpenAI say 404; some gateways 400
    assert not err.retryable
    assert "no-such-model" in str(err) or "does not exist" in str(err)
    usage = gen.usage()
    assert usage.attempts == 1 and usage.retries == 0  # one request, no backoff
    assert elapsed < 1.0, f"took {elapsed:.2f}s: was it retried with backoff?"


def test_generator_is_usable_after_an_error(model: str) -> None:
    """A failed call leaves the instance working: the next call on it succeeds."""
    gen = _generator(model, mode="chat", retry=RetryPolicy(max_attempts=1))
    bad = _generator(f"{model}-no-such-model", mode="chat", retry=RetryPolicy(max_attempts=1))
    with pytest.raises(GenerationError):
        bad.generate([GenerationRequest(prompt=PROMPT)], SHORT)
    assert len(gen.generate([GenerationRequest(prompt=PROMPT)], SHORT)[0]) == 1


# ------------------------------------------------------------------ the explore run


def _explore_dir() -> Path:
    value = os.environ.get("RTLFORGE_LLM_EXPLORE_DIR")
    if not value:
        pytest.skip("RTLFORGE_LLM_EXPLORE_DIR not set (scripts/llm-server-test.sh sets it)")
    return Path(value)


def test_explore_run_has_a_record_for_every_sample() -> None:
    run_dir = _explore_dir()
    tasks = os.environ.get("RTLFORGE_LLM_EXPLORE_TASKS", "mux4,add8_carry").split(",")
    iterations = int(os.environ.get("RTLFORGE_LLM_EXPLORE_ITERATIONS", "2"))
    trials = int(os.environ.get("RTLFORGE_LLM_EXPLORE_TRIALS", "1"))
    n = int(os.environ.get("RTLFORGE_LLM_EXPLORE_N", "2"))

    for name in ("summary.json", "candidates.jsonl", "report.html"):
        assert (run_dir / name).is_file(), f"explore left no {name} in {run_dir}"
    records = [json.loads(line) for line in
               (run_dir / "candidates.jsonl").read_text(encoding="utf-8").splitlines() if line]
    keys = Counter((r["task"], r["trial"], r["iteration"], r["sample"]) for r in records)
    assert all(count == 1 for count in keys.values()), "a sample was recorded twice"

    seen_trials = sorted({k[1] for k in keys})
    seen_iterations = sorted({k[2] for k in keys})
    assert len(seen_trials) == trials and len(seen_iterations) == iterations
    expected = set(itertools.product(sorted(tasks), seen_trials, seen_iterations, range(n)))
    assert set(keys) == expected
    assert len(records) == len(tasks) * trials * iterations * n

    verdicts = {v.value for v in Verdict}
    for r in records:
        assert r["generator"] == "openai"
        assert r["verdict"] in verdicts
        assert r["latency_s"] is not None and r["latency_s"] > 0
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["explore"]["candidates"] == len(records)
