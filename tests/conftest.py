"""Shared test set-up: paths to the repository, its fixtures and the optional ../shared data.

Fixtures for plugin authors (task and candidate builders, a fake runner, the tiny model) come from
the ``rtlforge.testing`` pytest plugin, which the package registers under ``pytest11``; naming it
here too keeps them when rtlforge is only on the path (a checkout on PYTHONPATH, an old install).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = ["rtlforge.testing.pytest_plugin"]

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session", autouse=True)
def _session_caches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The CLI's plugin manifests (rtlforge.cli.manifest) and the tools' versions
    (rtlforge.sandbox.toolversions) go to folders of this session, not the user's cache: tests
    install plugins on temporary paths, each path a manifest of its own, and put stand-in tools
    on PATH. A folder (or ``off``) given in the environment is kept."""
    with pytest.MonkeyPatch.context() as patch:
        for variable, name in (("RTLFORGE_PLUGIN_CACHE", "manifests"),
                               ("RTLFORGE_TOOL_CACHE", "tool-versions")):
            if variable not in os.environ:
                patch.setenv(variable, str(tmp_path_factory.mktemp(name)))
        yield
