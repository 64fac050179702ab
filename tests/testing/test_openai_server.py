"""The local OpenAI-compatible server: real tokenisation and counts behind the openai generator."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtlforge.core.interfaces import GenerationRequest, SamplingParams

pytest.importorskip("transformers", reason="the local model server needs the [train] extra")


@pytest.fixture(scope="module")
def server(tiny_model: Path):  # type: ignore[no-untyped-def]
    import torch

    from rtlforge.testing.openai_server import LocalModelServer

    torch.set_num_threads(1)
    with LocalModelServer(tiny_model, max_new_tokens=12) as srv:
        yield srv


def test_openai_generator_samples_from_the_local_model(server) -> None:  # type: ignore[no-untyped-def]
    from rtlforge.plugins.generators.openai import OpenAIGenerator

    gen = OpenAIGenerator(model="local", base_url=server.url, api_key_env=None, n_mode="native")
    request = GenerationRequest(prompt="write an and gate", system="You write Verilog.")
    [out] = gen.generate([request], SamplingParams(n=2, temperature=0.8, max_tokens=8, seed=3))
    assert len(out) == 2 and all(isinstance(g.text, str) for g in out)
    messages = [{"role": "system", "content": "You write Verilog."},
                {"role": "user", "content": "write an and gate"}]
    prompt = server.tokenizer.apply_chat_template(messages, tokenize=False,
                                                  add_generation_prompt=True)
    expected_prompt_tokens = len(server.tokenizer(prompt).input_ids)
    usage = gen.usage()
    assert usage is not None and usage.prompt_tokens == expected_prompt_tokens
    assert 2 <= usage.completion_tokens <= 16  # two choices, at most 8 tokens each
    assert server.requests == 1


def test_bad_requests_get_a_400_not_a_crash(server) -> None:  # type: ignore[no-untyped-def]
    import http.client
    import json

    host, port = server.url.removeprefix("http://").split("/")[0].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("POST", "/v1/chat/completions", body=json.dumps({"messages": "hi"}),
                 headers={"Content-Type": "application/json"})
    reply = conn.getresponse()
    assert reply.status == 400 and b"messages" in reply.read()
    conn.request("POST", "/v1/nope", body="{}")
    assert conn.getresponse().status == 404


def test_the_command_line_serves_until_terminated(tiny_model: Path) -> None:
    # What the tutorials run: `python -m rtlforge.testing.openai_server MODEL_DIR --port N`.
    import json
    import os
    import signal
    import socket
    import subprocess
    import sys
    import urllib.request

    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rtlforge.testing.openai_server", str(tiny_model),
         "--port", str(port), "--max-new-tokens", "4"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip().endswith(f"http://127.0.0.1:{port}/v1")
        body = json.dumps({"prompt": "module", "max_tokens": 4}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as reply:
            answer = json.load(reply)
        assert answer["object"] == "text_completion" and len(answer["choices"]) == 1
        assert answer["usage"]["completion_tokens"] <= 4
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
