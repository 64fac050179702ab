"""The rtlforge pytest plugin: fixtures for testing rtlforge plugins (see docs/testing.md).

Installed rtlforge registers it through the ``pytest11`` entry point, so its fixtures exist in
every pytest run; ``-p rtlforge.testing.pytest_plugin`` or
``pytest_plugins = ["rtlforge.testing.pytest_plugin"]`` load it where rtlforge is only on the
path. Any two of these together are fine: the entry point carries the module's own name, which
is how pytest recognises a plugin it has already loaded.

Importing this module stays cheap (no torch): the tiny model is built on first use.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rtlforge.core.interfaces import ValidationContext
from rtlforge.core.models import Candidate, Task
from rtlforge.core.plugins import PluginHost
from rtlforge.testing.builders import make_context, make_plugin_host
from rtlforge.testing.fake_runner import FakeRunner

#: What the tiny model needs: the ``[train]`` extra.
TINY_MODEL_MODULES = ("torch", "transformers", "tokenizers")



def missing_tools(*tools: str) -> list[str]:
    """The executables among ``tools`` that are not on PATH."""
    return [tool for tool in tools if shutil.which(tool) is None]


def requires_tools(*tools: str) -> pytest.MarkDecorator:
    """Skip the test (or module, as ``pytestmark``) unless every named executable is on PATH:
    ``@requires_tools("iverilog", "vvp")``. The same as ``@pytest.mark.requires_tools(...)``."""
    return pytest.mark.requires_tools(*tools)


def skip_unless_tools(*tools: str) -> None:
    """Skip the running test unless every named executable is on PATH (for a test that learns
    which tool it needs only from its parameters)."""
    missing = missing_tools(*tools)
    if missing:
        pytest.skip(f"needs {', '.join(missing)} on PATH (not installed)")


def missing_modules(*modules: str) -> list[str]:
    """The modules among ``modules`` that cannot be imported (absent, or blocked through
    ``sys.modules[name] = None``), found without importing them."""
    missing = []
    for name in modules:
        try:
            if importlib.util.find_spec(name) is None:
                missing.append(name)
        except (ImportError, ValueError):
            missing.append(name)
    return missing


# -------------------------------------------------------------------------------- hooks


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requires_tools(*tools): skip unless every named executable is on PATH")


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers(name="requires_tools"):
        skip_unless_tools(*mark.args)


# -------------------------------------------------------------------------------- fixtures


@pytest.fixture
def fake_runner(tmp_path: Path) -> Iterator[FakeRunner]:
    """A :class:`FakeRunner` with an empty script: fill ``fake_runner.script[tool]``, then read
    ``fake_runner.calls`` / ``.puts``. Run directories live under the test's ``tmp_path``."""
    with FakeRunner(base_dir=tmp_path / "fake-runner") as runner:
        yield runner


@pytest.fixture
def validation_context(fake_runner: FakeRunner) -> Callable[..., ValidationContext]:
    """``validation_context(task, candidate, **kw)``: a ValidationContext on ``fake_runner``,
    its run directory holding the candidate and the task's files (see ``make_context``)."""

    def build(task: Task, candidate: Candidate, **kwargs: Any) -> ValidationContext:
        return make_context(task, candidate, fake_runner, **kwargs)

    return build


@pytest.fixture
def rtlforge_plugins() -> list[object]:
    """The plugins ``plugin_host`` is built from; override this fixture in your test module or
    conftest.py: a list of modules, hookimpl objects or ``(name, plugin)`` pairs."""
    return []


@pytest.fixture
def plugin_host(rtlforge_plugins: list[object]) -> PluginHost:
    """A PluginHost holding exactly ``rtlforge_plugins``: no entry points are loaded (so no
    installed plugin and no built-in takes part) and the shell's allow/block lists are ignored."""
    return make_plugin_host(*rtlforge_plugins)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama-style model directory (built once per session, offline, about a
    second); skips when the ``[train]`` extra is not installed."""
    missing = missing_modules(*TINY_MODEL_MODULES)
    if missing:
        pytest.skip(f"the tiny model needs {', '.join(missing)}: "
                    "pip install 'rtlforge[train]'")
    from rtlforge.testing.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("rtlforge-tiny-model") / "model")
