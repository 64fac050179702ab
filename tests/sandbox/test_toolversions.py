"""Tool versions remembered across processes (rtlforge.sandbox.toolversions): a tool is asked
once per executable file, again when the file changes, every time when it is a script or the
cache is off, and a damaged cache is an empty one. The oracle is the processes actually started
(``subprocess.run`` in the runner) and the version each call reports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from rtlforge.core.models import ToolSpec
from rtlforge.sandbox import runner as runner_mod
from rtlforge.sandbox import toolversions
from rtlforge.sandbox.runner import find_tool

ECHO = shutil.which("echo", path="/usr/bin:/bin")
pytestmark = pytest.mark.skipif(ECHO is None, reason="needs /bin/echo")


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[list[str]]:
    """The version questions put to tools; a fresh process's state (no versions in memory),
    a cache folder of this test and ``tmp_path/bin`` first on PATH."""
    seen: list[list[str]] = []
    real = subprocess.run

    def run(argv: list[str], *args: Any, **kwargs: Any) -> Any:
        seen.append(list(argv))
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(runner_mod.subprocess, "run", run)
    monkeypatch.setattr(runner_mod, "_tool_cache", {})
    monkeypatch.setenv(toolversions.CACHE_ENV, str(tmp_path / "cache"))
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    return seen


def _install(tmp_path: Path, source: str, name: str = "mytool") -> Path:
    target = tmp_path / "bin" / name
    shutil.copy2(source, target)
    target.chmod(0o755)
    return target


def _fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_mod, "_tool_cache", {})


SPEC = ToolSpec(name="mytool", version_args=("mytool", "9.1"),
                version_pattern=r"mytool (\S+)")


def test_an_executable_is_asked_once_and_recalled_by_the_next_process(
        asked: list[list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = _install(tmp_path, ECHO)
    assert find_tool(SPEC).version == "9.1"
    assert asked == [[str(tool), "mytool", "9.1"]]
    _fresh_process(monkeypatch)
    assert find_tool(SPEC).version == "9.1"
    assert len(asked) == 1  # recalled: nothing started
    other = SPEC.model_copy(update={"version_args": ("mytool", "2.0")})
    assert find_tool(other).version == "2.0"  # other arguments: another question
    assert len(asked) == 2


def test_a_replaced_executable_is_asked_again(
        asked: list[list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = _install(tmp_path, ECHO)
    find_tool(SPEC)
    tool.unlink()  # an upgrade: a new file at the same path
    _install(tmp_path, ECHO)
    _fresh_process(monkeypatch)
    assert find_tool(SPEC).version == "9.1"
    assert len(asked) == 2


def test_a_script_is_asked_every_time(asked: list[list[str]], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "bin" / "mytool"
    script.write_text('#!/bin/sh\necho "$@"\n')
    script.chmod(0o755)
    for _ in range(2):
        _fresh_process(monkeypatch)
        assert find_tool(SPEC).version == "9.1"
    assert len(asked) == 2
    assert not (tmp_path / "cache" / "versions.json").exists()


def test_with_the_cache_off_every_process_asks(asked: list[list[str]], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(toolversions.CACHE_ENV, "off")
    _install(tmp_path, ECHO)
    for _ in range(2):
        _fresh_process(monkeypatch)
        assert find_tool(SPEC).version == "9.1"
    assert len(asked) == 2
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("content", ["{not json", '{"format": 1, "entries": [1, 2]}',
                                     '{"format": 99, "entries": {}}',
                                     " " * (toolversions.MAX_FILE + 1) + "{}"])
def test_a_damaged_or_foreign_file_is_an_empty_cache_and_is_rewritten(
        asked: list[list[str]], tmp_path: Path, content: str) -> None:
    (tmp_path / "cache").mkdir()
    cache = tmp_path / "cache" / "versions.json"
    cache.write_text(content)
    _install(tmp_path, ECHO)
    assert find_tool(SPEC).version == "9.1"
    assert len(asked) == 1
    data = json.loads(cache.read_text())
    assert data["format"] == toolversions.FORMAT and list(data["entries"].values()) == [
        "mytool 9.1\n"]


def test_a_forged_entry_for_another_file_identity_is_not_believed(
        asked: list[list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = _install(tmp_path, ECHO)
    find_tool(SPEC)
    cache = tmp_path / "cache" / "versions.json"
    data = json.loads(cache.read_text())
    (key,) = data["entries"]
    fields = json.loads(key)
    fields[5] += 1  # the same path and arguments, another modification time
    data["entries"] = {json.dumps(fields): "mytool 6.6.6\n"}
    cache.write_text(json.dumps(data))
    _fresh_process(monkeypatch)
    assert find_tool(SPEC).version == "9.1"
    assert asked[-1][0] == str(tool) and len(asked) == 2


def test_an_unwritable_cache_folder_only_costs_the_question(
        asked: list[list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the folder should be")
    _install(tmp_path, ECHO)
    for _ in range(2):
        _fresh_process(monkeypatch)
        assert find_tool(SPEC).version == "9.1"
    assert len(asked) == 2
