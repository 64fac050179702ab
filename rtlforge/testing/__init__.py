"""Helpers for testing rtlforge and plugins built on it; none needs a download or a tool.

Builders (``make_task``, ``make_candidate``, ``make_context``, ``make_plugin_host``), a
``FakeRunner`` that scripts tool results, and the offline tiny model. The pytest fixtures live in
:mod:`rtlforge.testing.pytest_plugin` (registered under ``pytest11``); the names that need pytest
(``requires_tools``, ``skip_unless_tools``) are imported from it on first use, so importing this
package needs neither pytest nor torch.
"""

from __future__ import annotations

from typing import Any

from rtlforge.testing.builders import (
    make_candidate,
    make_context,
    make_plugin_host,
    make_task,
    parse_port,
    vector_testbench,
)
from rtlforge.testing.fake_runner import (
    FakeRunner,
    PutCall,
    ScriptedRun,
    ToolCall,
    UnscriptedToolError,
)
from rtlforge.testing.tiny_model import build_tiny_model

_FROM_PYTEST_PLUGIN = ("requires_tools", "skip_unless_tools", "missing_tools")

__all__ = [
    "FakeRunner",
    "PutCall",
    "ScriptedRun",
    "ToolCall",
    "UnscriptedToolError",
    "build_tiny_model",
    "make_candidate",
    "make_context",
    "make_plugin_host",
    "make_task",
    "missing_tools",
    "parse_port",
    "requires_tools",
    "skip_unless_tools",
    "vector_testbench",
]


def __getattr__(name: str) -> Any:
    if name in _FROM_PYTEST_PLUGIN:
        from rtlforge.testing import pytest_plugin

        return getattr(pytest_plugin, name)
    raise AttributeError(f"module 'rtlforge.testing' has no attribute {name!r}")
