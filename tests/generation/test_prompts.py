"""Prompt templates (data files, whitelist rendering, injection safety) and extraction edges."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtlforge.core.errors import ExtractionError
from rtlforge.core.extract import extract_verilog
from rtlforge.core.models import Task
from rtlforge.generation.prompts import (
    HistoryEntry,
    PromptTemplate,
    TemplateError,
    available_templates,
    load_template,
)

TASK = Task(id="inc", spec="Build an incrementer `inc`.", top="inc")
SRC = "module inc(input [3:0] a, output [3:0] y);\n  assign y = a + 1;\nendmodule"


def test_bundled_templates_load() -> None:
    assert {"pareto", "spec"} <= set(available_templates())
    pareto = load_template("pareto")
    assert pareto.uses_history and not load_template("spec").uses_history
    assert "<think>" in (pareto.system or "") and "<answer>" in (pareto.system or "")


def test_first_iteration_says_no_previous_circuit() -> None:
    req = load_template("pareto").request(TASK, iteration=1, iterations=3, request_id="r")
    assert "## Circuit history\n\nNo previous circuit.\n" in req.prompt
    assert req.prompt.startswith("## Specification\n\nBuild an incrementer `inc`.")
    assert req.iteration == 0 and req.request_id == "r" and req.task == TASK


def test_history_rendering_exact_format() -> None:
    history = [
        HistoryEntry(source=SRC + "\n\n", iteration=1, power=0.00254, delay=0.41833, area=60.8),
        HistoryEntry(source=SRC, iteration=2, verdict="fail", message="Mismatches: 3"),
    ]
    text = load_template("pareto").render_history(history)
    assert text == (
        "### Circuit 1 (iteration 1)\n```verilog\n" + SRC + "\n```\n"
        "PPA: power = 0.00254 mW, delay = 0.4183 ns, area = 60.8 um^2\n\n"
        "### Circuit 2 (iteration 2)\n```verilog\n" + SRC + "\n```\n"
        "Result: fail: Mismatches: 3"
    )
    prompt = load_template("pareto").request(TASK, history, iteration=3, iterations=3).prompt
    assert "## Circuit history\n\n### Circuit 1 (iteration 1)" in prompt
    assert "Write circuit 3 of 3" in prompt


@pytest.mark.parametrize("payload", ["{history}", "{0.__class__}", "{spec.__init__}", "{{x}}",
                                     "{top!r:>10}", "{"])
def test_untrusted_text_is_never_expanded(payload: str) -> None:
    task = Task(id="inc", spec=f"spec with {payload} inside", top="inc")
    history = [HistoryEntry(source=f"// {payload}\n{SRC}", iteration=1, verdict="fail",
                            message=payload)]
    req = load_template("pareto").request(task, history, iteration=2, iterations=2)
    assert f"spec with {payload} inside" in req.prompt
    assert f"// {payload}" in req.prompt and f"Result: fail: {payload}" in req.prompt
    assert req.prompt.count("## Circuit history") == 1


@pytest.mark.parametrize("user", ["{spec.__class__}", "{spec[0]}", "{unknown}", "{0}",
                                  "{spec!r}", "{spec:>40}", "unbalanced {"])
def test_templates_with_fields_outside_the_whitelist_are_refused(user: str) -> None:
    with pytest.raises(TemplateError):
        PromptTemplate(name="bad", user=user)


def test_template_from_toml_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\nuser = "Do {top}: {spec} {{literal}}"\n'
                    '[history]\nempty = "none yet"\n')
    tmpl = load_template(path)
    assert tmpl.request(TASK).prompt == "Do inc: Build an incrementer `inc`. {literal}"
    assert tmpl.render_history([]) == "none yet"
    (tmp_path / "bad.toml").write_text('name = "x"\nuser = "{x}"\n')
    with pytest.raises(TemplateError, match="not allowed"):
        load_template(tmp_path / "bad.toml")
    (tmp_path / "odd.toml").write_text('name = "x"\nuser = "y"\ncolour = 1\n')
    with pytest.raises(TemplateError, match="unknown keys"):
        load_template(tmp_path / "odd.toml")
    with pytest.raises(TemplateError, match="no template"):
        load_template("nonexistent")


# --------------------------------------------------------------------------------------------
# extraction edge cases
# --------------------------------------------------------------------------------------------

M = "module m(input a, output y);\n  assign y = a;\nendmodule"


def test_prose_mentioning_module_is_not_code() -> None:
    text = f"The module below is a buffer; no other module or endmodule is needed.\n{M}\nDone."
    assert extract_verilog(text).strip() == M


def test_comments_and_strings_cannot_start_or_end_a_module() -> None:
    body = ("module m(input a, output y); // endmodule is a keyword\n"
            '  /* module fake(input b); endmodule */\n  initial $display("endmodule");\n'
            "  assign y = a;\nendmodule")
    assert extract_verilog(f"```verilog\n{body}\n```").strip() == body


def test_keeps_define_lines_before_the_module() -> None:
    code = ("`timescale 1ns/1ps\n`define W 8\n`define SUM(a, b) \\\n  ((a) + (b))\n"
            "module m(input [`W-1:0] a, output [`W-1:0] y);\n  assign y = `SUM(a, 1);\n"
            "endmodule")
    out = extract_verilog(f"Here:\n```verilog\n{code}\n```")
    assert out.strip() == code


def test_answer_tags_beat_drafts_in_think() -> None:
    text = (f"<think>draft:\nmodule m(input a); endmodule\n</think>\n<answer>\n```verilog\n{M}\n"
            "```\n</answer>")
    assert extract_verilog(text).strip() == M
    # without answer tags, what follows </think> wins over the draft
    assert extract_verilog(text.replace("<answer>", "").replace("</answer>", "")).strip() == M


def test_several_modules_and_a_redefinition_keep_the_last() -> None:
    sub = "module sub(input a, output y); assign y = ~a; endmodule"
    fixed = "module sub(input a, output y); assign y = a; endmodule"
    top = "module top(input a, output y); sub u(.a(a), .y(y)); endmodule"
    out = extract_verilog(f"```verilog\n{sub}\n{top}\n```\nFix:\n```verilog\n{fixed}\n```")
    assert out.index("module top") < out.index(fixed) and sub not in out


def test_truncated_output_is_an_explicit_error() -> None:
    with pytest.raises(ExtractionError, match="truncated"):
        extract_verilog("<answer>\n```verilog\nmodule m(input a, output y);\n  assign")
    # a complete module followed by a cut-off one keeps the complete one
    out = extract_verilog(f"{M}\nmodule n(input a);\n  wire")
    assert out.strip() == M


# ------------------------------------------------------------------ the paper template


def _paper_history() -> list[HistoryEntry]:
    return [
        HistoryEntry(source=SRC, iteration=1, power=0.00254, delay=0.41833, area=60.8),
        HistoryEntry(source=SRC.replace("+ 1", "- 1"), iteration=2, verdict="fail",
                     message="Mismatches: 3"),
    ]


#: Appendix C of the Pareto paper as ../shared/papers/pareto-appendix-c.md quotes it, word
#: spaces restored by hand: C.1 from "the reasoning process" on, C.2 and C.3 (oracle: the paper).
C1_TAIL = (
    "the reasoning process in the mind and then provides the user with the answer. The "
    "reasoning process and answer are enclosed within <think> </think> and <answer> </answer> "
    "tags, respectively.\nNow the user asks you to write verilog code as shown in <Spec>. "
    "After thinking, enclose the final verilog code in ```verilog ``` within <answer> </answer> "
    "tags. Note that circuits satisfying the same specification have already been obtained, "
    "and you need to derive a Pareto-optimal solution with different PPA values from those "
    "circuits. The circuits obtained so far and their PPA values are listed below in "
    "<# Circuit history>.")


def test_paper_template_is_appendix_c() -> None:
    paper = load_template("paper")
    assert "paper" in available_templates() and paper.uses_history and paper.system
    assert paper.system.endswith(C1_TAIL)
    first = paper.request(TASK, iteration=1, iterations=10)
    assert first.prompt == "Build an incrementer `inc`.\n\n## Circuit history\nNo previous circuit."
    passed = [e for e in _paper_history() if e.verdict == "pass"]
    text = paper.render_history(passed + passed)
    assert text == (
        "### previous circuit 1\n```verilog\n" + SRC + "\n```\n"
        "- PPA: power = 0.00254 mW, delay = 0.4183 ns, area = 60.8 um^2\n"
        "### previous circuit 2\n```verilog\n" + SRC + "\n```\n"
        "- PPA: power = 0.00254 mW, delay = 0.4183 ns, area = 60.8 um^2")
    later = paper.request(TASK, passed, iteration=3, iterations=10).prompt
    assert later.startswith("Build an incrementer `inc`.\n\n## Circuit history\n"
                            "### previous circuit 1\n```verilog\n")


def test_paper_template_has_no_iteration_count_so_training_and_evaluation_agree() -> None:
    """The same history gives the same prompt whether the run has 5 generations (training) or
    10 iterations (evaluation), and at whatever iteration number it is shown."""
    paper = load_template("paper")
    a = paper.request(TASK, _paper_history(), iteration=3, iterations=5)
    b = paper.request(TASK, _paper_history(), iteration=3, iterations=10)
    c = paper.request(TASK, _paper_history(), iteration=7, iterations=10)
    assert a.prompt == b.prompt == c.prompt and a.system == b.system == c.system
    assert " of 5" not in a.prompt and " of 10" not in b.prompt
    assert "No previous circuit." in paper.request(TASK, iteration=1, iterations=10).prompt


def test_paper_template_marks_what_is_reconstructed() -> None:
    from importlib import resources

    text = (resources.files("rtlforge.generation") / "templates" / "paper.toml").read_text()
    assert "Appendix C" in text and text.count("RECONSTRUCTED:") == 2


def test_own_template_with_the_exact_text_loads_by_path(tmp_path: Path) -> None:
    """A user who has Appendix C's text passes it as a .toml path; it replaces ours verbatim."""
    own = tmp_path / "appendix-c.toml"
    own.write_text('name = "appendix-c"\nsystem = "SYSTEM TEXT {top}"\n'
                   'user = "USER TEXT\\n{spec}\\n{history}"\n'
                   '[history]\nempty = "none"\nitem = "#{index} {source} {ppa}"\n'
                   'ppa = "P={power} D={delay} A={area}"\nno_ppa = "{verdict}{message}"\n')
    tmpl = load_template(own)
    req = tmpl.request(TASK, _paper_history()[:1], iteration=2, iterations=10)
    assert req.system == "SYSTEM TEXT inc"
    assert req.prompt == ("USER TEXT\nBuild an incrementer `inc`.\n#1 " + SRC
                          + " P=0.00254 D=0.4183 A=60.8")
