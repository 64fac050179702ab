"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

Each POST to ``/v1/chat/completions`` gets the next scripted reply: a message object (sent in a
normal completion body), or an ``(status, body)`` pair sent as it is. Request bodies are kept in
``requests`` so a test can check what the client sent (the tools, the tool results).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments}}


class ScriptedOpenAIServer:
    def __init__(self, replies: Sequence[dict[str, Any] | tuple[int, Any]]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedOpenAIServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next(self, body: dict[str, Any]) -> tuple[int, Any]:
        with self._lock:
            index = len(self.requests)
            self.requests.append(body)
            if index >= len(self.replies):
                return 500, {"error": {"message": "the script is over"}}
            reply = self.replies[index]
        if isinstance(reply, tuple):
            return reply
        return 200, {"id": f"fake-{index}", "object": "chat.completion", "model": "fake",
                     "choices": [{"index": 0, "message": {"role": "assistant", **reply},
                                  "finish_reason": "tool_calls" if reply.get("tool_calls")
                                  else "stop"}],
                     "usage": {"prompt_tokens": 100, "completion_tokens": 10,
                               "total_tokens": 110}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    status, payload = 404, {"error": {"message": "no route"}}
                else:
                    status, payload = server._next(body)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
