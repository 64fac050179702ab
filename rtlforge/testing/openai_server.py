"""A local OpenAI-compatible server around a Hugging Face model directory, for tests.

End-to-end tests of anything that talks to an LLM over HTTP (the ``openai`` generator, the
refinement loop) need a server that really tokenises, samples and counts tokens, without
network access or a GPU. This serves ``/v1/chat/completions`` and ``/v1/completions`` on
127.0.0.1 from a model loaded with ``transformers`` (e.g. the tiny random model of
:mod:`rtlforge.testing.tiny_model`). Usage numbers are the tokenizer's real counts; requests
are served one at a time (the model is not thread-safe). Needs the ``[train]`` extra.

    with LocalModelServer(model_dir) as server:
        gen = OpenAIGenerator(model="tiny", base_url=server.url, api_key_env=None)

From a shell, ``python -m rtlforge.testing.openai_server MODEL_DIR --port 8011`` serves until
interrupted, so the command-line tutorials can talk to a served model without a GPU or vLLM.
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["LocalModelServer"]

#: A request body larger than this is refused (the server only ever talks to tests).
MAX_BODY = 4 * 1024 * 1024


class LocalModelServer:
    """Serves one model on ``http://127.0.0.1:PORT/v1`` until :meth:`close`.

    ``max_new_tokens`` caps every completion, whatever the request asks, so a test with a random
    model stays fast. ``requests`` counts the completion requests served.
    """

    def __init__(self, model_dir: str | Path, *, max_new_tokens: int = 64,
                 model_name: str = "local", port: int = 0) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        self.model = AutoModelForCausalLM.from_pretrained(str(model_dir))
        self.model.eval()
        self.model_name = model_name
        self.max_new_tokens = max_new_tokens
        self.requests = 0
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True,
                                        name="rtlforge-local-model-server")
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def complete(self, body: dict[str, Any], *, chat: bool) -> dict[str, Any]:
        """One response body for a request body (the HTTP handler's work, callable directly)."""
        if chat:
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages:
                raise ValueError("'messages' must be a non-empty list")
            prompt = self.tokenizer.apply_chat_template(messages, tokenize=False,
                                                        add_generation_prompt=True)
        else:
            prompt = body.get("prompt")
            if not isinstance(prompt, str):
                raise ValueError("'prompt' must be a string")
        n = int(body.get("n") or 1)
        if not 1 <= n <= 16:
            raise ValueError("'n' must be between 1 and 16")
        limit = min(int(body.get("max_tokens") or self.max_new_tokens), self.max_new_tokens)
        temperature = float(body.get("temperature", 1.0))
        seed = body.get("seed")
        ids = self.tokenizer(prompt, return_tensors="pt").input_ids
        choices, completion_tokens = [], 0
        with self._lock:
            self.requests += 1
            for index in range(n):
                if seed is not None:
                    self._torch.manual_seed(int(seed) + index)
                with self._torch.no_grad():
                    out = self.model.generate(
                        ids, max_new_tokens=limit, do_sample=temperature > 0,
                        temperature=max(temperature, 1e-3), top_p=float(body.get("top_p", 1.0)),
                        pad_token_id=self.tokenizer.pad_token_id)
                new = out[0, ids.shape[1]:]
                completion_tokens += int(new.shape[0])
                text = self.tokenizer.decode(new, skip_special_tokens=True)
                finish = "length" if new.shape[0] >= limit else "stop"
                choice: dict[str, Any] = {"index": index, "finish_reason": finish}
                if chat:
                    choice["message"] = {"role": "assistant", "content": text}
                else:
                    choice["text"] = text
                choices.append(choice)
        return {"id": f"local-{self.requests}", "object": "chat.completion" if chat
                else "text_completion", "created": int(time.time()), "model": self.model_name,
                "choices": choices,
                "usage": {"prompt_tokens": int(ids.shape[1]),
                          "completion_tokens": completion_tokens,
                          "total_tokens": int(ids.shape[1]) + completion_tokens}}

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> LocalModelServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _handler(server: LocalModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # the library stays quiet
            return

        def do_POST(self) -> None:
            path = self.path.rstrip("/")
            if path not in ("/v1/chat/completions", "/v1/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self._send(413, {"error": {"message": "request body too large"}})
                return
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("the body must be a JSON object")
                reply = server.complete(body, chat=path.endswith("chat/completions"))
            except (ValueError, TypeError) as exc:
                self._send(400, {"error": {"message": str(exc)}})
                return
            self._send(200, reply)

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def main(argv: list[str] | None = None) -> int:
    """Serve ``MODEL_DIR`` on ``127.0.0.1:PORT`` until SIGINT or SIGTERM; prints the base URL."""
    parser = argparse.ArgumentParser(
        prog="python -m rtlforge.testing.openai_server",
        description="Serve a local Hugging Face model directory as an OpenAI-compatible API on "
                    "127.0.0.1 (for tutorials and tests; one request at a time).")
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--max-new-tokens", type=int, default=64,
                        help="cap on every completion, whatever the request asks")
    parser.add_argument("--model-name", default="local", help="the model name responses carry")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with LocalModelServer(args.model_dir, max_new_tokens=args.max_new_tokens,
                          model_name=args.model_name, port=args.port) as server:
        print(f"serving {args.model_dir} at {server.url}", flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
