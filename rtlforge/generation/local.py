"""What the in-process model generators share: errors, optional-extra imports, prompt
rendering, stop handling and the base class with cancellation.

The ``transformers`` and ``vllm`` plugins both build on it; it lives here so that neither plugin
imports the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rtlforge.core.errors import ToolMissingError
from rtlforge.core.interfaces import Generation, GenerationRequest
from rtlforge.generation.base import (
    CancelToken,
    GenerationCancelled,
    GenerationError,
    ScopedGenerator,
)

TRAIN_HINT = "pip install 'rtlforge[train]'"


# ------------------------------------------------------------------------------ shared pieces


class ModelLoadError(GenerationError):
    """The model or adapter path is missing, or does not hold a loadable model."""


class ExtraMissingError(ToolMissingError, GenerationError):
    """A Python extra this generator needs is not installed; the message names the pip line."""


def require(module: str, hint: str) -> Any:
    """Import an optional dependency, turning ImportError into a typed error with the fix."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ExtraMissingError(module, f"Install it with: {hint} ({exc})") from exc


def check_model_dir(path: str | Path, what: str = "model") -> Path:
    """Fail early and typed for a path that cannot be a saved model (before torch loads)."""
    p = Path(path).expanduser()
    if not p.is_dir():
        raise ModelLoadError(f"{what} directory {str(p)!r} does not exist (local paths only; "
                             "download hub models first, e.g. with `hf download`)")
    marker = "adapter_config.json" if what == "adapter" else "config.json"
    if not (p / marker).is_file():
        raise ModelLoadError(f"{str(p)!r} is not a saved {what}: it has no {marker}")
    return p


def wants_chat(tokenizer: Any, use_chat: bool | None) -> bool:
    """Whether prompts go through the chat template.

    ``use_chat`` None means "when the tokenizer has a template", True insists on one, False
    sends ``system`` and ``prompt`` as plain text (base models, or prompts already templated).
    """
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if use_chat is True and not has_template:
        raise GenerationError("chat_template=True but the tokenizer has no chat template")
    return has_template if use_chat is None else use_chat


def render_prompt(tokenizer: Any, request: GenerationRequest, chat: bool) -> str:
    """The text fed to the model for one request."""
    if not chat:
        return f"{request.system}\n\n{request.prompt}" if request.system else request.prompt
    messages = [{"role": "system", "content": request.system}] if request.system else []
    messages.append({"role": "user", "content": request.prompt})
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """Text up to (excluding) the earliest stop string, and whether one was found."""
    hits = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return (text[: min(hits)], True) if hits else (text, False)


class LocalGenerator(ScopedGenerator):
    """What the in-process generators share: cancel scope, usage counters, close().

    Work runs in sequential batches; ``cancel()`` stops the calls in progress at the next batch
    boundary (a batch cut short is dropped) and they raise
    :class:`~rtlforge.generation.base.GenerationCancelled` with the finished requests in
    ``partial``.
    """

    def close(self) -> None:
        """Cancel work in progress, refuse new calls and free the model (and its GPU memory)."""
        self._scope.close()
        self._release()

    def _release(self) -> None:
        """Drop the loaded model; subclasses override."""

    def _stop_if_cancelled(self, token: CancelToken, done: list[list[Generation]]) -> None:
        if token.cancelled:
            self._usage.add(cancelled=1)
            raise GenerationCancelled(
                f"generation cancelled after {len(done)} request(s)", partial=done)

    def _record(self, results: list[list[Generation]], latency: float) -> None:
        """Count one backend call (one batch) in the usage totals."""
        flat = [g for samples in results for g in samples]
        self._usage.add(
            requests=1, attempts=1, generations=len(flat), latency_s=latency,
            prompt_tokens=sum(samples[0].prompt_tokens or 0 for samples in results if samples),
            completion_tokens=sum(g.completion_tokens or 0 for g in flat),
        )


def batched(items: Sequence[Any], size: int | None) -> list[Sequence[Any]]:
    step = size or len(items) or 1
    return [items[i:i + step] for i in range(0, len(items), step)]


# ------------------------------------------------------------------------------ the generator
