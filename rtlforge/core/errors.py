"""Typed errors. Callers branch on the class, never on message text.

Every error rtlforge raises on purpose sits on one of three branches, because the question every
verdict, reward and metric must answer is *whose fault is it*:

- :class:`InfraError`: the harness could not do its job (a tool is missing, the sandbox or a
  worker failed, a server is down, the harness's own deadline passed).
- :class:`DesignError`: the candidate's own fault (unsafe or unreadable source, no code in the
  completion, a design that cannot be synthesised or measured).
- :class:`ConfigError`: the caller's setup is wrong (a malformed task file, an unknown plugin,
  bad options or input files).

:func:`is_infra` is the one place that turns the class into a decision: only a
:class:`DesignError` may count against a design; everything else makes a verdict
``infra_error`` and a reward abstain.
"""

from __future__ import annotations

from typing import Any


class RtlforgeError(Exception):
    """Base of every error rtlforge raises on purpose."""


class InfraError(RtlforgeError):
    """The harness failed; says nothing about the candidate (verdict ``infra_error``, a reward
    abstains). Retrying on a healthy machine may well succeed."""


class DesignError(RtlforgeError):
    """The candidate itself is at fault; scored like a failed design (0 reward, a design
    verdict), never an abstain. The same input fails the same way on any machine."""


class ConfigError(RtlforgeError):
    """The caller's setup is wrong (task file, plugin, options, usage). Not the candidate's
    fault, so :func:`is_infra` counts it with the infrastructure; the CLI reports it as usage."""


def is_infra(exc: BaseException) -> bool:
    """True when ``exc`` says nothing about the candidate, so no design may be scored by it.

    Only a :class:`DesignError` is the design's fault. An :class:`InfraError`, a
    :class:`ConfigError`, an :class:`RtlforgeError` on no branch and any untyped exception (a
    bug of ours or of a plugin) are not: a zero for them would teach a policy, or tell a
    person, that a correct design was wrong.
    """
    return not isinstance(exc, DesignError)


# ------------------------------------------------------------------------------ design errors


class SecurityViolation(DesignError):
    """Untrusted Verilog asked for something a sandboxed design may not do.

    Raised before any tool reads the file, and carries the offending construct and line so the
    refusal can be shown to a person or fed back to a refinement agent. A design that makes the
    security check itself blow its time or memory budget is refused this way too: the budget is
    the design's to respect.
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


class ExtractionError(DesignError):
    """No Verilog could be extracted from a model's text."""


class InvalidSourceError(DesignError):
    """A file handed in for a tool is not text the tools can read alike (bad encoding, NUL,
    too large). The design's fault, reported with the file's name, never a crash."""

    def __init__(self, message: str, *, file: str | None = None) -> None:
        super().__init__(message)
        self.file = file


# ------------------------------------------------------------------------------- infra errors


class ToolMissingError(InfraError):
    """An external tool is not installed; the message says how to install it."""

    def __init__(self, tool: str, hint: str) -> None:
        super().__init__(f"required tool {tool!r} is not available. {hint}")
        self.tool = tool
        self.hint = hint


class SandboxError(InfraError):
    """The sandbox itself failed (could not create a directory, spawn a process, a worker died).

    A design that blows a limit (time, memory, output) is never a ``SandboxError``: the run
    completes with a result that says so (``timed_out``, a kill signal), which the validator
    judges as the design's verdict, or the security check refuses it as a
    :class:`SecurityViolation`. Only the jail's own failure to work is raised here.
    """


class WorkerLostError(InfraError):
    """A remote executor's worker died on an item more often than it retries; the item says
    nothing about the design (a crashed node, an out-of-memory kill, a lost connection)."""


class IsolationUnavailableError(SandboxError):
    """The platform cannot isolate tool runs; untrusted input is refused until the user opts
    out explicitly (``SandboxRunner(isolation="none")`` or ``RTLFORGE_SANDBOX=none``)."""


# ------------------------------------------------------------------------------ config errors


class TaskFormatError(ConfigError):
    """A task directory or task file is malformed."""


class UnboundedRegexError(ConfigError, ValueError):
    """A regex from a task, a rule file or settings cannot be run in linear time (RE2 refuses
    it: a backreference, lookaround) or is invalid. Refused when the file loads, never while
    judging a design, where a backtracking pattern could hang the host."""


class PluginError(ConfigError):
    """A plugin could not be loaded, or a requested plugin is unknown."""


class PluginOptionsError(PluginError):
    """Options given to a plugin do not match its options model (unknown, missing, mistyped);
    ``errors`` holds pydantic's per-option details when there are any."""

    def __init__(self, message: str, *, errors: list[Any] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or []
