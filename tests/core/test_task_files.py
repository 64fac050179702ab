"""Task.from_files builds a task from files on disk; a testbench_top no file declares is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtlforge.core.models import PassRule, Task

TB = "module tb_adder;\n  adder dut();\n  initial $finish;\nendmodule\n"


def test_from_files_reads_each_file_under_its_own_name(tmp_path: Path) -> None:
    (tmp_path / "tb_adder.v").write_text(TB)
    (tmp_path / "vectors.mem").write_text("01\n10\n")
    (tmp_path / "ref.v").write_text("module adder; endmodule\n")
    task = Task.from_files("adder", testbench=[tmp_path / "tb_adder.v"],
                           support=[str(tmp_path / "vectors.mem")], golden=[tmp_path / "ref.v"],
                           spec="Add.", testbench_top="tb_adder",
                           pass_rule=PassRule(kind="regex", pass_regex="ALL OK"))
    assert task.id == task.top == "adder" and task.spec == "Add."
    assert [f.name for f in (*task.testbench, *task.support, *task.golden)] == [
        "tb_adder.v", "vectors.mem", "ref.v"]
    assert task.support[0].content == "01\n10\n" and task.pass_rule.pass_regex == "ALL OK"
    assert Task.from_files("adder", id="t1").testbench == ()


def test_a_testbench_top_no_testbench_file_declares_is_the_tasks_mistake(
        tmp_path: Path) -> None:
    (tmp_path / "tb.v").write_text(TB)
    with pytest.raises(ValueError, match=r"testbench_top 'tb' is not a module of the testbench "
                                         r"files \(tb\.v\)"):
        Task.from_files("adder", testbench=[tmp_path / "tb.v"], testbench_top="tb")
    # declared with a lifetime, or as a macromodule: found
    for header in ("module automatic tb_adder;", "macromodule tb_adder;"):
        (tmp_path / "tb.v").write_text(header + "\nendmodule\n")
        assert Task.from_files("adder", testbench=[tmp_path / "tb.v"],
                               testbench_top="tb_adder").testbench_top == "tb_adder"
