"""The Python API example at the top of docs/agents.md runs as written."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.tools
def test_the_first_python_block_of_the_agents_doc_solves_mux4() -> None:
    text = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)\n```\n", text, re.S)
    assert code is not None
    namespace: dict[str, object] = {}
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)  # the snippet names examples/tasks relative to the project root
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code[1], "docs/agents.md", "exec"), namespace)
    finally:
        os.chdir(cwd)
    result = namespace["result"]
    assert result.verdict.value == "pass" and result.llm_calls == 1  # type: ignore[attr-defined]
    assert "'verdict': 'pass'" in out.getvalue()
