"""Generators' answers for a task that wants several files (a CVDP problem) become candidates
holding those files, through the one extraction every consumer of generations uses."""

from __future__ import annotations

from rtlforge.core.answers import ANSWER_FILES_KEY
from rtlforge.core.interfaces import Generation, GenerationRequest
from rtlforge.core.models import Task
from rtlforge.generation.base import with_candidates

TASK = Task(id="t", spec="s", top="top", metadata={ANSWER_FILES_KEY: [
    {"path": "rtl/a.sv", "name": "a.sv"}, {"path": "rtl/top.sv", "name": "top.sv"}]})


def test_with_candidates_extracts_every_wanted_file() -> None:
    request = GenerationRequest(prompt="p", task=TASK, request_id="r")
    answers = [[Generation(text="```sv rtl/a.sv\nmodule a; endmodule\n```\n"
                                "### rtl/top.sv\n```sv\nmodule top; endmodule\n```",
                           generator="g"),
                Generation(text="no code here", generator="g")]]
    [[good, none]] = with_candidates(answers, [request])
    assert good.candidate is not None
    assert [f.name for f in good.candidate.files] == ["a.sv", "top.sv"]
    assert good.candidate.task_id == "t" and good.candidate.provenance.prompt_id == "r"
    assert none.candidate is None
    assert "none of the files" in none.metadata["extraction_error"]
