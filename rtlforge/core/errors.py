"""Typed errors. Callers branch on the class, never on message text."""

from __future__ import annotations

from typing import Any


class RtlforgeError(Exception):
    """Base of every error rtlforge raises on purpose."""


class SecurityViolation(RtlforgeError):
    """Untrusted Verilog asked for something a sandboxed design may not do.

    Raised before any tool reads the file, and carries the offending construct and line so the
    refusal can be shown to a person or fed back to a refinement agent.
    """

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 construct: str | None = None, source_line: str | None = None,
                 hint: str | None = None) -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.construct = construct
        self.source_line = source_line
        self.hint = hint  # what to change, when the generic security hint would mislead


class ToolMissingError(RtlforgeError):
    """An external tool is not installed; the message says how to install it."""

    def __init__(self, tool: str, hint: str) -> None:
        super().__init__(f"required tool {tool!r} is not available. {hint}")
        self.tool = tool
        self.hint = hint


class SandboxError(RtlforgeError):
    """The sandbox itself failed (could not create a directory, spawn a process, ...)."""


class TaskFormatError(RtlforgeError):
    """A task directory or task file is malformed."""


class PluginError(RtlforgeError):
    """A plugin could not be loaded, or a requested plugin is unknown."""


class PluginOptionsError(PluginError):
    """Options given to a plugin do not match its options model (unknown, missing, mistyped);
    ``errors`` holds pydantic's per-option details when there are any."""

    def __init__(self, message: str, *, errors: list[Any] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or []


class ExtractionError(RtlforgeError):
    """No Verilog could be extracted from a model's text."""


class InvalidSourceError(RtlforgeError):
    """A file handed in for a tool is not text the tools can read alike (bad encoding, NUL,
    too large). The design's fault, reported with the file's name, never a crash."""

    def __init__(self, message: str, *, file: str | None = None) -> None:
        super().__init__(message)
        self.file = file


class IsolationUnavailableError(SandboxError):
    """The platform cannot isolate tool runs; untrusted input is refused until the user opts
    out explicitly (``SandboxRunner(isolation="none")`` or ``RTLFORGE_SANDBOX=none``)."""
