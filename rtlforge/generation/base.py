"""Machinery every generator needs and should not reinvent: typed errors, retries with backoff,
a concurrency limiter, usage accounting, cancellation, and turning text into a Generation.

Nothing here is global: each generator instance owns its limiter, tracker and cancel scope, so
two generators (or two tests) never share state.
"""

from __future__ import annotations

import email.utils
import math
import random
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from rtlforge.core.answers import answer_files, candidate_from_answer
from rtlforge.core.errors import ExtractionError, InfraError
from rtlforge.core.extract import extract_verilog
from rtlforge.core.interfaces import Generation, GenerationRequest, GenerationUsage, Generator
from rtlforge.core.models import Candidate, Provenance

__all__ = [
    "CancelScope",
    "CancelToken",
    "ConcurrencyLimiter",
    "GenerationCancelled",
    "GenerationConnectionError",
    "GenerationError",
    "GenerationHTTPError",
    "GenerationTimeout",
    "MalformedResponseError",
    "ResponseTooLargeError",
    "RetryPolicy",
    "UsageTracker",
    "call_with_retries",
    "make_generation",
    "parse_retry_after",
]

T = TypeVar("T")

# --------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------


class GenerationError(InfraError):
    """The generator's infrastructure failed; says nothing about the design or the model.

    ``retryable`` tells :func:`call_with_retries` whether another attempt may help;
    ``retry_after`` is the server's requested wait in seconds; ``attempts`` is how many tries
    were made before giving up (set when the error leaves the retry loop).
    """

    retryable_default: bool = False

    def __init__(self, message: str, *, retryable: bool | None = None,
                 retry_after: float | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.retryable = self.retryable_default if retryable is None else retryable
        self.retry_after = retry_after
        self.attempts = attempts


class GenerationCancelled(GenerationError):
    """``cancel()``/``close()`` stopped the call.

    ``partial`` optionally carries the requests finished before the stop (in request order),
    for generators that work in sequential batches; HTTP generators leave it None.
    """

    def __init__(self, message: str = "generation was cancelled", *,
                 partial: list[list[Generation]] | None = None, attempts: int = 1) -> None:
        super().__init__(message, retryable=False, attempts=attempts)
        self.partial = partial


class GenerationTimeout(GenerationError):
    """A request ran past its per-request timeout (on every attempt, once retries are spent)."""

    retryable_default = True


class GenerationConnectionError(GenerationError):
    """The server could not be reached or dropped the connection."""

    retryable_default = True


class GenerationHTTPError(GenerationError):
    """The server answered with an error status (429/5xx once retries are spent, other 4xx)."""

    def __init__(self, message: str, *, status: int, retryable: bool | None = None,
                 retry_after: float | None = None, attempts: int = 1) -> None:
        super().__init__(message, retryable=retryable, retry_after=retry_after,
                         attempts=attempts)
        self.status = status


class MalformedResponseError(GenerationError):
    """The server answered 2xx with something that is not a well-formed completion."""


class ResponseTooLargeError(MalformedResponseError):
    """The response body exceeded the configured byte limit (an untrusted server's flood)."""


# --------------------------------------------------------------------------------------------
# cancellation
# --------------------------------------------------------------------------------------------


class CancelToken:
    """A thread-safe "stop now" flag that can also interrupt blocking I/O through callbacks.

    Callbacks (e.g. shutting down a socket) run once, on the cancelling thread; sleeps made
    through :meth:`sleep` wake immediately.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._next_id = 0

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` on cancellation (now, if already cancelled); returns an unregister."""
        with self._lock:
            if not self._event.is_set():
                key = self._next_id
                self._next_id += 1
                self._callbacks[key] = callback
                return lambda: self._callbacks.pop(key, None)  # dict.pop is atomic
        callback()
        return lambda: None

    def check(self) -> None:
        if self._event.is_set():
            raise GenerationCancelled("generation was cancelled")

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` unless cancelled first (then raise GenerationCancelled)."""
        if self._event.wait(max(0.0, seconds)):
            raise GenerationCancelled("generation was cancelled")


class CancelScope:
    """The set of tokens of the ``generate`` calls in progress on one generator.

    ``cancel()`` stops exactly those calls, so a generator stays usable afterwards; ``close()``
    also refuses new calls.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: set[CancelToken] = set()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    @contextmanager
    def call(self) -> Iterator[CancelToken]:
        token = CancelToken()
        with self._lock:
            if self._closed:
                raise GenerationError("the generator is closed")
            self._active.add(token)
        try:
            yield token
        finally:
            with self._lock:
                self._active.discard(token)

    def cancel(self) -> None:
        with self._lock:
            active = list(self._active)
        for token in active:
            token.cancel()

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self.cancel()


# --------------------------------------------------------------------------------------------
# retries
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with multiplicative jitter, honouring a server's Retry-After.

    Attempt ``k`` (1-based) failing waits ``min(max_delay, base_delay * multiplier**(k-1))``
    scaled by a random factor in ``[1 - jitter, 1 + jitter]`` (so a fleet of clients does not
    retry in lockstep), or the server's Retry-After when it sent one, capped at
    ``max_retry_after`` so a hostile server cannot park a worker for hours.
    """

    max_attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.25
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if min(self.base_delay, self.max_delay, self.max_retry_after) < 0:
            raise ValueError("delays must be >= 0")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError("jitter must be in [0, 1]")

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        raw = min(self.max_delay, self.base_delay * self.multiplier ** (attempt - 1))
        return raw * rng.uniform(1.0 - self.jitter, 1.0 + self.jitter)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date); None if absent
    or unparseable. Fractional seconds are accepted because some servers send them."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def call_with_retries(
    attempt_fn: Callable[[int], T],
    *,
    policy: RetryPolicy,
    token: CancelToken,
    rng: random.Random,
    on_retry: Callable[[GenerationError, int, float], None] | None = None,
) -> tuple[T, int]:
    """Run ``attempt_fn(attempt)`` until it succeeds, returning ``(result, attempts)``.

    Only :class:`GenerationError` with ``retryable`` set is retried; the last error is
    re-raised with ``attempts`` filled in. Backoff sleeps wake on cancellation.
    """
    attempt = 1
    while True:
        token.check()
        try:
            return attempt_fn(attempt), attempt
        except GenerationCancelled as exc:
            exc.attempts = attempt
            raise
        except GenerationError as exc:
            exc.attempts = attempt
            if token.cancelled:
                raise GenerationCancelled("generation was cancelled", attempts=attempt) from exc
            if not exc.retryable or attempt >= policy.max_attempts:
                raise
            wait = policy.delay(attempt, exc.retry_after, rng)
            if on_retry is not None:
                on_retry(exc, attempt, wait)
            token.sleep(wait)
            attempt += 1


# --------------------------------------------------------------------------------------------
# concurrency and accounting
# --------------------------------------------------------------------------------------------


class ConcurrencyLimiter:
    """At most ``limit`` holders at once, across every thread using the same instance.

    Acquiring polls the cancel token so a cancelled call never waits for a slot; ``peak`` is
    kept for tests and diagnostics.
    """

    _POLL_S = 0.05

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("the concurrency limit must be >= 1")
        self.limit = limit
        self._sem = threading.BoundedSemaphore(limit)
        self._lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0

    @contextmanager
    def slot(self, token: CancelToken | None = None) -> Iterator[None]:
        while not self._sem.acquire(timeout=self._POLL_S):
            if token is not None:
                token.check()
        try:
            if token is not None:
                token.check()
            with self._lock:
                self.in_flight += 1
                self.peak = max(self.peak, self.in_flight)
            try:
                yield
            finally:
                with self._lock:
                    self.in_flight -= 1
        finally:
            self._sem.release()


class UsageTracker:
    """Thread-safe counters behind ``Generator.usage()``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, float] = {}

    def add(self, **amounts: float) -> None:
        """Add to named counters (the fields of GenerationUsage)."""
        unknown = set(amounts) - set(GenerationUsage.model_fields)
        if unknown:
            raise ValueError(f"unknown usage counters: {sorted(unknown)}")
        with self._lock:
            for key, amount in amounts.items():
                self._counts[key] = self._counts.get(key, 0) + amount

    def snapshot(self) -> GenerationUsage:
        with self._lock:
            counts = dict(self._counts)
        return GenerationUsage(**{
            key: (float(value) if key == "latency_s" else int(value))
            for key, value in counts.items()
        })


# --------------------------------------------------------------------------------------------
# building generations
# --------------------------------------------------------------------------------------------


class ScopedGenerator(Generator):
    """A generator with a cancel scope and usage counters: the shared cancel/close/usage.

    Subclasses call ``super().__init__()``, run each ``generate`` inside ``self._scope.call()``
    and record their accounting in ``self._usage``.
    """

    def __init__(self) -> None:
        self._scope = CancelScope()
        self._usage = UsageTracker()

    def usage(self) -> GenerationUsage:
        return self._usage.snapshot()

    def cancel(self) -> None:
        self._scope.cancel()

    def close(self) -> None:
        self._scope.close()


def make_generation(
    text: str,
    *,
    generator: str,
    request: GenerationRequest,
    sample_index: int,
    model: str | None = None,
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
    latency_s: float | None = None,
    finish_reason: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Generation:
    """A Generation whose ``candidate`` holds the extracted Verilog, or None when there is none.

    Extraction failure is a property of the sample (prose, truncation), not a generator error:
    the text is kept so a refinement loop or a report can still show it.
    """
    meta = dict(metadata or {})
    candidate = _extracted(text, meta, generator=generator, request=request,
                           sample_index=sample_index, model=model)
    return Generation(
        text=text, generator=generator, candidate=candidate, prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens, latency_s=latency_s, finish_reason=finish_reason,
        model=model, metadata=meta,
    )


def _extracted(text: str, meta: dict[str, Any], *, generator: str,
               request: GenerationRequest | None, sample_index: int,
               model: str | None) -> Candidate | None:
    """The answer's Verilog as a Candidate; on failure None, with the reason in ``meta``.

    A task that wants several files back (:mod:`rtlforge.core.answers`) gets them all."""
    task = request.task if request is not None else None
    provenance = Provenance(
        generator=generator, model=model,
        prompt_id=request.request_id if request is not None else None,
        sample_index=sample_index,
        extra={k: v for k, v in meta.items() if isinstance(v, str | int | float)},
    )
    try:
        files = answer_files(task) if task is not None else ()
        if files:
            return candidate_from_answer(text, files, task_id=task.id if task else None,
                                         provenance=provenance)
        source = extract_verilog(text)
    except ExtractionError as exc:
        meta["extraction_error"] = str(exc)
        return None
    return Candidate.from_source(source, task_id=task.id if task is not None else None,
                                 provenance=provenance)


def with_candidates(answers: Sequence[Sequence[Generation]],
                    requests: Sequence[GenerationRequest]) -> list[list[Generation]]:
    """``answers`` (one list per request) with every candidate a generator left out extracted
    from its text.

    The generator contract lets a generator return text only (extraction is not its job);
    every consumer of generations (refinement, exploration, ``rtlforge generate``) goes
    through here, so one rule turns an answer into a candidate, and an answer without Verilog
    carries why in ``metadata["extraction_error"]``."""
    out: list[list[Generation]] = []
    for position, gens in enumerate(answers):  # a generator's miscount is its caller's to see
        request = requests[position] if position < len(requests) else None
        filled = []
        for index, gen in enumerate(gens):
            if gen.candidate is None and "extraction_error" not in gen.metadata:
                meta = dict(gen.metadata)
                candidate = _extracted(gen.text, meta, generator=gen.generator,
                                       request=request, sample_index=index, model=gen.model)
                gen = gen.model_copy(update={"candidate": candidate, "metadata": meta})
            filled.append(gen)
        out.append(filled)
    return out

