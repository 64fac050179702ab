"""rtlforge: a plugin-based SDK for LLM-driven RTL design.

Importing this package stays cheap: no EDA tool runs, no ML framework loads. Heavy pieces
(training, vLLM, Ray) live behind optional extras and are imported lazily where used.
"""

from __future__ import annotations

from rtlforge.core.hookspecs import hookimpl
from rtlforge.core.models import (
    Candidate,
    Feedback,
    SourceFile,
    StageResult,
    Task,
    ValidationReport,
    Verdict,
)

__version__ = "0.1.0"

__all__ = [
    "Candidate",
    "Feedback",
    "SourceFile",
    "StageResult",
    "Task",
    "ValidationReport",
    "Verdict",
    "__version__",
    "hookimpl",
]
