"""Multi-file answers (rtlforge.core.answers): the answer shapes CVDP's framework and models
produce, read back into the files a task wants."""

from __future__ import annotations

import pytest

from rtlforge.core.answers import (
    ANSWER_FILES_KEY,
    MAX_ANSWER_CHARS,
    AnswerFile,
    answer_files,
    candidate_from_answer,
    extract_files,
)
from rtlforge.core.errors import ConfigError, ExtractionError
from rtlforge.core.models import Task

TWO = (AnswerFile(path="rtl/counter.sv", name="counter.sv"),
       AnswerFile(path="rtl/counter_top.sv", name="counter_top.sv"))
ONE = (AnswerFile(path="rtl/fifo.sv", name="fifo.sv"),)
A = "module counter; endmodule"
B = "module counter_top; endmodule"


def test_fence_lines_name_the_files() -> None:
    answer = (f"Here you go.\n```systemverilog rtl/counter.sv\n{A}\n```\nand\n"
              f"```verilog rtl/counter_top.sv\n{B}\n```\n")
    assert extract_files(answer, TWO) == {"counter.sv": A + "\n", "counter_top.sv": B + "\n"}


def test_headings_and_bold_lines_above_a_block_name_it() -> None:
    answer = (f"### rtl/counter.sv\n\n```verilog\n{A}\n```\n\n**`rtl/counter_top.sv`**\n"
              f"```\n{B}\n```\n")
    assert extract_files(answer, TWO) == {"counter.sv": A + "\n", "counter_top.sv": B + "\n"}


def test_a_unique_base_name_or_a_container_path_names_a_file() -> None:
    answer = f"File: counter.sv\n```sv\n{A}\n```\n```sv /code/rtl/counter_top.sv\n{B}\n```"
    assert set(extract_files(answer, TWO)) == {"counter.sv", "counter_top.sv"}


def test_the_last_block_for_a_path_wins_and_unknown_paths_are_ignored() -> None:
    answer = (f"```verilog rtl/counter.sv\nmodule draft; endmodule\n```\n"
              f"```verilog rtl/helper.sv\nmodule helper; endmodule\n```\n"
              f"```verilog rtl/counter.sv\n{A}\n```")
    assert extract_files(answer, TWO) == {"counter.sv": A + "\n"}


def test_a_missing_file_is_left_out_for_the_validator_to_report() -> None:
    candidate = candidate_from_answer(f"```verilog rtl/counter.sv\n{A}\n```", TWO, task_id="t")
    assert [f.name for f in candidate.files] == ["counter.sv"]
    assert candidate.task_id == "t"


def test_cvdp_json_schema_and_plain_mappings() -> None:
    schema = '{"code": [{"rtl/counter.sv": "a"}, {"rtl/counter_top.sv": "b"}]}'
    assert extract_files(schema, TWO) == {"counter.sv": "a", "counter_top.sv": "b"}
    fenced = '```json\n{"rtl/counter.sv": "a"}\n```'
    assert extract_files(fenced, TWO) == {"counter.sv": "a"}
    assert extract_files('{"response": "module fifo; endmodule"}', ONE) == {
        "fifo.sv": "module fifo; endmodule"}


def test_a_mapping_from_a_program() -> None:
    assert extract_files({"rtl/counter.sv": A, "./rtl/counter_top.sv": B, "x": "y"}, TWO) == {
        "counter.sv": A, "counter_top.sv": B}


def test_one_wanted_file_takes_an_unnamed_block_or_bare_verilog() -> None:
    fenced = "Sure:\n```python\nprint(1)\n```\n```systemverilog\nmodule fifo; endmodule\n```\n"
    assert extract_files(fenced, ONE) == {"fifo.sv": "module fifo; endmodule\n"}
    bare = "The fix:\nmodule fifo;\nendmodule\nDone."
    assert extract_files(bare, ONE)["fifo.sv"].startswith("module fifo;")
    thinking = "<think>```verilog rtl/fifo.sv\nmodule old; endmodule\n```</think>\n" \
               "```verilog rtl/fifo.sv\nmodule fifo; endmodule\n```"
    assert extract_files(thinking, ONE) == {"fifo.sv": "module fifo; endmodule\n"}


def test_longer_fences_hold_inner_fences_and_unclosed_blocks_run_to_the_end() -> None:
    answer = "````verilog rtl/fifo.sv\n// ```\nmodule fifo; endmodule\n````\n"
    assert extract_files(answer, ONE) == {"fifo.sv": "// ```\nmodule fifo; endmodule\n"}
    cut = "```verilog rtl/fifo.sv\nmodule fifo;\n"
    assert extract_files(cut, ONE) == {"fifo.sv": "module fifo;\n"}


def test_an_answer_without_any_wanted_file_is_an_extraction_error() -> None:
    with pytest.raises(ExtractionError, match="none of the files"):
        extract_files("I cannot help with that.", TWO)
    with pytest.raises(ExtractionError, match="no Verilog module"):
        extract_files("prose only", ONE)
    with pytest.raises(ExtractionError, match="text or a mapping"):
        extract_files(42, TWO)  # type: ignore[arg-type]
    with pytest.raises(ExtractionError, match="limit"):
        extract_files("x" * (MAX_ANSWER_CHARS + 1), TWO)


def test_deep_or_broken_json_falls_back_to_the_text_rules() -> None:
    for deep in ("{" * 10_000, '{"code": ' + "[" * 100_000):
        with pytest.raises(ExtractionError, match="none of the files"):
            extract_files(deep, TWO)
    with pytest.raises(ExtractionError):
        extract_files('{"code": [1, 2, {"rtl/nope.sv": "x"}]}', TWO)


def test_a_task_declares_its_files_in_metadata() -> None:
    task = Task(id="t", spec="s", top="counter", metadata={ANSWER_FILES_KEY: [
        {"path": "rtl/counter.sv", "name": "counter.sv"}]})
    assert answer_files(task) == (AnswerFile(path="rtl/counter.sv", name="counter.sv"),)
    assert answer_files(Task(id="t", spec="s", top="x")) == ()
    for bad in ([], [{"path": "a"}], [{"path": "a", "name": "a"}, {"path": "a", "name": "b"}],
                "rtl/x.sv"):
        with pytest.raises(ConfigError, match=ANSWER_FILES_KEY):
            answer_files(Task(id="t", spec="s", top="x", metadata={ANSWER_FILES_KEY: bad}))
