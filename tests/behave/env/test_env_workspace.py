"""The agent's in-memory workspace: plain names only, size and count limits, exact edits."""

from __future__ import annotations

import pytest

from rtlforge.behave.env.workspace import (
    Workspace,
    WorkspaceError,
    WorkspaceLimits,
    is_testbench_name,
)


def _kind(fn, *args, **kw) -> str:
    with pytest.raises(WorkspaceError) as info:
        fn(*args, **kw)
    return info.value.kind


@pytest.mark.parametrize("name", [
    "../golden.py", "..", "a/b.v", "/etc/passwd", "/work/examples/behave/rv_accum/golden.py",
    ".hidden.v", "dir\\x.v", "x.v\0", "", " design.v", "design.exe", "a..v", "~/x.v",
    "x" * 70 + ".v",
])
def test_names_that_are_not_plain_files_are_refused(name: str) -> None:
    ws = Workspace()
    assert _kind(ws.write, name, "x") == "bad_name"
    assert _kind(ws.read, name) == "bad_name"
    assert ws.names() == []


def test_write_read_list_and_sizes() -> None:
    ws = Workspace()
    assert ws.write("design.v", "module m; endmodule\n") == 20
    ws.write("model.py", "é")  # two UTF-8 bytes
    assert ws.read("design.v") == "module m; endmodule\n"
    assert ws.sizes() == {"design.v": 20, "model.py": 2}
    assert ws.total_bytes() == 22
    assert _kind(ws.read, "missing.v") == "not_found"


def test_size_and_count_limits() -> None:
    ws = Workspace(WorkspaceLimits(max_files=2, max_file_bytes=10, max_total_bytes=15))
    assert _kind(ws.write, "a.v", "x" * 11) == "too_large"
    ws.write("a.v", "x" * 10)
    assert _kind(ws.write, "b.v", "x" * 6) == "too_large"  # 16 bytes in all
    ws.write("b.v", "x" * 5)
    assert _kind(ws.write, "c.v", "") == "too_many_files"
    ws.write("a.v", "y")  # replacing an existing file is not a new one
    assert ws.sizes() == {"a.v": 1, "b.v": 5}
    assert _kind(ws.write, "a.v", "nul\0") == "not_text"


def test_edit_replaces_exact_text_once_unless_asked() -> None:
    ws = Workspace()
    ws.write("d.v", "assign a = b;\nassign c = b;\n")
    assert _kind(ws.edit, "d.v", "= d;", "= e;") == "no_match"
    assert _kind(ws.edit, "d.v", "= b;", "= e;") == "ambiguous_match"
    assert ws.edit("d.v", "assign a = b;", "assign a = ~b;") == 1
    assert ws.edit("d.v", "b;", "x;", replace_all=True) == 2
    assert ws.read("d.v") == "assign a = ~x;\nassign c = x;\n"


def test_testbench_naming_and_the_default_design() -> None:
    assert is_testbench_name("tb_top.v") and is_testbench_name("top_tb.sv")
    assert is_testbench_name("test_top.v") and not is_testbench_name("top.v")
    ws = Workspace()
    for name in ("top.v", "tb_top.v", "defs.vh", "model.py", "alu.sv"):
        ws.write(name, "")
    assert ws.design_names() == ["alu.sv", "defs.vh", "top.v"]
