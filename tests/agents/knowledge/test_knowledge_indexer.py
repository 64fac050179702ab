"""The reference indexer on a small folder written here, and the leakage guards (id, path,
content digest, evaluation marker)."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import pytest

from rtlforge.agents.knowledge.base import LeakageGuard, content_digest
from rtlforge.agents.knowledge.indexer import EVALUATION_MARKER, index_folder, scan_ports
from rtlforge.agents.knowledge.retrieval import KeywordRetriever
from rtlforge.tasks.rtllm import load_rtllm_task

GOLDEN = """// reference for the up counter
module verified_up_counter(
    input clk,
    input rst_n,
    input en,
    output reg [3:0] count   // wraps at 15
);
  always @(posedge clk or negedge rst_n)
    if (!rst_n) count <= 4'd0; else if (en) count <= count + 4'd1;
endmodule
"""
TESTBENCH = """module tb;
  reg clk = 0, rst_n = 0, en = 1; wire [3:0] count;
  up_counter dut(.clk(clk), .rst_n(rst_n), .en(en), .count(count));
  initial begin $display("Passed"); $finish; end
endmodule
"""
SHIFTER = """// Four-bit serial-in shift register.
// Non-ANSI header on purpose.
module shifter(clk, sin, q);
  input clk;
  input sin;
  output [3:0] q;
  reg [3:0] q;
  always @(posedge clk) q <= {q[2:0], sin};
endmodule
"""
SECRET = """module hidden_eval_counter #(parameter W = 8) (input wire clk, output reg [W-1:0] q);
  always @(posedge clk) q <= q + 1;
