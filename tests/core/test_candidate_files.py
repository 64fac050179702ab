"""Candidate.from_file(s): files keep the names they have on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

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
