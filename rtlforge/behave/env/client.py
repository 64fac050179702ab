"""An agent backed by any OpenAI-compatible ``/chat/completions`` server with tool calls.

The project's ``openai`` generator plugin (rtlforge/plugins/generators/openai.py) samples
text; it has no tool calls, and the architecture's layers do not let ``behave`` import a
plugin. This is a minimal client on the same dependency (the standard library's
``http.client``) and reuses the service package's machinery (``rtlforge.generation.base``:
typed ``GenerationError``s, ``RetryPolicy`` and ``call_with_retries``), so a server failure
reads here as it does in the generator: an infrastructure error, never an empty reply.

The server is untrusted: bodies are size-capped, JSON is validated, the API key never reaches
a message. A reply's tool calls are kept as sent (arguments as text, even when not JSON:
the environment answers that with an ``invalid_json`` result the model can correct); a reply
with neither text nor tool calls, or no choices, is a ``MalformedResponseError``.
"""

from __future__ import annotations

import http.client
import json
import os
import random
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from rtlforge.behave.env.messages import AgentReply, Message, ToolCall
from rtlforge.core.untrusted import load_json
from rtlforge.generation.base import (
    CancelToken,
    GenerationConnectionError,
    GenerationError,
    GenerationHTTPError,
    GenerationTimeout,
    MalformedResponseError,
    ResponseTooLargeError,
    RetryPolicy,
    call_with_retries,
    parse_retry_after,
)

__all__ = ["OpenAIToolAgent"]

_RETRY_STATUSES = frozenset({408, 409, 429})


class OpenAIToolAgent:
    """``respond`` posts the conversation and the tools; one request per turn.

    ``base_url`` includes the API prefix (``http://127.0.0.1:8000/v1``). The key is read from
    ``api_key_env`` (unset: no Authorization header). ``timeout`` bounds each attempt's
    socket operations; ``retry`` the attempts (429/5xx/connection errors are retried).
    """

    def __init__(self, *, model: str, base_url: str, api_key_env: str | None = "OPENAI_API_KEY",
                 temperature: float = 0.2, max_tokens: int = 4096, timeout: float = 300.0,
                 retry: RetryPolicy | None = None, max_response_bytes: int = 8 * 1024 * 1024,
                 extra_body: dict[str, Any] | None = None, seed: int | None = None,
                 max_tokens_field: str = "max_tokens") -> None:
        url = urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"base_url must be an http(s) URL, not {base_url!r}")
        if url.username or url.password or url.query or url.fragment:
            raise ValueError("base_url must not carry credentials, a query or a fragment")
        if not model:
            raise ValueError("model is required")
        if timeout <= 0 or max_tokens < 1 or max_response_bytes < 1024:
            raise ValueError("timeout > 0, max_tokens >= 1, max_response_bytes >= 1024")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = float(timeout)
        self.retry = retry or RetryPolicy()
        self.max_response_bytes = max_response_bytes
        self.extra_body = dict(extra_body or {})
        self.max_tokens_field = max_tokens_field  # "max_completion_tokens" for newer APIs
        self._https = url.scheme == "https"
        self._host = url.hostname
        self._port = url.port or (443 if self._https else 80)
        self._path = url.path.rstrip("/") + "/chat/completions"
        self._api_key = os.environ.get(api_key_env) if api_key_env else None
        self._rng = random.Random(seed)
        self.requests = 0

    def __repr__(self) -> str:
        return f"OpenAIToolAgent(model={self.model!r}, base_url={self.base_url!r})"

    def respond(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
                ) -> AgentReply:
        body: dict[str, Any] = {
            "model": self.model, "messages": [m.to_openai() for m in messages],
            "tools": list(tools), "tool_choice": "auto", "temperature": self.temperature,
            self.max_tokens_field: self.max_tokens}
        for key, value in self.extra_body.items():
            body.setdefault(key, value)
        data = json.dumps(body).encode()
        reply, _ = call_with_retries(lambda _attempt: self._post(data), policy=self.retry,
                                     token=CancelToken(), rng=self._rng)
        return reply

    # ------------------------------------------------------------------ HTTP

    def _post(self, data: bytes) -> AgentReply:
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=self.timeout)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        self.requests += 1
        try:
            conn.request("POST", self._path, body=data, headers=headers)
            response = conn.getresponse()
            raw = response.read(self.max_response_bytes + 1)
        except TimeoutError:
            raise GenerationTimeout(f"no response from {self._host} within "
                                    f"{self.timeout:g}s") from None
        except (OSError, http.client.HTTPException) as exc:
            raise GenerationConnectionError(f"cannot talk to {self._host}:{self._port}: "
                                            f"{type(exc).__name__}: {self._scrub(str(exc))}"
                                            ) from None
        finally:
            conn.close()
        if len(raw) > self.max_response_bytes:
            raise ResponseTooLargeError(f"response exceeds {self.max_response_bytes} bytes")
        if not 200 <= response.status < 300:
            snippet = self._scrub(" ".join(raw[:300].decode("utf-8", "replace").split()))
            raise GenerationHTTPError(
                f"{self._host} answered HTTP {response.status}: {snippet}",
                status=response.status,
                retryable=response.status in _RETRY_STATUSES or response.status >= 500,
                retry_after=parse_retry_after(response.getheader("Retry-After")))
        return self._parse(raw)

    def _scrub(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    def _parse(self, raw: bytes) -> AgentReply:
        try:
            obj = load_json(raw)
        except (ValueError, RecursionError):
            raise MalformedResponseError(f"{self._host} returned invalid JSON") from None
        if not isinstance(obj, dict):
            raise MalformedResponseError(f"{self._host} returned JSON that is not an object")
        choices = obj.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            detail = obj.get("error")
            raise GenerationError(f"{self._host} returned no choices"
                                  + (f": {self._scrub(str(detail))[:300]}" if detail else ""))
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise MalformedResponseError("the choice has no message")
        content = message.get("content")
        content = content if isinstance(content, str) else None
        calls = _tool_calls(message.get("tool_calls"), prefix=f"call_{self.requests}")
        if content is None and not calls:
            raise MalformedResponseError("the message has neither content nor tool calls")
        usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else {}
        finish = choice.get("finish_reason")
        return AgentReply(content=content, tool_calls=calls,
                          prompt_tokens=_count(usage.get("prompt_tokens")),
                          completion_tokens=_count(usage.get("completion_tokens")),
                          finish_reason=finish if isinstance(finish, str) else None)


def _tool_calls(raw: object, *, prefix: str) -> tuple[ToolCall, ...]:
    """Tool calls as sent; an entry without a function name is kept with an empty name (the
    environment answers it as an unknown tool), arguments that are an object are re-encoded
    (some servers send one), anything else becomes its text; a missing id gets
    ``<prefix>_<n>``."""
    if not isinstance(raw, list):
        return ()
    out: list[ToolCall] = []
    for n, item in enumerate(raw):
        if not isinstance(item, dict):
            continue
        fn = item.get("function") if isinstance(item.get("function"), dict) else {}
        name = fn.get("name") if isinstance(fn.get("name"), str) else ""
        args = fn.get("arguments")
        if isinstance(args, dict | list):
            args = json.dumps(args)
        elif args is None:
            args = ""
        elif not isinstance(args, str):
            args = str(args)
        call_id = item.get("id") if isinstance(item.get("id"), str) and item.get("id") \
            else f"{prefix}_{n}"
        out.append(ToolCall(id=call_id, name=name, arguments=args))
    return tuple(out)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
