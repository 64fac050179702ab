"""Shared test set-up: paths to the repository, its fixtures and the optional ../shared data.

Fixtures for plugin authors (task and candidate builders, a fake runner, the tiny model) come from
the ``rtlforge.testing`` pytest plugin, which the package registers under ``pytest11``; naming it
here too keeps them when rtlforge is only on the path (a checkout on PYTHONPATH, an old install).
"""

from __future__ import annotations

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
