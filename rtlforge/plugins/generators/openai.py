"""``openai`` generator: any OpenAI-compatible HTTP server (vLLM, SGLang, TGI, hosted APIs).

Built on the standard library (``http.client`` + threads) rather than the ``openai`` SDK or
httpx: the core stays dependency-free for offline use, and owning the socket is what lets
``cancel()`` abort a request mid-read and a per-request deadline bound the whole exchange
(connect, headers and body), which a per-read socket timeout alone does not.

The server is untrusted: bodies are size-capped, JSON is validated, error snippets are
truncated and scrubbed of the API key, and every failure is a typed
:class:`~rtlforge.generation.base.GenerationError` — never an empty completion.
"""

from __future__ import annotations

import contextlib
import dataclasses
import http.client
import json
import os
import random
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from importlib import metadata
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.interfaces import (
    Generation,
    GenerationRequest,
    SamplingParams,
)
from rtlforge.core.log import get_logger
from rtlforge.core.untrusted import load_json
from rtlforge.generation.base import (
    CancelToken,
    ConcurrencyLimiter,
    GenerationCancelled,
    GenerationConnectionError,
    GenerationError,
    GenerationHTTPError,
    GenerationTimeout,
    MalformedResponseError,
    ResponseTooLargeError,
    RetryPolicy,
    ScopedGenerator,
    call_with_retries,
    make_generation,
    parse_retry_after,
)

log = get_logger("rtlforge.generators.openai")

Mode = Literal["chat", "completions"]
NMode = Literal["auto", "native", "separate"]

#: Statuses worth another attempt (the same set the official SDKs retry).
_RETRY_STATUSES = frozenset({408, 409, 429})
#: Statuses a server uses to refuse ``n > 1`` (vLLM beam/pooling limits, TGI, some gateways).
_N_REJECT_STATUSES = frozenset({400, 422})
_SNIPPET_CHARS = 300
_READ_CHUNK = 64 * 1024


def _version() -> str:
    """The installed rtlforge version, for the User-Agent (a source tree without metadata: 0)."""
    try:
        return metadata.version("rtlforge")
    except metadata.PackageNotFoundError:
        return "0"


class _NRejected(Exception):
    """Internal: the server refused ``n > 1``; the scheduler falls back to single requests."""


@dataclass(frozen=True)
class _Job:
    index: int  # request index
    n: int  # choices asked for in this HTTP request
    offset: int  # position of the first choice among the request's samples (and seed offset)


@dataclass(frozen=True)
class _Choice:
    text: str
    finish_reason: str | None


@dataclass(frozen=True)
class _Reply:
    choices: tuple[_Choice, ...]
    prompt_tokens: int | None
    completion_tokens: int | None
    served_model: str | None
    response_id: str | None
    latency_s: float
    attempts: int = 1


