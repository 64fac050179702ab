"""rtlforge: a plugin-based SDK for LLM-driven RTL design.

The names of the common path live here (``from rtlforge import Pipeline, Task, Candidate``);
deep imports keep working. Importing this package stays cheap: every name below is resolved on
first use (PEP 562 module ``__getattr__``), so ``import rtlforge`` loads no EDA helper, no
sandbox, no numpy and no ML framework; a script pays only for what it touches.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Defining module -> the public names it gives the facade.
_MODULES: dict[str, tuple[str, ...]] = {
    "rtlforge.core.models": (
        "Candidate", "Feedback", "Port", "Provenance", "SourceFile", "StageResult", "Task",
        "ToolInfo", "ValidationReport", "Verdict",
    ),
    "rtlforge.core.interfaces": (
        "Archive", "ArchiveEntry", "Generation", "GenerationRequest", "Generator",
        "PPAEstimator", "PPAResult", "Reward", "SamplingParams", "Trainer", "ValidationContext",
        "Validator",
    ),
    "rtlforge.core.hookspecs": ("hookimpl",),
    "rtlforge.core.plugins": ("PluginHost",),
    "rtlforge.core.errors": (
        "ConfigError", "DesignError", "InfraError", "RtlforgeError", "SandboxError",
        "SecurityViolation", "ToolMissingError", "is_infra",
    ),
    "rtlforge.validate.pipeline": ("Pipeline",),
    "rtlforge.sandbox.runner": ("Limits", "SandboxRunner"),
    "rtlforge.tasks.loader": ("load_task", "load_tasks", "save_task"),
    "rtlforge.tasks.rtllm": ("load_rtllm",),
    "rtlforge.tasks.samples": ("load_samples",),
    "rtlforge.evaluation.evaluate": ("evaluate_detailed", "evaluate_samples"),
    "rtlforge.pareto.hypervolume": ("hypervolume", "objective_vector"),
    "rtlforge.explore.engine": ("ExploreResult", "Explorer", "Method"),
}

#: Public name -> defining module (what ``__getattr__`` looks up).
_EXPORTS: dict[str, str] = {name: module for module, names in _MODULES.items()
                            for name in names}

#: Literal, so linters and type checkers see it; tests check it matches ``_MODULES``.
__all__ = [
    "Archive", "ArchiveEntry", "Candidate", "ConfigError", "DesignError", "ExploreResult",
    "Explorer", "Feedback", "Generation", "GenerationRequest", "Generator", "InfraError", "Limits",
    "Method", "PPAEstimator", "PPAResult", "Pipeline", "PluginHost", "Port", "Provenance",
    "Reward", "RtlforgeError", "SamplingParams", "SandboxError", "SandboxRunner",
    "SecurityViolation", "SourceFile", "StageResult", "Task", "ToolInfo", "ToolMissingError",
    "Trainer", "ValidationContext", "ValidationReport", "Validator", "Verdict", "__version__",
    "evaluate_detailed", "evaluate_samples", "hookimpl", "hypervolume", "is_infra", "load_rtllm",
    "load_samples", "load_task", "load_tasks", "objective_vector", "save_task",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rtlforge' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # what type checkers and IDEs see; _MODULES is what runs
    from rtlforge.core.errors import (
        ConfigError,
        DesignError,
        InfraError,
        RtlforgeError,
        SandboxError,
        SecurityViolation,
        ToolMissingError,
        is_infra,
    )
    from rtlforge.core.hookspecs import hookimpl
    from rtlforge.core.interfaces import (
        Archive,
        ArchiveEntry,
        Generation,
        GenerationRequest,
        Generator,
        PPAEstimator,
        PPAResult,
        Reward,
        SamplingParams,
        Trainer,
        ValidationContext,
        Validator,
    )
    from rtlforge.core.models import (
        Candidate,
        Feedback,
        Port,
        Provenance,
        SourceFile,
        StageResult,
        Task,
        ToolInfo,
        ValidationReport,
        Verdict,
    )
    from rtlforge.core.plugins import PluginHost
    from rtlforge.evaluation.evaluate import evaluate_detailed, evaluate_samples
    from rtlforge.explore.engine import Explorer, ExploreResult, Method
    from rtlforge.pareto.hypervolume import hypervolume, objective_vector
    from rtlforge.sandbox.runner import Limits, SandboxRunner
    from rtlforge.tasks.loader import load_task, load_tasks, save_task
    from rtlforge.tasks.rtllm import load_rtllm
    from rtlforge.tasks.samples import load_samples
    from rtlforge.validate.pipeline import Pipeline