endmodule
"""


@pytest.fixture
def refs(tmp_path: Path) -> Path:
    task = tmp_path / "Control" / "up_counter"
    task.mkdir(parents=True)
    (task / "design_description.txt").write_text(
        "Please act as a professional verilog designer. Implement a 4-bit up counter with an "
        "enable and an active-low asynchronous reset.\n")
    (task / "verified_up_counter.v").write_text(GOLDEN)
    (task / "testbench.v").write_text(TESTBENCH)
    (tmp_path / "misc").mkdir()
    (tmp_path / "misc" / "shifter.v").write_text(SHIFTER)
    (tmp_path / "_llm_outputs").mkdir()
    (tmp_path / "_llm_outputs" / "up_counter.v").write_text(GOLDEN)
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / EVALUATION_MARKER).write_text("")
    (tmp_path / "eval" / "secret.v").write_text(SECRET)
    return tmp_path


def test_index_reads_modules_ports_synopsis_and_skips(refs: Path) -> None:
    index = index_folder(refs, today=date(2026, 12, 1))
    by_module = {m.module: m for m in index.modules}
    assert set(by_module) == {"verified_up_counter", "shifter", "hidden_eval_counter"}
    counter = by_module["verified_up_counter"]
    assert counter.file == "Control/up_counter/verified_up_counter.v"
    assert counter.task_id == "up_counter"
    assert [(p.direction, p.range, p.name) for p in counter.ports] == [
        ("input", "", "clk"), ("input", "", "rst_n"), ("input", "", "en"),
        ("output", "[3:0]", "count")]
    assert counter.synopsis.startswith("Implement a 4-bit up counter")  # boilerplate dropped
    assert counter.lint.status == "not_checked"
    shifter = by_module["shifter"]
    assert [(p.direction, p.range, p.name) for p in shifter.ports] == [
        ("input", "", "clk"), ("input", "", "sin"), ("output", "[3:0]", "q")]
    assert shifter.synopsis == "Four-bit serial-in shift register. Non-ANSI header on purpose."
    assert shifter.task_id is None and not shifter.evaluation
    secret = by_module["hidden_eval_counter"]
    assert secret.evaluation
    assert [(p.direction, p.range, p.name) for p in secret.ports] == [
        ("input", "", "clk"), ("output", "[W-1:0]", "q")]
    assert "Control/up_counter/testbench.v: testbench" in index.skipped
    assert all("_llm_outputs" not in m.file for m in index.modules)


def test_port_scanner_ignores_comments_and_defaults() -> None:
    text = "module m /* (input fake) */ (input [1:0] a = 2'b0, // output nope\n output y);"
    assert [(p.direction, p.name) for p in scan_ports(text, text.index(" /*"))] == [
        ("input", "a"), ("output", "y")]


@pytest.mark.parametrize(("text", "expected"), [
    ("module m", []), ("module m (", []), ("module m #(", []), ("module m #(parameter", []),
    ("module m (input a", [("input", "a")]),
    ("module m (a, b", [("unknown", "a"), ("unknown", "b")]),
])
def test_port_scanner_survives_truncated_headers(text: str, expected: list) -> None:
    ports = scan_ports(text, len("module m"))
    assert [(p.direction, p.name) for p in ports] == expected


def entries_for(refs: Path):
    return KeywordRetriever(index_folder(refs).entries())


QUERY = "up counter enable clk count"


def retrieved(retriever: KeywordRetriever, guard: LeakageGuard | None) -> set[str]:
    return {h.entry.title for h in retriever.retrieve(QUERY, k=10, guard=guard)}


def test_evaluation_data_is_never_retrieved_even_without_a_guard(refs: Path) -> None:
    retriever = entries_for(refs)
    assert retrieved(retriever, None) == {"verified_up_counter", "shifter"}
    assert "hidden_eval_counter" not in retrieved(retriever, LeakageGuard(task_ids={"x"}))
    everything = LeakageGuard(block_evaluation=False)
    assert "hidden_eval_counter" in retrieved(retriever, everything)  # the marker is what hides it


def test_guard_by_task_id(refs: Path) -> None:
    assert retrieved(entries_for(refs), LeakageGuard(task_ids={"up_counter"})) == {"shifter"}


def test_guard_by_path_covers_files_and_folders(refs: Path) -> None:
    retriever = entries_for(refs)
    folder = LeakageGuard(paths={str(refs / "Control")})
    assert retrieved(retriever, folder) == {"shifter"}
    file = LeakageGuard(paths={str(refs / "misc" / "shifter.v")})
    assert retrieved(retriever, file) == {"verified_up_counter"}


def test_guard_by_digest_catches_a_renamed_copy_of_the_golden(refs: Path) -> None:
    task = load_rtllm_task(refs / "Control" / "up_counter")  # its golden's module is renamed
    assert "module up_counter" in task.golden[0].content
    copy = refs / "misc" / "my_counter_v2.v"
    copy.write_text(GOLDEN.replace("verified_up_counter", "totally_new_name"))
    retriever = entries_for(refs)
    assert "totally_new_name" in retrieved(retriever, None)
    guard = LeakageGuard.for_task(task)
    assert retrieved(retriever, guard) == {"shifter"}  # id blocks the original, digest the copy
    blocked = {h.entry.title: guard.blocks(h.entry) for h in retriever.rank(QUERY, focus="full")}
    assert blocked["totally_new_name"] == "content digest"
    assert blocked["verified_up_counter"] == "task up_counter"


def test_content_digest_ignores_file_names_whitespace_and_module_names() -> None:
    assert content_digest(GOLDEN) == content_digest(
        GOLDEN.replace("verified_up_counter", "x").replace("\n", "\r\n").replace("  ", "\t"))
    assert content_digest(GOLDEN) != content_digest(GOLDEN.replace("4'd1", "4'd2"))


@pytest.mark.tools
def test_lint_status_comes_from_the_sandboxed_pipeline(refs: Path) -> None:
    if shutil.which("iverilog") is None:
        pytest.skip("iverilog not installed")
    from rtlforge.core.plugins import PluginHost
    from rtlforge.validate.pipeline import Pipeline

    (refs / "misc" / "broken.v").write_text("module broken(input a, output y);\n"
                                            "assign y = a +;\nendmodule\n")
    pipeline = Pipeline.build(PluginHost(), lint=True, simulate=False)
    index = index_folder(refs / "misc", pipeline=pipeline)
    status = {m.module: m.lint.status for m in index.modules}
    assert status == {"broken": "fail", "shifter": "pass"}
