"""Task loading: the on-disk format, its refusals, the RTLLM loader and JSONL samples."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtlforge.core.errors import TaskFormatError
from rtlforge.core.models import PassRule, Port, SourceFile, Task
from rtlforge.tasks.loader import MAX_FILE_BYTES, load_task, load_tasks, save_task
from rtlforge.tasks.rtllm import load_rtllm, load_rtllm_task
from rtlforge.tasks.samples import Sample, load_samples

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_TASKS = REPO / "examples" / "tasks"
EXAMPLE_SAMPLES = REPO / "examples" / "samples" / "suite-samples.jsonl"
RTLLM = REPO.parent / "shared" / "benchmarks" / "rtllm"

GOLDEN = "module inv(input wire a, output wire y);\n    assign y = ~a;\nendmodule\n"
TB = (
    'module tb;\n    initial begin $display("Mismatches: 0 in 1 samples"); $finish; end\n'
    "endmodule\n"
)
MANIFEST = """\
id = "inv"
top = "inv"
spec = "Invert a."
testbench = ["tb.v"]
golden = ["golden.v"]
category = "combinational"
"""


def write_task(directory: Path, manifest: str = MANIFEST, files: dict[str, str] | None = None,
               ) -> Path:
    """A minimal valid task; ``files`` adds or replaces files next to the manifest."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in {"tb.v": TB, "golden.v": GOLDEN, **(files or {})}.items():
        (directory / name).write_text(text)
    (directory / "task.toml").write_text(manifest)
    return directory


def with_line(manifest: str, old: str, new: str) -> str:
    assert old in manifest
    return manifest.replace(old, new)


# --------------------------------------------------------------------------------------------
# the format
# --------------------------------------------------------------------------------------------


def test_load_minimal_task(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "inv"))
    assert task.id == "inv" and task.top == "inv" and task.spec == "Invert a."
    assert [f.name for f in task.testbench] == ["tb.v"]
    assert task.golden[0].content == GOLDEN
    assert task.pass_rule == PassRule()
    assert task.category == "combinational"


def test_load_task_accepts_the_manifest_path(tmp_path: Path) -> None:
    directory = write_task(tmp_path / "inv")
    assert load_task(directory / "task.toml") == load_task(directory)


def test_full_manifest(tmp_path: Path) -> None:
    manifest = MANIFEST.replace('spec = "Invert a."', 'spec_file = "spec.md"') + """\
testbench_top = "tb"
support = ["data.txt"]
cocotb_module = "test_inv.py"

[[ports]]
name = "a"
direction = "input"

[[ports]]
name = "y"
direction = "output"
width = 1
signed = false

[pass_rule]
kind = "regex"
pass_regex = 'Mismatches: 0 in [1-9]'
fail_regex = 'TIMEOUT'

[metadata]
source = "test"
tags = ["a", "b"]
nested = { depth = 2 }
"""
    directory = write_task(tmp_path / "inv", manifest, {"data.txt": "1\n2\n"})
    (directory / "spec.md").write_text("# Inverter\n")
    (directory / "test_inv.py").write_text("import cocotb\n")
    task = load_task(directory)
    assert task.spec == "# Inverter\n"
    assert task.testbench_top == "tb"
    assert task.support == (SourceFile(name="data.txt", content="1\n2\n"),)
    assert task.cocotb_module is not None and task.cocotb_module.name == "test_inv.py"
    assert task.ports == (Port(name="a", direction="input"), Port(name="y", direction="output"))
    assert task.pass_rule.kind == "regex" and task.pass_rule.fail_regex == "TIMEOUT"
    assert task.metadata == {"source": "test", "tags": ["a", "b"], "nested": {"depth": 2}}


def test_save_load_round_trip(tmp_path: Path) -> None:
    task = Task(
        id="rt-1",
        spec='Line one\nline "two" with \\ and \t tab\n\x7f',
        top="dut",
        ports=(Port(name="a", direction="input", width=4, signed=True),),
        testbench=(SourceFile(name="tb.sv", content="module tb; endmodule\r\n"),),
        support=(SourceFile(name="spec.md", content="not the spec: a data file named spec.md"),),
        golden=(SourceFile(name="dut.v", content="module dut(input [3:0] a); endmodule\n"),),
        testbench_top="tb",
        cocotb_module=SourceFile(name="test_dut.py", content="# cocotb\n"),
        pass_rule=PassRule(kind="regex", pass_regex=r"^PASS$", fail_regex=r"FAIL|ERROR"),
        category="test",
        metadata={"n": 1, "x": 1.5, "ok": True, "list": [1, "two"], "odd key": {"k": "v"},
                  "unicode": "é ✓"},
    )
    loaded = load_task(save_task(task, tmp_path / "out"))
    assert loaded == task
    assert loaded.digest() == task.digest()
    # saving what was loaded is stable too
    assert load_task(save_task(loaded, tmp_path / "again")) == task


