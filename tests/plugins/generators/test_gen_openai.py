"""The ``openai`` generator against a local OpenAI-compatible server (no internet).

The fake server runs on 127.0.0.1 with an ephemeral port and plays a script of behaviours
(fixed answers, 429, 500, hangs, bad JSON, floods, n>1 refusal) while counting requests and
the most it ever had in flight, so limits are checked where they matter: at the server.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import rtlforge.plugins.generators.openai as gen_openai
from rtlforge.core.interfaces import GenerationRequest, SamplingParams
from rtlforge.core.models import Task
from rtlforge.core.plugins import PluginHost
from rtlforge.generation.base import (
    GenerationCancelled,
    GenerationConnectionError,
    GenerationError,
    GenerationHTTPError,
    GenerationTimeout,
    MalformedResponseError,
    ResponseTooLargeError,
    RetryPolicy,
    parse_retry_after,
)
from rtlforge.plugins.generators.openai import OpenAIGenerator

pytestmark = pytest.mark.timeout(30)

KEY_ENV = "RTLFORGE_TEST_OPENAI_KEY"
SECRET = "sk-test-0123456789-very-secret"
VERILOG = ("Here you go:\n```verilog\nmodule adder(input a, output y);\n  assign y = a;\n"
           "endmodule\n```")
FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05)


class FakeOpenAI(ThreadingHTTPServer):
    """A scriptable OpenAI-compatible server; ``script`` is consumed one entry per request."""

    daemon_threads = True
    block_on_close = False

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: list[str] = []
        self.default = "ok"
        self.text = VERILOG
        self.retry_after = "1"
        self.delay = 0.0
        self.reject_n = False
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.seen: list[dict[str, Any]] = []
        self.release = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def next_behaviour(self) -> str:
        with self.lock:
            return self.script.pop(0) if self.script else self.default

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up (timeouts, cancel) are expected; keep test output clean."""


class _Handler(BaseHTTPRequestHandler):
    server: FakeOpenAI

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        srv = self.server
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        with srv.lock:
            srv.seen.append({"path": self.path, "headers": dict(self.headers), "body": body})
            srv.in_flight += 1
            srv.max_in_flight = max(srv.max_in_flight, srv.in_flight)
        self._answered = False
        try:
            self._behave(srv.next_behaviour(), body)
        finally:
            self._leave()

    def _leave(self) -> None:
        """The request stops counting as in flight once its answer starts: the client may send
        its next request the moment it has read this one, before this thread returns."""
        if not self._answered:
            self._answered = True
            with self.server.lock:
                self.server.in_flight -= 1

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        self._leave()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if "Content-Length" not in (headers or {}):
            self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _ok(self, body: dict[str, Any], n: int) -> None:
        chat = self.path.endswith("/chat/completions")
        choices = [
            {"index": i, "finish_reason": "stop",
             **({"message": {"role": "assistant", "content": self.server.text}} if chat
                else {"text": self.server.text})}
            for i in range(n)
        ]
        # Reversed on purpose: the client must order choices by their index.
        self._send(200, json.dumps({
            "id": "cmpl-1", "model": body["model"] + "-served", "choices": choices[::-1],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7 * n, "total_tokens": 0},
        }).encode())

    def _behave(self, what: str, body: dict[str, Any]) -> None:
        srv = self.server
        n = int(body.get("n", 1))
        if what == "ok":
            if srv.reject_n and n > 1:
                self._send(400, b'{"error": {"message": "n > 1 is not supported"}}')
            else:
                time.sleep(srv.delay)
                self._ok(body, n)
        elif what == "one_choice":
            self._ok(body, 1)
        elif what == "429":
            self._send(429, b'{"error": {"message": "slow down"}}',
                       {"Retry-After": srv.retry_after})
        elif what in ("500", "404"):
            self._send(int(what), b'{"error": {"message": "boom"}}')
        elif what == "echo_key":
            self._send(401, json.dumps({"error": {
                "message": f"bad key {self.headers.get('Authorization')}"}}).encode())
        elif what == "hang":
            srv.release.wait(10)
        elif what == "badjson":
            self._send(200, b'{"choices": [ not json')
        elif what == "no_choices":
            self._send(200, b'{"id": "x", "choices": []}')
        elif what == "huge_declared":
            self._send(200, b"{}", {"Content-Length": str(10**9)})
        elif what == "huge_streamed":  # no Content-Length: read until the server closes
            self.send_response(200)
            self.end_headers()
            chunk = b" " * 65536
            for _ in range(64):
                self.wfile.write(chunk)
        else:  # pragma: no cover - a typo in a test
            raise AssertionError(what)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    srv = FakeOpenAI()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.release.set()
        srv.shutdown()
        srv.server_close()
        thread.join(5)


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