class OpenAIGenerator(ScopedGenerator):
    """Samples from an OpenAI-compatible ``/chat/completions`` or ``/completions`` endpoint.

    ``base_url`` includes the API prefix (``http://localhost:8000/v1``), as with the official
    SDK. The API key is read once from the environment variable ``api_key_env`` and sent as a
    Bearer token; when the variable is unset no Authorization header is sent (local servers
    rarely need one). ``n_mode``: ``auto`` asks for ``n`` choices in one request and falls back
    to ``n`` single requests if the server refuses or returns fewer; ``native``/``separate``
    force one behaviour.
    """

    name: ClassVar[str] = "openai"

    def __init__(
        self,
        *,
        model: str,
        base_url: str = "https://api.openai.com/v1",
        api_key_env: str | None = "OPENAI_API_KEY",
        mode: Mode = "chat",
        system_prompt: str | None = None,
        max_concurrency: int = 8,
        timeout: float = 120.0,
        connect_timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        max_response_bytes: int = 8 * 1024 * 1024,
        n_mode: NMode = "auto",
        max_tokens_field: str = "max_tokens",
        extra_body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        seed: int | None = None,
    ) -> None:
        """Args:
            model: the ``model`` field sent to the server.
            base_url: API root including the version prefix (``http://localhost:8000/v1``);
                no credentials, query or fragment.
            api_key_env: environment variable holding the key, read once and sent as a Bearer
                token; unset sends no Authorization header, None never sends one.
            mode: ``chat`` (``/chat/completions`` with system and user messages) or
                ``completions`` (``/completions`` with the system text before the prompt).
            system_prompt: the system text for requests that carry none.
            max_concurrency: most HTTP requests in flight from this instance at once.
            timeout: seconds per attempt, end to end (connect, headers and body).
            connect_timeout: seconds for the TCP/TLS connect (capped at ``timeout``).
            retry: backoff and attempt limits for retryable failures (429, 5xx, resets).
            max_response_bytes: a larger response body is refused (ResponseTooLargeError).
            n_mode: ``auto`` asks for n choices in one request and falls back to single
                requests when refused or short; ``native`` never falls back; ``separate``
                always sends single requests.
            max_tokens_field: the JSON field the token limit is sent in
                (``max_completion_tokens`` for OpenAI reasoning models).
            extra_body: more JSON fields for each request (``top_k``, ...); they cannot
                override the mapped sampling fields.
            headers: more HTTP headers (an Authorization header is refused: use
                ``api_key_env``).
            seed: seeds the retry backoff's jitter (not the model).
        """
        if mode not in ("chat", "completions"):
            raise ValueError(f"mode must be 'chat' or 'completions', not {mode!r}")
        if n_mode not in ("auto", "native", "separate"):
            raise ValueError(f"n_mode must be 'auto', 'native' or 'separate', not {n_mode!r}")
        if not model:
            raise ValueError("model is required")
        if timeout <= 0 or connect_timeout <= 0:
            raise ValueError("timeouts must be > 0")
        if max_response_bytes < 1024:
            raise ValueError("max_response_bytes must be at least 1024")
        url = urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"base_url must be an http(s) URL, not {base_url!r}")
        if url.username or url.password:
            raise ValueError("base_url must not carry credentials; use api_key_env")
        if url.query or url.fragment:
            raise ValueError("base_url must not have a query or fragment")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.mode: Mode = mode
        self.system_prompt = system_prompt
        self.timeout = float(timeout)
        self.connect_timeout = float(min(connect_timeout, timeout))
        self.retry = retry or RetryPolicy()
        self.max_response_bytes = int(max_response_bytes)
        self.n_mode: NMode = n_mode
        self.max_tokens_field = max_tokens_field
        self.extra_body = dict(extra_body or {})
        self.api_key_env = api_key_env
        self._https = url.scheme == "https"
        self._host = url.hostname
        self._port = url.port or (443 if self._https else 80)
        self._path = (url.path.rstrip("/") or "") + (
            "/chat/completions" if mode == "chat" else "/completions"
        )
        self._api_key = os.environ.get(api_key_env) if api_key_env else None
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"rtlforge/{_version()}",
            **dict(headers or {}),
        }
        if any(k.lower() == "authorization" for k in self._headers):
            raise ValueError("pass the API key through api_key_env, not headers")
        self._limiter = ConcurrencyLimiter(max_concurrency)
        super().__init__()
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()
        # Learned once per instance: the server refused n > 1, so stop asking.
        self._n_refused = False

    def __repr__(self) -> str:
        key = "set" if self._api_key else "unset"
        return (f"OpenAIGenerator(model={self.model!r}, base_url={self.base_url!r}, "
                f"mode={self.mode!r}, api_key_env={self.api_key_env!r} ({key}))")

    # ------------------------------------------------------------------ Generator API

    @property
    def max_concurrency(self) -> int:
        return self._limiter.limit

    @property
    def peak_concurrency(self) -> int:
        """Most requests this instance has had in flight at once (diagnostics)."""
        return self._limiter.peak

    def generate(
        self, requests: Sequence[GenerationRequest], params: SamplingParams
    ) -> list[list[Generation]]:
        """``params.n`` generations per request, in request order; raises GenerationError.

        The batch is all-or-nothing: the first request that fails for good cancels the rest
        and its error is raised (a partial batch would silently bias pass@k).
        """
        requests = list(requests)
        if not requests:
            return []
        with self._scope.call() as token:
            replies = self._run(requests, params, token)
        out: list[list[Generation]] = []
        for index, request in enumerate(requests):
            gens: list[Generation] = []
            for _, reply in sorted(replies[index], key=lambda item: item[0]):
                gens.extend(self._generations(request, reply, start=len(gens)))
            out.append(gens[: params.n])
        return out

    # ------------------------------------------------------------------ scheduling

    def _initial_jobs(self, count: int, n: int) -> list[_Job]:
        native = n > 1 and (self.n_mode == "native" or (self.n_mode == "auto"
                                                         and not self._n_refused))
        if native or n == 1:
            return [_Job(i, n, 0) for i in range(count)]
        return [_Job(i, 1, k) for i in range(count) for k in range(n)]

    def _run(self, requests: list[GenerationRequest], params: SamplingParams,
             token: CancelToken) -> list[list[tuple[int, _Reply]]]:
        replies: list[list[tuple[int, _Reply]]] = [[] for _ in requests]
        workers = min(self.max_concurrency, len(requests) * params.n)
        pending: dict[Future[_Reply], _Job] = {}
        failure: BaseException | None = None
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rtlforge-openai") as pool:

            def submit(job: _Job) -> None:
                pending[pool.submit(self._request, requests[job.index], job, params,
                                    token)] = job

            for job in self._initial_jobs(len(requests), params.n):
                submit(job)
            try:
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        job = pending.pop(future)
                        try:
                            reply = future.result()
                        except _NRejected:
                            if failure is not None:
                                continue
                            if not self._n_refused:
                                log.info("n_refused", host=self._host, n=job.n,
                                         fallback="separate requests")
                            self._n_refused = True
                            for k in range(job.n):
                                submit(_Job(job.index, 1, job.offset + k))
                            continue
                        except BaseException as exc:  # noqa: BLE001 - re-raised below
                            failure = failure or exc
                            token.cancel()  # stop the rest of the batch promptly
                            continue
                        if failure is not None:
                            continue
                        replies[job.index].append((job.offset, reply))
                        got = len(reply.choices)
                        for k in range(got, job.n):  # server ignored n: top up
                            submit(_Job(job.index, 1, job.offset + k))
            except BaseException:
                token.cancel()
                raise
        if failure is not None:
            raise failure
        return replies

    # ------------------------------------------------------------------ one request

    def _payload(self, request: GenerationRequest, params: SamplingParams, job: _Job
                 ) -> dict[str, Any]:
        system = request.system if request.system is not None else self.system_prompt
        payload: dict[str, Any] = {"model": self.model}
        if self.mode == "chat":
            messages = [{"role": "system", "content": system}] if system else []
            messages.append({"role": "user", "content": request.prompt})
            payload["messages"] = messages
        else:
            payload["prompt"] = f"{system}\n\n{request.prompt}" if system else request.prompt
        payload["temperature"] = params.temperature
        payload["top_p"] = params.top_p
        payload[self.max_tokens_field] = params.max_tokens
        if job.n > 1:
            payload["n"] = job.n
        if params.seed is not None:
            # Separate requests for one prompt get distinct seeds, else they would all agree.
            payload["seed"] = params.seed + job.offset
        if params.stop:
            payload["stop"] = list(params.stop)
        for key, value in self.extra_body.items():
            payload.setdefault(key, value)
        return payload

    def _request(self, request: GenerationRequest, job: _Job, params: SamplingParams,
                 token: CancelToken) -> _Reply:
        body = json.dumps(self._payload(request, params, job)).encode()

        def attempt(_: int) -> _Reply:
            with self._limiter.slot(token):
                self._usage.add(attempts=1)
                return self._post(body, job.n, token)

        try:
            reply, attempts = call_with_retries(
                attempt, policy=self.retry, token=token, rng=self._locked_rng(),
                on_retry=self._log_retry)
        except GenerationCancelled:
            self._usage.add(cancelled=1)
            raise
        except GenerationHTTPError as exc:
            if (job.n > 1 and self.n_mode == "auto" and exc.status in _N_REJECT_STATUSES):
                raise _NRejected from exc
            self._usage.add(failures=1)
            raise
        except GenerationError:
            self._usage.add(failures=1)
            raise
        self._usage.add(requests=1, retries=attempts - 1, latency_s=reply.latency_s,
                        generations=len(reply.choices),
                        prompt_tokens=reply.prompt_tokens or 0,
                        completion_tokens=reply.completion_tokens or 0)
        return dataclasses.replace(reply, attempts=attempts)

    def _locked_rng(self) -> random.Random:
        """A per-request RNG seeded from the instance one (random.Random is not thread-safe)."""
        with self._rng_lock:
            return random.Random(self._rng.getrandbits(64))

    def _log_retry(self, exc: GenerationError, attempt: int, wait_s: float) -> None:
        log.warning("generation_retry", host=self._host, attempt=attempt,
                    error=type(exc).__name__, status=getattr(exc, "status", None),
                    wait_s=round(wait_s, 3))

    def _post(self, body: bytes, n: int, token: CancelToken) -> _Reply:
        """One HTTP attempt, bounded by ``timeout`` end to end and abortable by ``token``."""
        conn_cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = conn_cls(self._host, self._port, timeout=self.connect_timeout)
        why: list[str] = []

        def abort(reason: str) -> None:
            why.append(reason)  # flag first, then the socket: see the check after connect()
            sock = conn.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        unregister = token.on_cancel(lambda: abort("cancelled"))
        deadline = threading.Timer(self.timeout, abort, args=("timeout",))
        deadline.daemon = True
        deadline.start()
        start = time.monotonic()
        try:
            conn.connect()
            if why:
                raise OSError("aborted")
            conn.sock.settimeout(self.timeout)
            headers = dict(self._headers)
            if self._api_key:
                headers["Authorization"] = f"Bearer {self._api_key}"
            conn.request("POST", self._path, body=body, headers=headers)
            response = conn.getresponse()
            data = self._read_body(response)
            if why:  # a shutdown socket reads as a clean EOF, so ask the flag, not the data
                raise OSError("aborted")
            latency = time.monotonic() - start
        except (OSError, http.client.HTTPException) as exc:
            if token.cancelled or "cancelled" in why:
                raise GenerationCancelled("generation was cancelled") from None
            if "timeout" in why or isinstance(exc, TimeoutError):
                raise GenerationTimeout(
                    f"no complete response from {self._host} within {self.timeout:g}s") from None
            raise GenerationConnectionError(
                f"cannot talk to {self._host}:{self._port}: {type(exc).__name__}: "
                f"{self._scrub(str(exc))}") from None
        finally:
            deadline.cancel()
            unregister()
            conn.close()
        if not 200 <= response.status < 300:
            raise self._status_error(response, data)
        return self._parse(data, n, latency)

    def _read_body(self, response: http.client.HTTPResponse) -> bytes:
        limit = self.max_response_bytes
        declared = response.getheader("Content-Length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            raise ResponseTooLargeError(
                f"response declares {int(declared)} bytes, over the {limit}-byte limit")
        chunks: list[bytes] = []
        total = 0
        while chunk := response.read(_READ_CHUNK):
            total += len(chunk)
            if total > limit:
                raise ResponseTooLargeError(f"response exceeds the {limit}-byte limit")
            chunks.append(chunk)
        if response.length:  # EOF before the declared Content-Length
            raise http.client.IncompleteRead(b"".join(chunks), response.length)
        return b"".join(chunks)

    def _status_error(self, response: http.client.HTTPResponse, data: bytes
                      ) -> GenerationHTTPError:
        status = response.status
        detail = self._error_detail(data)
        retryable = status in _RETRY_STATUSES or status >= 500
        hint = ""
        if status in (401, 403):
            hint = (f" (is ${self.api_key_env} set to a valid key?)" if self.api_key_env
                    else " (the server wants a key; set api_key_env)")
        elif status == 404:
            hint = f" (check base_url {self.base_url!r}, mode {self.mode!r}, model {self.model!r})"
        return GenerationHTTPError(
            f"{self._host} answered HTTP {status}{hint}: {detail}", status=status,
            retryable=retryable, retry_after=parse_retry_after(response.getheader("Retry-After")))

    def _error_detail(self, data: bytes) -> str:
        text = data[: 4 * _SNIPPET_CHARS].decode("utf-8", "replace")
        try:
            obj = load_json(data)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict):
            err = obj.get("error", obj.get("message"))
            if isinstance(err, dict):
                err = err.get("message")
            if isinstance(err, str):
                text = err
        return self._scrub(" ".join(text.split())[:_SNIPPET_CHARS]) or "(empty body)"

    def _scrub(self, text: str) -> str:
        """Never let the key reach a message or log, even if a server echoes it back."""
        return text.replace(self._api_key, "***") if self._api_key else text

    def _parse(self, data: bytes, n: int, latency: float) -> _Reply:
        try:
            obj = load_json(data)
        except (ValueError, RecursionError) as exc:
            raise MalformedResponseError(
                f"{self._host} returned invalid JSON ({type(exc).__name__}): "
                f"{self._error_detail(data)}") from None
        if not isinstance(obj, dict):
            raise MalformedResponseError(f"{self._host} returned JSON that is not an object")
        if "error" in obj and "choices" not in obj:
            raise GenerationError(f"{self._host} returned an error: {self._error_detail(data)}")
        raw = obj.get("choices")
        if not isinstance(raw, list) or not raw:
            raise MalformedResponseError(f"{self._host} returned no 'choices'")
        choices = []
        for position, item in enumerate(raw):
            if not isinstance(item, dict):
                raise MalformedResponseError(f"choice {position} is not an object")
            if self.mode == "chat":
                message = item.get("message")
                text = message.get("content") if isinstance(message, dict) else None
            else:
                text = item.get("text")
            if not isinstance(text, str):
                raise MalformedResponseError(
                    f"choice {position} has no text (finish_reason="
                    f"{item.get('finish_reason')!r}); is mode={self.mode!r} right?")
            index = item.get("index", position)
            finish = item.get("finish_reason")
            choices.append((index if isinstance(index, int) else position,
                            _Choice(text, finish if isinstance(finish, str) else None)))
        choices.sort(key=lambda pair: pair[0])
        usage = obj.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        served = obj.get("model")
        rid = obj.get("id")
        return _Reply(
            choices=tuple(choice for _, choice in choices[:n]),
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=_count(usage.get("completion_tokens")),
            served_model=served if isinstance(served, str) else None,
            response_id=rid if isinstance(rid, str) else None,
            latency_s=latency,
        )

    def _generations(self, request: GenerationRequest, reply: _Reply, *, start: int
                     ) -> list[Generation]:
        shared = len(reply.choices) > 1
        meta_base: dict[str, Any] = {"attempts": reply.attempts,
                                     "choices_in_request": len(reply.choices)}
        if reply.served_model:
            meta_base["served_model"] = reply.served_model
        if reply.response_id:
            meta_base["response_id"] = reply.response_id
        if shared and reply.completion_tokens is not None:
            # Servers report one total for all choices; per-sample counts are unknown.
            meta_base["request_completion_tokens"] = reply.completion_tokens
        return [
            make_generation(
                choice.text, generator=self.name, request=request, sample_index=start + i,
                model=self.model, prompt_tokens=reply.prompt_tokens,
                completion_tokens=None if shared else reply.completion_tokens,
                latency_s=reply.latency_s, finish_reason=choice.finish_reason,
                metadata=meta_base,
            )
            for i, choice in enumerate(reply.choices)
        ]


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


@hookimpl
def register_generators(register: Register) -> None:
    register(OpenAIGenerator)
