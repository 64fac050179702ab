"""Helpers the acquisition tests share: a host with the acquisition roles, the example
script's answers, a generator wrapper that records requests."""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import rtlforge.agents.acquire.plugin as acquire_roles_plugin
from rtlforge.core.interfaces import Generation, GenerationRequest, SamplingParams
from rtlforge.core.plugins import PluginHost

REPO = Path(__file__).resolve().parents[3]
SOURCES = REPO / "examples" / "behave" / "sources"
EXAMPLE = REPO / "examples" / "behave" / "acquire"


def acquisition_host() -> PluginHost:
    """The default host, plus the roles plugin when its entry point is not installed (a
    checkout on PYTHONPATH over an older install)."""
    host = PluginHost()
    if "acquire-analyst" in host.names("agent_role"):
        return host
    return PluginHost(plugins=[("acquire_roles", acquire_roles_plugin)])


def example_answers(task_id: str, agent: str) -> list[str]:
    steps = tomllib.loads((EXAMPLE / "script.toml").read_text())["step"]
    return [s["text"] for s in steps if s["task_id"] == task_id and s["agent"] == agent]


class Recording:
    """Wraps a generator and keeps every request it was sent."""

    name = "recording"

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.requests: list[GenerationRequest] = []

    def generate(self, requests: Sequence[GenerationRequest], params: SamplingParams
                 ) -> list[list[Generation]]:
        self.requests.extend(requests)
        return self.inner.generate(requests, params)

    def close(self) -> None:
        self.inner.close()
