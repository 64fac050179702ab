"""Candidate.from_file(s): files keep the names they have on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtlforge.core.errors import ExtractionError
from rtlforge.core.models import Candidate


def test_from_files_keeps_names_and_contents(tmp_path: Path) -> None:
    (tmp_path / "alu.v").write_text("module alu; endmodule\n")
    (tmp_path / "pkg.sv").write_text("package p; endpackage\n")
    cand = Candidate.from_files([tmp_path / "alu.v", str(tmp_path / "pkg.sv")], top="alu")
    assert [f.name for f in cand.files] == ["alu.v", "pkg.sv"]
    assert cand.files[1].content == "package p; endpackage\n" and cand.top == "alu"
    assert Candidate.from_file(tmp_path / "alu.v").files[0].name == "alu.v"


def test_from_files_refuses_binary_and_same_names(tmp_path: Path) -> None:
    (tmp_path / "blob.v").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValueError, match=r"blob\.v is not a UTF-8 text file"):
        Candidate.from_file(tmp_path / "blob.v")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.v").write_text("module x; endmodule")
    (tmp_path / "x.v").write_text("module x; endmodule")
    with pytest.raises(ValueError, match="duplicate file names"):
        Candidate.from_files([tmp_path / "x.v", tmp_path / "a" / "x.v"])


FENCED = "Here is the adder:\n```verilog\nmodule add(input a, b, output y);\n" \
         "  assign y = a ^ b;\nendmodule\n```\nIt XORs the inputs.\n"


def test_from_completion_takes_the_verilog_out_of_an_llm_answer() -> None:
    cand = Candidate.from_completion(FENCED, task_id="t")
    assert cand.files[0].content == "module add(input a, b, output y);\n  assign y = a ^ b;\n" \
                                    "endmodule\n"
    assert cand.files[0].name == "design.v" and cand.task_id == "t"
    with pytest.raises(ExtractionError, match="no Verilog module"):
        Candidate.from_completion("I cannot do that.")


def test_a_fenced_answer_is_a_callers_mistake_for_from_source_and_from_files(
        tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"Candidate\.from_completion"):
        Candidate.from_source(FENCED)
    (tmp_path / "answer.v").write_text(FENCED)
    with pytest.raises(ValueError, match=r"answer\.v holds a markdown code fence"):
        Candidate.from_file(tmp_path / "answer.v")
    # a backtick that is Verilog (a directive, a macro use) is no fence
    assert Candidate.from_source("`define W 4\nmodule m; wire [`W-1:0] x; endmodule\n")