def test_save_refuses_what_load_would_refuse(tmp_path: Path) -> None:
    bad_top = Task(id="x", spec="s", top="not an identifier")
    with pytest.raises(TaskFormatError, match="top"):
        save_task(bad_top, tmp_path / "a")
    null_meta = Task(id="x", spec="s", top="t", metadata={"k": None})
    with pytest.raises(TaskFormatError, match="TOML"):
        save_task(null_meta, tmp_path / "b")


def test_bundled_suite_loads() -> None:
    tasks = load_tasks(EXAMPLE_TASKS)
    assert len(tasks) >= 12
    assert [t.id for t in tasks] == sorted(t.id for t in tasks)
    categories = {t.category for t in tasks}
    assert {"combinational", "arithmetic", "sequential", "fsm", "memory", "handshake"} <= categories
    for task in tasks:
        assert task.spec.strip() and task.testbench and task.golden
        declared = re.findall(r"^\s*module\s+(\w+)", task.golden[0].content, re.M)
        assert task.top in declared, task.id
        assert f"module {task.top}" in task.spec, f"{task.id}: spec must show the module header"
        assert "Mismatches: %0d in %0d samples" in task.testbench[0].content
        assert "TIMEOUT" in task.testbench[0].content
        assert {p.name for p in task.ports}, task.id


def test_bundled_samples_cover_every_task() -> None:
    samples = load_samples(EXAMPLE_SAMPLES)
    by_task: dict[str, list[Sample]] = {}
    for sample in samples:
        by_task.setdefault(sample.task_id, []).append(sample)
    assert set(by_task) == {t.id for t in load_tasks(EXAMPLE_TASKS)}
    for task_id, group in by_task.items():
        assert 3 <= len(group) <= 5, task_id
        assert {s.extra["expect"] for s in group} <= {"pass", "fail", "error"}
        assert "pass" in {s.extra["expect"] for s in group}, task_id
    assert any("```verilog" in s.completion for s in samples)


# --------------------------------------------------------------------------------------------
# refusals
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('top = "inv"', 'top = "inv"\ncolour = "red"', r"unknown key.*colour"),
        ('top = "inv"\n', "", r"missing required field 'top'"),
        ('top = "inv"', "top = 3", r"'top' must be a string"),
        ('top = "inv"', 'top = "1bad"', r"not a Verilog identifier"),
        ('spec = "Invert a."', "", r"exactly one of 'spec' or 'spec_file'"),
        ('spec = "Invert a."', 'spec = "x"\nspec_file = "tb.v"', r"exactly one"),
        ('testbench = ["tb.v"]', 'testbench = "tb.v"', r"'testbench' must be an array"),
        ('testbench = ["tb.v"]', "testbench = [1]", r"'testbench'.*file name string"),
        ('testbench = ["tb.v"]', 'testbench = ["missing.v"]', r"'testbench'.*does not exist"),
        ('testbench = ["tb.v"]', 'testbench = ["../x.v"]', r"'testbench'.*not a plain file name"),
        ('testbench = ["tb.v"]', 'testbench = ["/etc/passwd"]', r"not a plain file name"),
        ('testbench = ["tb.v"]', 'testbench = ["sub/tb.v"]', r"not a plain file name"),
        ('testbench = ["tb.v"]', 'testbench = [".hidden"]', r"not a plain file name"),
        ('golden = ["golden.v"]', 'golden = ["tb.v"]', r"already listed in 'testbench'"),
        ('category = "combinational"', "category = ['a']", r"'category' must be a string"),
        ('category = "combinational"', "[[ports]]\nname = 'a'\ndirection = 'sideways'",
         r"ports\[0\]"),
        ('category = "combinational"', "[[ports]]\nname = 'a'\ndirection = 'input'\nwidth = '8'",
         r"positive integer"),
        ('category = "combinational"', "[[ports]]\nname = 'a'\ndirection = 'input'\nwidth = 0",
         r"positive integer"),
        ('category = "combinational"', "[[ports]]\nname = 'a'\ndirection = 'input'\ncolour = 1",
         r"ports\[0\]: unknown key"),
        ('category = "combinational"', "ports = 'a'", r"'ports' must be an array"),
        ('category = "combinational"', "[pass_rule]\nkind = 'magic'", r"pass_rule"),
        ('category = "combinational"', "[pass_rule]\nkind = 'regex'", r"needs a pass_regex"),
        ('category = "combinational"', "[pass_rule]\nkind = 'regex'\npass_regex = '('",
         r"not a valid regex"),
        ('category = "combinational"', "[pass_rule]\nextra = 1", r"pass_rule.*unknown key"),
        ('category = "combinational"', "metadata = 3", r"'metadata' must be a table"),
        ('category = "combinational"', "[metadata]\nwhen = 2024-01-01", r"TOML dates"),
        ('id = "inv"', 'id = ""', r"field 'id'"),
        ('id = "inv"', "id = 5", r"'id' must be a string"),
    ],
)
def test_malformed_manifest(tmp_path: Path, old: str, new: str, message: str) -> None:
    directory = write_task(tmp_path / "t", with_line(MANIFEST, old, new))
    with pytest.raises(TaskFormatError, match=message):
        load_task(directory)


