"""VerilogEval v2's spec-to-rtl prompting: the bundled template and reading [BEGIN]/[DONE].

The oracle is NVlabs/verilog-eval's ``scripts/sv-generate`` (task ``spec-to-rtl``, no examples,
no rules, no explanation), restated here step by step; the extraction cases follow its
line-by-line reading of the answer.
"""

from __future__ import annotations

import pytest

from rtlforge.core.errors import ExtractionError
from rtlforge.core.extract import extract_verilog
from rtlforge.core.models import Task
from rtlforge.generation.prompts import available_templates, load_template

PROMPT_FILE = """
I would like you to implement a module named TopModule with the following
interface. All input and output ports are one bit unless otherwise
specified.

 - input  a
 - output y

The module should invert a.

"""
MODULE = "module TopModule(input a, output y);\n  assign y = ~a;\nendmodule"


def official_prompt(prompt: str) -> str:
    """The user message sv-generate sends, built the way it builds it."""
    suffix = ("\nEnclose your code with [BEGIN] and [DONE]. Only output the code snippet\n"
              "and do NOT output anything else.\n")
    full = "\nQuestion:\n" + prompt.strip() + "\n"
    full = full.rstrip() + "\n" + suffix
    return full + "\nAnswer:\n"


def test_spec_to_rtl_template_renders_the_official_messages() -> None:
    assert "spec-to-rtl" in available_templates()
    template = load_template("spec-to-rtl")
    request = template.request(Task(id="Prob001_inv", spec=PROMPT_FILE, top="TopModule"))
    assert request.system == ("\nYou are a Verilog RTL designer that only writes code using "
                              "correct Verilog syntax.\n")
    assert request.prompt == official_prompt(PROMPT_FILE)
    assert not template.uses_history


@pytest.mark.parametrize("answer", [
    f"[BEGIN]\n{MODULE}\n[DONE]\n",
    f"Here you go.\n  [BEGIN]\n{MODULE}\n[DONE]  \nHope it helps.",
    f"[BEGIN]{MODULE}\n[DONE]",          # code on the [BEGIN] line counts
    f"[BEGIN]\n{MODULE}[DONE]",          # and on the [DONE] line
    f"<think>draft\n[BEGIN]\nmodule old; endmodule\n[DONE]\n</think>\n[BEGIN]\n{MODULE}\n[DONE]",
])
def test_begin_done_block_is_the_code(answer: str) -> None:
    assert extract_verilog(answer) == MODULE + "\n"


def test_only_the_first_block_counts() -> None:
    first = MODULE.replace("~a", "a")
    answer = f"[BEGIN]\n{first}\n[DONE]\n[BEGIN]\n{MODULE}\n[DONE]\n"
    assert extract_verilog(answer) == first + "\n"


def test_code_outside_the_block_is_ignored() -> None:
    before = "module TopModule(input a, output y); assign y = 0; endmodule\n"
    answer = f"{before}[BEGIN]\n{MODULE}\n[DONE]"
    assert extract_verilog(answer) == MODULE + "\n"


def test_an_unclosed_block_yields_no_code() -> None:
    # sv-generate writes nothing for it, so the sample fails to compile; here it is explicit
    with pytest.raises(ExtractionError, match=r"\[DONE\]"):
        extract_verilog(f"[BEGIN]\n{MODULE}\n")


def test_a_block_without_a_module_is_no_code() -> None:
    with pytest.raises(ExtractionError):
        extract_verilog("[BEGIN]\nassign y = ~a;\n[DONE]\n" + MODULE)


def test_without_a_block_the_usual_extraction_applies() -> None:
    # a [DONE] with no [BEGIN] opens nothing; sv-generate falls back to the code itself
    assert extract_verilog(f"```verilog\n{MODULE}\n```\n[DONE]") == MODULE + "\n"