def make(server: FakeOpenAI, **kwargs: Any) -> OpenAIGenerator:
    kwargs.setdefault("retry", FAST)
    kwargs.setdefault("timeout", 5.0)
    return OpenAIGenerator(model="test-model", base_url=server.url, api_key_env=KEY_ENV,
                           **kwargs)


TASK = Task(id="adder", spec="build an adder", top="adder")


def req(prompt: str = "write an adder", **kwargs: Any) -> GenerationRequest:
    return GenerationRequest(prompt=prompt, task=TASK, **kwargs)


# -------------------------------------------------------------------------- happy paths


def test_chat_request_mapping_usage_and_extraction(server: FakeOpenAI, key: str) -> None:
    gen = make(server)
    params = SamplingParams(n=1, temperature=0.2, top_p=0.9, max_tokens=64, seed=7,
                            stop=("endmodule\n\n",))
    [[g]] = gen.generate([req(system="you write Verilog", request_id="r1")], params)
    sent = server.seen[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == f"Bearer {key}"
    assert sent["body"] == {
        "model": "test-model",
        "messages": [{"role": "system", "content": "you write Verilog"},
                     {"role": "user", "content": "write an adder"}],
        "temperature": 0.2, "top_p": 0.9, "max_tokens": 64, "seed": 7,
        "stop": ["endmodule\n\n"],
    }
    assert g.text == VERILOG and g.generator == "openai" and g.model == "test-model"
    assert (g.prompt_tokens, g.completion_tokens, g.finish_reason) == (11, 7, "stop")
    assert g.latency_s is not None and g.latency_s > 0
    assert g.metadata["attempts"] == 1 and g.metadata["served_model"] == "test-model-served"
    assert g.candidate is not None and g.candidate.task_id == "adder"
    assert g.candidate.files[0].content.startswith("module adder")
    assert g.candidate.provenance.prompt_id == "r1"
    usage = gen.usage()
    assert (usage.requests, usage.attempts, usage.generations) == (1, 1, 1)
    assert (usage.prompt_tokens, usage.completion_tokens, usage.retries) == (11, 7, 0)


def test_completions_mode_prepends_system_and_reads_text(server: FakeOpenAI, key: str) -> None:
    gen = make(server, mode="completions", system_prompt="// Verilog only", extra_body={
        "repetition_penalty": 1.1, "model": "cannot-override"})
    [[g]] = gen.generate([req()], SamplingParams())
    sent = server.seen[0]
    assert sent["path"] == "/v1/completions"
    assert sent["body"]["prompt"] == "// Verilog only\n\nwrite an adder"
    assert sent["body"]["model"] == "test-model"
    assert sent["body"]["repetition_penalty"] == 1.1
    assert "n" not in sent["body"] and "seed" not in sent["body"]
    assert g.text == VERILOG and g.candidate is not None


def test_results_follow_request_order(server: FakeOpenAI, key: str) -> None:
    server.delay = 0.02
    gen = make(server, max_concurrency=4)
    requests = [req(f"prompt {i}", request_id=str(i)) for i in range(8)]
    out = gen.generate(requests, SamplingParams())
    assert [o[0].candidate.provenance.prompt_id for o in out] == [str(i) for i in range(8)]
    assert gen.generate([], SamplingParams()) == []


def test_native_n_in_one_request(server: FakeOpenAI, key: str) -> None:
    gen = make(server)
    [gens] = gen.generate([req()], SamplingParams(n=3))
    assert len(server.seen) == 1 and server.seen[0]["body"]["n"] == 3
    assert len(gens) == 3
    assert [g.candidate.provenance.sample_index for g in gens] == [0, 1, 2]
    # One usage total covers all choices: per-sample counts are unknown, never invented.
    assert all(g.completion_tokens is None for g in gens)
    assert gens[0].metadata["request_completion_tokens"] == 21
    assert gen.usage().completion_tokens == 21


def test_rejected_n_falls_back_to_separate_requests(server: FakeOpenAI, key: str) -> None:
    server.reject_n = True
    gen = make(server)
    [gens] = gen.generate([req()], SamplingParams(n=3, seed=100))
    assert len(gens) == 3
    bodies = [s["body"] for s in server.seen]
    assert bodies[0]["n"] == 3
    assert sorted(b["seed"] for b in bodies[1:]) == [100, 101, 102]
    assert all("n" not in b for b in bodies[1:])
    # Learned: the next batch goes straight to single requests.
    server.seen.clear()
    gen.generate([req()], SamplingParams(n=2))
    assert len(server.seen) == 2 and all("n" not in s["body"] for s in server.seen)


def test_server_ignoring_n_is_topped_up(server: FakeOpenAI, key: str) -> None:
    server.script = ["one_choice"]
    gen = make(server)
    [gens] = gen.generate([req()], SamplingParams(n=3))
    assert len(gens) == 3 and len(server.seen) == 3


def test_separate_mode_never_sends_n(server: FakeOpenAI, key: str) -> None:
    gen = make(server, n_mode="separate")
    [gens] = gen.generate([req()], SamplingParams(n=2))
    assert len(gens) == 2 and all("n" not in s["body"] for s in server.seen)


def test_prose_answer_keeps_text_without_candidate(server: FakeOpenAI, key: str) -> None:
    server.text = "I cannot help with that."
    [[g]] = make(server).generate([req()], SamplingParams())
    assert g.text == "I cannot help with that." and g.candidate is None
    assert "no Verilog module" in g.metadata["extraction_error"]


# -------------------------------------------------------------------------- retries/errors


def test_429_honours_retry_after(server: FakeOpenAI, key: str) -> None:
    server.script = ["429", "ok"]
    gen = make(server, retry=RetryPolicy(max_attempts=3, base_delay=0.0))
    start = time.monotonic()
    [[g]] = gen.generate([req()], SamplingParams())
    assert time.monotonic() - start >= 0.9  # Retry-After: 1, not the 0 s backoff
    assert g.metadata["attempts"] == 2
    assert gen.usage().retries == 1 and gen.usage().attempts == 2


def test_500_retried_then_success(server: FakeOpenAI, key: str) -> None:
    server.script = ["500", "500", "ok"]
    gen = make(server)
    [[g]] = gen.generate([req()], SamplingParams())
    assert g.metadata["attempts"] == 3 and len(server.seen) == 3


def test_500_exhausts_retries_with_typed_error(server: FakeOpenAI, key: str) -> None:
    server.default = "500"
    gen = make(server)
    with pytest.raises(GenerationHTTPError) as info:
        gen.generate([req()], SamplingParams())
    assert info.value.status == 500 and info.value.attempts == 3
    assert "boom" in str(info.value) and len(server.seen) == 3
    assert gen.usage().failures == 1


def test_404_is_not_retried(server: FakeOpenAI, key: str) -> None:
    server.default = "404"
    with pytest.raises(GenerationHTTPError) as info:
        make(server).generate([req()], SamplingParams())
    assert info.value.status == 404 and info.value.attempts == 1 and not info.value.retryable
    assert "base_url" in str(info.value) and len(server.seen) == 1


def test_hang_times_out_after_retries(server: FakeOpenAI, key: str) -> None:
    server.default = "hang"
    gen = make(server, timeout=0.3, retry=RetryPolicy(max_attempts=2, base_delay=0.01))
    start = time.monotonic()
    with pytest.raises(GenerationTimeout) as info:
        gen.generate([req()], SamplingParams())
    assert time.monotonic() - start < 3.0
    assert info.value.attempts == 2 and len(server.seen) == 2


def test_malformed_json_is_typed_and_not_retried(server: FakeOpenAI, key: str) -> None:
    server.default = "badjson"
    with pytest.raises(MalformedResponseError, match="invalid JSON"):
        make(server).generate([req()], SamplingParams())
    assert len(server.seen) == 1


def test_empty_choices_is_an_error_not_empty_text(server: FakeOpenAI, key: str) -> None:
    server.default = "no_choices"
    with pytest.raises(MalformedResponseError, match="choices"):
        make(server).generate([req()], SamplingParams())


@pytest.mark.parametrize("what", ["huge_declared", "huge_streamed"])
def test_huge_body_is_refused(server: FakeOpenAI, key: str, what: str) -> None:
    server.default = what
    with pytest.raises(ResponseTooLargeError):
        make(server, max_response_bytes=256 * 1024).generate([req()], SamplingParams())


def test_connection_refused_is_typed(key: str) -> None:
    probe = FakeOpenAI()
    url = probe.url
    probe.server_close()  # nothing listens on that port any more
    gen = OpenAIGenerator(model="m", base_url=url, api_key_env=KEY_ENV, retry=FAST)
    with pytest.raises(GenerationConnectionError) as info:
        gen.generate([req()], SamplingParams())
    assert info.value.attempts == 3


def test_batch_fails_whole_on_first_hard_error(server: FakeOpenAI, key: str) -> None:
    server.script = ["404"]
    with pytest.raises(GenerationHTTPError):
        make(server, max_concurrency=1).generate([req(), req(), req()], SamplingParams())


# -------------------------------------------------------------------------- concurrency


def test_concurrency_limit_holds_at_the_server(server: FakeOpenAI, key: str) -> None:
    # long enough that three requests overlap at the server even on a loaded machine (at 0.1 s
    # only two did once, with the test suite running beside it); the server stops counting a
    # request when its answer starts, as the client frees its slot on reading it
    server.delay = 0.3
    gen = make(server, max_concurrency=3)
    out = gen.generate([req(f"p{i}") for i in range(12)], SamplingParams())
    assert len(out) == 12 and server.max_in_flight == 3
    assert gen.peak_concurrency == 3


def test_concurrency_limit_spans_concurrent_calls(server: FakeOpenAI, key: str) -> None:
    server.delay = 0.1
    gen = make(server, max_concurrency=2)
    threads = [threading.Thread(target=gen.generate, args=([req(), req(), req()],
                                                            SamplingParams()))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(server.seen) == 9 and server.max_in_flight <= 2


# -------------------------------------------------------------------------- cancellation


def _run_in_thread(gen: OpenAIGenerator, requests: list[GenerationRequest]
                   ) -> tuple[threading.Thread, dict[str, Any]]:
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            result["out"] = gen.generate(requests, SamplingParams())
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            result["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, result


def _wait_for(predicate: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition never became true"
        time.sleep(0.01)


def test_cancel_stops_in_flight_and_pending_requests(server: FakeOpenAI, key: str) -> None:
    server.default = "hang"
    gen = make(server, max_concurrency=2, timeout=20.0)
    thread, result = _run_in_thread(gen, [req() for _ in range(6)])
    _wait_for(lambda: len(server.seen) == 2)
    start = time.monotonic()
    gen.cancel()
    thread.join(3)
    assert not thread.is_alive() and time.monotonic() - start < 2.0
    assert isinstance(result["error"], GenerationCancelled)
    assert len(server.seen) == 2  # the four pending requests were never sent
    assert gen.usage().cancelled >= 2
    # cancel() stops the calls in progress, not the generator.
    server.default = "ok"
    assert len(gen.generate([req()], SamplingParams())) == 1


def test_cancel_interrupts_backoff(server: FakeOpenAI, key: str) -> None:
    server.default = "500"
    gen = make(server, retry=RetryPolicy(max_attempts=5, base_delay=30.0, jitter=0.0))
    thread, result = _run_in_thread(gen, [req()])
    _wait_for(lambda: len(server.seen) == 1)
    time.sleep(0.05)
    gen.cancel()
    thread.join(2)
    assert not thread.is_alive() and isinstance(result["error"], GenerationCancelled)


def test_close_refuses_new_calls(server: FakeOpenAI, key: str) -> None:
    with make(server) as gen:
        gen.generate([req()], SamplingParams())
    with pytest.raises(GenerationError, match="closed"):
        gen.generate([req()], SamplingParams())


# -------------------------------------------------------------------------- secrets


def test_api_key_never_in_logs_repr_or_errors(server: FakeOpenAI, key: str,
                                              capsys: pytest.CaptureFixture[str],
                                              caplog: pytest.LogCaptureFixture) -> None:
    gen = make(server)
    server.script = ["500", "429", "ok", "echo_key"]
    server.retry_after = "0"
    caplog.set_level(logging.DEBUG, logger="rtlforge")
    gen.generate([req()], SamplingParams())
    with pytest.raises(GenerationHTTPError) as info:
        gen.generate([req()], SamplingParams())
    assert server.seen[0]["headers"]["Authorization"] == f"Bearer {key}"
    assert info.value.status == 401 and "***" in str(info.value)
    assert any("event=generation_retry" in r.getMessage() for r in caplog.records)
    out = capsys.readouterr()
    haystack = " ".join([repr(gen), str(gen.__dict__.get("_headers")), str(info.value),
                         out.out, out.err, caplog.text])
    assert key not in haystack
    assert "set" in repr(gen) and KEY_ENV in repr(gen)


def test_no_key_means_no_authorization_header(server: FakeOpenAI,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    make(server).generate([req()], SamplingParams())
    assert "Authorization" not in server.seen[0]["headers"]


# -------------------------------------------------------------------------- config and helpers


@pytest.mark.parametrize("url", ["ftp://host/v1", "http://user:pw@host/v1", "localhost:8000",
                                 "http://host/v1?x=1"])
def test_bad_base_url_is_refused(url: str) -> None:
    with pytest.raises(ValueError):
        OpenAIGenerator(model="m", base_url=url)


def test_authorization_header_cannot_be_smuggled() -> None:
    with pytest.raises(ValueError, match="api_key_env"):
        OpenAIGenerator(model="m", base_url="http://h/v1", headers={"authorization": "x"})


def test_retry_after_parsing_and_backoff_bounds() -> None:
    import random

    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.5") == 0.5
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
    policy = RetryPolicy(base_delay=1.0, multiplier=2.0, max_delay=5.0, jitter=0.5,
                         max_retry_after=10.0)
    rng = random.Random(0)
    for attempt, cap in ((1, 1.0), (2, 2.0), (3, 4.0), (6, 5.0)):
        delays = [policy.delay(attempt, None, rng) for _ in range(50)]
        assert all(0.5 * cap <= d <= 1.5 * cap for d in delays)
        assert len(set(delays)) > 1  # jittered
    assert policy.delay(1, 3.0, rng) == 3.0
    assert policy.delay(1, 3600.0, rng) == 10.0  # a hostile Retry-After is capped


def test_registered_as_plugin() -> None:
    host = PluginHost(load_entrypoints=False, plugins=[("openai", gen_openai)])
    assert host.get("generator", "openai") is OpenAIGenerator