def test_error_names_the_task(tmp_path: Path) -> None:
    directory = write_task(tmp_path / "t", with_line(MANIFEST, '["tb.v"]', '["nope.v"]'))
    with pytest.raises(TaskFormatError, match=r"task 'inv': field 'testbench'"):
        load_task(directory)


def test_invalid_toml(tmp_path: Path) -> None:
    directory = write_task(tmp_path / "t", 'id = "inv\ntop = = 3\n')
    with pytest.raises(TaskFormatError, match="not valid TOML"):
        load_task(directory)


@settings(max_examples=150, deadline=None)
@given(data=st.one_of(st.binary(max_size=120), st.text(max_size=120).map(str.encode)))
def test_garbage_manifest_only_raises_task_format_error(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    directory = write_task(tmp_path_factory.mktemp("garbage"))
    (directory / "task.toml").write_bytes(data)
    with pytest.raises(TaskFormatError):
        load_task(directory)


def test_manifest_not_utf8(tmp_path: Path) -> None:
    directory = write_task(tmp_path / "t")
    (directory / "task.toml").write_bytes(b'id = "\xff\xfe"\n')
    with pytest.raises(TaskFormatError, match="not UTF-8"):
        load_task(directory)


def test_missing_directory_and_manifest(tmp_path: Path) -> None:
    with pytest.raises(TaskFormatError, match="does not exist"):
        load_task(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TaskFormatError, match=r"no task\.toml"):
        load_task(tmp_path / "empty")


def test_binary_file(tmp_path: Path) -> None:
    directory = write_task(tmp_path / "t")
    (directory / "golden.v").write_bytes(b"module inv;\x00\x01\x02 endmodule")
    with pytest.raises(TaskFormatError, match=r"'golden'.*binary"):
        load_task(directory)


def test_non_utf8_file(tmp_path: Path) -> None:
    directory = write_task(tmp_path / "t")
    (directory / "tb.v").write_bytes(b"// caf\xe9\nmodule tb; endmodule\n")
    with pytest.raises(TaskFormatError, match=r"'testbench'.*not UTF-8"):
        load_task(directory)


def test_oversized_file(tmp_path: Path) -> None:
    directory = write_task(tmp_path / "t")
    (directory / "golden.v").write_text("// x\n" * (MAX_FILE_BYTES // 5 + 10))
    with pytest.raises(TaskFormatError, match="byte limit"):
        load_task(directory)


def test_listed_directory_is_not_a_file(tmp_path: Path) -> None:
    directory = write_task(tmp_path / "t", with_line(MANIFEST, '["golden.v"]', '["sub"]'))
    (directory / "sub").mkdir()
    with pytest.raises(TaskFormatError, match="not a regular file"):
        load_task(directory)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks on this platform")
def test_symlink_escaping_the_directory(tmp_path: Path) -> None:
    secret = tmp_path / "secret.v"
    secret.write_text("module secret; endmodule\n")
    directory = write_task(tmp_path / "t")
    (directory / "golden.v").unlink()
    (directory / "golden.v").symlink_to(secret)
    with pytest.raises(TaskFormatError, match="symlink leading outside"):
        load_task(directory)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks on this platform")
def test_symlinks_inside_the_directory_are_fine_and_dangling_ones_are_not(tmp_path: Path) -> None:
    directory = write_task(tmp_path / "t")
    (directory / "real.v").write_text(GOLDEN)
    (directory / "golden.v").unlink()
    (directory / "golden.v").symlink_to("real.v")
    assert load_task(directory).golden[0] == SourceFile(name="golden.v", content=GOLDEN)
    (directory / "real.v").unlink()
    with pytest.raises(TaskFormatError, match="golden"):
        load_task(directory)


def test_load_tasks_sorted_and_duplicate_ids(tmp_path: Path) -> None:
    write_task(tmp_path / "b", MANIFEST.replace('id = "inv"', 'id = "zeta"'))
    write_task(tmp_path / "a", MANIFEST.replace('id = "inv"', 'id = "alpha"'))
    (tmp_path / "not-a-task").mkdir()
    assert [t.id for t in load_tasks(tmp_path)] == ["alpha", "zeta"]
    write_task(tmp_path / "c", MANIFEST.replace('id = "inv"', 'id = "zeta"'))
    with pytest.raises(TaskFormatError, match="duplicate task id 'zeta'"):
        load_tasks(tmp_path)


def test_load_tasks_bad_root(tmp_path: Path) -> None:
    with pytest.raises(TaskFormatError):
        load_tasks(tmp_path / "missing")
    with pytest.raises(TaskFormatError, match=r"no tasks found under .*looked for suite"):
        load_tasks(tmp_path)  # an empty folder is a mistake to report, not an empty suite


# --------------------------------------------------------------------------------------------
# samples
# --------------------------------------------------------------------------------------------


def test_load_samples(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = [
        {"task_id": "inv", "completion": "module inv; endmodule", "expect": "pass"},
        {"task_id": "inv", "completion": "", "model": "m", "n": 2},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    samples = load_samples(path)
    assert samples == [
        Sample(task_id="inv", completion="module inv; endmodule", extra={"expect": "pass"}),
        Sample(task_id="inv", completion="", extra={"model": "m", "n": 2}),
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r":2: invalid JSON"),
        ("[1, 2]", r":2: expected a JSON object"),
        ('{"completion": "x"}', r":2: 'task_id'"),
        ('{"task_id": 3, "completion": "x"}', r":2: 'task_id'"),
        ('{"task_id": "a"}', r":2: 'completion'"),
        ('{"task_id": "a", "completion": null}', r":2: 'completion'"),
    ],
)
def test_load_samples_errors_name_the_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"task_id": "a", "completion": "x"}\n' + line + "\n")
    with pytest.raises(TaskFormatError, match=message):
        load_samples(path)


def test_load_samples_unreadable(tmp_path: Path) -> None:
    with pytest.raises(TaskFormatError):
        load_samples(tmp_path / "missing.jsonl")
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(TaskFormatError, match="not UTF-8"):
        load_samples(tmp_path / "bin.jsonl")


# --------------------------------------------------------------------------------------------
# RTLLM
# --------------------------------------------------------------------------------------------


def test_rtllm_loader_on_a_synthetic_design(tmp_path: Path) -> None:
    design = tmp_path / "Arithmetic" / "Adder" / "adder_x"
    design.mkdir(parents=True)
    (design / "design_description.txt").write_text("Add things.\n")
    (design / "testbench.v").write_text(
        "module tb;\n  // instantiate verified_adder_x? no: the testbench uses adder_x\n"
        "  reg a; wire y;\n  adder_x #(.W(1)) uut (.a(a), .y(y));\n"
        "  initial begin repeat (2) #1; if (y) $display(\"x\"); end\nendmodule\n"
    )
    (design / "verified_adder_x.v").write_text(
        "// module verified_adder_x is described here\n"
        "module verified_adder_x #(parameter W = 1) (input a, output y);\n"
        "  half h (.a(a), .y(y));\nendmodule\n"
        "module half (input a, output y); assign y = a; endmodule\n"
    )
    (design / "data.txt").write_text("01\n")
    task = load_rtllm_task(design)
    assert task.id == "adder_x" and task.top == "adder_x" and task.testbench_top == "tb"
    assert task.category == "Adder" and task.metadata["group"] == "Arithmetic"
    assert task.metadata["reference_module"] == "verified_adder_x"
    golden = task.golden[0].content
    assert "module adder_x #(" in golden
    assert "// module verified_adder_x is described here" in golden  # comments untouched
    assert [f.name for f in task.support] == ["data.txt"]
    assert load_rtllm(tmp_path) == [task]


@pytest.mark.shared
@pytest.mark.skipif(not RTLLM.is_dir(), reason=f"RTLLM v2 data not found at {RTLLM}")
def test_rtllm_benchmark_loads() -> None:
    tasks = load_rtllm(RTLLM)
    assert len(tasks) == 50
    assert len({t.id for t in tasks}) == 50
    assert sum(t.metadata["renamed"] for t in tasks) == 28
    strip = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
    for task in tasks:
        testbench = strip.sub("", task.testbench[0].content)
        golden = strip.sub("", task.golden[0].content)
        assert re.search(rf"(?<![\w$]){re.escape(task.top)}\s*(#|\w+\s*\()", testbench), task.id
        assert re.search(rf"^\s*module\s+{re.escape(task.top)}\b", golden, re.M), task.id
        assert not re.search(r"^\s*module\s+verified_", golden, re.M) or task.id == "asyn_fifo"
        assert task.category and task.spec.strip()
        assert all(not f.name.startswith("verified_") for f in task.support)
        assert "design_description.txt" not in {f.name for f in task.support}
    by_id = {t.id: t for t in tasks}
    assert by_id["multi_pipe_4bit"].metadata["reference_module"] == "verified_multi_pipe"
    assert {f.name for f in by_id["asyn_fifo"].support} == {"rempty.txt", "tdata.txt", "wfull.txt"}
    assert by_id["fixed_point_substractor"].top == "fixed_point_subtractor"
