"""The DSL gate: the documented examples are accepted; hostile or invalid models are rejected
with the line and construct of the problem (never executed, never a hang or a crash)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from rtlforge.behave.model import ModelError, load_model

DOCS = Path(__file__).resolve().parents[3] / "docs" / "behave-models.md"


def doc_models() -> dict[str, str]:
    blocks = re.findall(r"```python\n(# model: (\w+)\n.*?)```", DOCS.read_text(), flags=re.S)
    return {name: source for source, name in blocks}


# The body of process() starts on line 11 of this template (body line k is line 10 + k).
TEMPLATE = """\
class Out(Record):
    y: UInt[8]

class M(Model):
    s: UInt[8]

    def reset(self):
        self.s = 0

    def process(self, x: UInt[8]) -> Out:
{body}
"""


def with_body(body: str) -> str:
    return TEMPLATE.format(body="\n".join("        " + line for line in body.splitlines()))


def test_the_documented_examples_are_accepted() -> None:
    models = doc_models()
    assert set(models) == {"accumulator", "saturating_counter", "sequence_detector", "fifo4",
                           "sorter4"}
    for name, source in models.items():
        model = load_model(source, name=name)
        assert model.name == name
        assert model.goals(), name  # every example branches


def test_the_template_itself_is_valid() -> None:
    model = load_model(with_body("return Out(y=x)"))
    assert model.instance().process({"x": 7}) == {"y": 7}


BODY_CASES = [
    # (id, process body, line of the error, construct)
    ("while", "while x > 0:\n    x = x - 1\nreturn Out(y=x)", 11, "while"),
    ("import-os", "import os\nreturn Out(y=x)", 11, "import"),
    ("open", "f = open(x)\nreturn Out(y=x)", 11, "open"),
    ("dunder-class", "t = x.__class__\nreturn Out(y=x)", 11, "dunder"),
    ("dunder-import", "t = __import__(x)\nreturn Out(y=x)", 11, "dunder"),
    ("recursion", "t = self.process(x)\nreturn Out(y=x)", 11, "call"),
    ("eval", "t = eval(x)\nreturn Out(y=x)", 11, "eval"),
    ("exec", "exec(x)\nreturn Out(y=x)", 11, "exec"),
    ("getattr", "t = getattr(self, x)\nreturn Out(y=x)", 11, "getattr"),
    ("print", "print(x)\nreturn Out(y=x)", 11, "print"),
    ("attribute-of-state", "t = self.s.real\nreturn Out(y=x)", 11, "name"),
    ("attribute-of-param", "t = x.real\nreturn Out(y=x)", 11, "attribute"),
    ("method-of-param", "t = x.bit_length()\nreturn Out(y=x)", 11, "call"),
    ("attribute-chain", "t = self.s.a.b\nreturn Out(y=x)", 11, "attribute"),
    ("huge-range", "for i in range(100000):\n    pass\nreturn Out(y=x)", 11, "range"),
    ("op-budget", "for i in range(4096):\n    for j in range(4096):\n        t = x\n"
     "return Out(y=x)", 13, "size"),
    ("deep-nesting", "t = " + "-" * 200 + "x\nreturn Out(y=x)", 11, "nesting"),
    ("deep-parentheses", "t = " + "(" * 300 + "x" + ")" * 300 + "\nreturn Out(y=x)", 11,
     "syntax"),
    ("huge-literal", "t = 1" + "0" * 2000 + "\nreturn Out(y=x)", 11, "literal"),
    ("huge-literal-digits", "t = 1" + "0" * 5000 + "\nreturn Out(y=x)", 11, "syntax"),
    ("huge-shift", "t = 1 << 100000\nreturn Out(y=x)", 11, "width"),
    ("huge-power", "t = 2 ** 100000\nreturn Out(y=x)", 11, "literal"),
    ("string", 't = "abc"\nreturn Out(y=x)', 11, "string"),
    ("f-string", 't = f"{x}"\nreturn Out(y=x)', 11, "f-string"),
    ("global", "global s\nreturn Out(y=x)", 11, "global"),
    ("lambda", "f = lambda: 1\nreturn Out(y=x)", 11, "lambda"),
    ("try", "try:\n    t = x\nexcept Exception:\n    t = 0\nreturn Out(y=x)", 11, "try"),
    ("with", "with x:\n    pass\nreturn Out(y=x)", 11, "with"),
    ("yield", "yield x\nreturn Out(y=x)", 11, "yield"),
    ("await", "await x\nreturn Out(y=x)", 11, "await"),
    ("list-comprehension", "t = [i for i in range(3)]\nreturn Out(y=x)", 11, "comprehension"),
    ("generator", "t = sum(i for i in range(3))\nreturn Out(y=x)", 11, "comprehension"),
    ("float", "t = 1.5\nreturn Out(y=x)", 11, "float"),
    ("none", "t = None\nreturn Out(y=x)", 11, "None"),
    ("dict", "t = {}\nreturn Out(y=x)", 11, "dict"),
    ("true-division", "t = x / 2\nreturn Out(y=x)", 11, "operator"),
    ("raise", "raise ValueError(x)\nreturn Out(y=x)", 11, "raise"),
    ("assert", "assert x\nreturn Out(y=x)", 11, "assert"),
    ("walrus", "t = (u := x)\nreturn Out(y=x)", 11, "walrus"),
    ("del", "del x\nreturn Out(y=x)", 11, "del"),
    ("nested-def", "def f():\n    pass\nreturn Out(y=x)", 11, "def"),
    ("static-width", "self.s = x + 256\nreturn Out(y=x)", 11, "width"),
    ("output-width", "return Out(y=x + 256)", 11, "width"),
    ("bool-as-int", "return Out(y=x + True)", 11, "type"),
    ("int-as-condition", "if x:\n    pass\nreturn Out(y=x)", 11, "type"),
    ("maybe-unassigned", "if x > 3:\n    z = 1\nreturn Out(y=z)", 13, "unassigned"),
    ("unknown-name", "return Out(y=q)", 11, "name"),
    ("missing-return", "if x > 3:\n    return Out(y=x)", 10, "return"),
    ("unreachable", "return Out(y=x)\nt = x", 12, "unreachable"),
    ("missing-field", "return Out()", 11, "return"),
    ("index-int", "t = x[0]\nreturn Out(y=x)", 11, "subscript"),
    ("break", "for i in range(3):\n    break\nreturn Out(y=x)", 12, "break"),
    ("assign-loop-index", "for i in range(3):\n    i = 2\nreturn Out(y=x)", 12, "name"),
    ("while-in-for", "for i in range(2):\n    while True:\n        pass\nreturn Out(y=x)", 12,
     "while"),
]


@pytest.mark.parametrize(("body", "line", "construct"),
                         [pytest.param(b, line, c, id=i) for i, b, line, c in BODY_CASES])
def test_invalid_process_bodies_are_rejected_with_line_and_construct(
        body: str, line: int, construct: str) -> None:
    with pytest.raises(ModelError) as info:
        load_model(with_body(body))
    assert (info.value.construct, info.value.line) == (construct, line), str(info.value)
    assert str(info.value).startswith(f"line {line}: ")


def test_the_while_message_says_what_to_do_instead() -> None:
    with pytest.raises(ModelError) as info:
        load_model(with_body("while x > 0:\n    x = x - 1\nreturn Out(y=x)"))
    assert str(info.value) == "line 11: `while` loops are not allowed: use for i in range(N)"


VALID_HEAD = "class Out(Record):\n    y: UInt[8]\n\n"
VALID_MODEL = """\
class M(Model):
    s: UInt[8]

    def reset(self):
        self.s = 0

    def process(self, x: UInt[8]) -> Out:
        return Out(y=x)
"""

MODULE_CASES = [
    ("import-os", "import os\n" + VALID_HEAD + VALID_MODEL, 1, "import"),
    ("from-os", "from os import path\n" + VALID_HEAD + VALID_MODEL, 1, "import"),
    ("module-global", VALID_HEAD + "counter = 0\n" + VALID_MODEL, 4, "global"),
    ("module-function", VALID_HEAD + "def helper():\n    pass\n" + VALID_MODEL, 4, "def"),
    ("module-call", VALID_HEAD + "print(1)\n" + VALID_MODEL, 4, "print"),
    ("async-process", VALID_HEAD + VALID_MODEL.replace("    def process", "    async def process"),
     10, "async"),
    ("decorator", VALID_HEAD + VALID_MODEL.replace("    def reset",
                                                   "    @staticmethod\n    def reset"),
     8, "decorator"),
    ("helper-method", VALID_HEAD + VALID_MODEL + "\n    def helper(self):\n        pass\n", 13,
     "def"),
    ("dunder-method", VALID_HEAD + VALID_MODEL + "\n    def __init__(self):\n        pass\n", 13,
     "dunder"),
    ("two-models", VALID_HEAD + VALID_MODEL + VALID_MODEL, 12, "class"),
    ("other-base", VALID_HEAD + VALID_MODEL.replace("(Model)", "(Thing)"), 4, "class"),
    ("reset-misses-a-field", VALID_HEAD + VALID_MODEL.replace("        self.s = 0\n",
                                                              "        pass\n"), 7, "reset"),
    ("reset-reads-before-assign", VALID_HEAD + VALID_MODEL.replace(
        "        self.s = 0\n", "        self.s = wrap(self.s + 1, 8)\n"), 8, "reset"),
    ("no-model", VALID_HEAD, 1, "class"),
    ("bad-width", VALID_HEAD.replace("UInt[8]", "UInt[0]") + VALID_MODEL, 2, "type"),
    ("string-type", VALID_HEAD.replace("UInt[8]", "str") + VALID_MODEL, 2, "type"),
]


@pytest.mark.parametrize(("source", "line", "construct"),
                         [pytest.param(s, line, c, id=i) for i, s, line, c in MODULE_CASES])
def test_invalid_modules_are_rejected_with_line_and_construct(
        source: str, line: int, construct: str) -> None:
    with pytest.raises(ModelError) as info:
        load_model(source)
    assert (info.value.construct, info.value.line) == (construct, line), str(info.value)


def test_the_dsl_import_is_the_only_one_accepted() -> None:
    source = "from rtlforge.behave.model.dsl import *\n" + VALID_HEAD + VALID_MODEL
    assert load_model(source).instance().process({"x": 1}) == {"y": 1}


@pytest.mark.parametrize("source", [
    pytest.param("x = 1\n" * 20_000, id="oversized-source"),
    pytest.param("X = " + "-" * 60_000 + "1\n", id="deep-unary-parser-memory"),
    pytest.param("X = " + "1+" * 25_000 + "1\n", id="deep-binop-parser-recursion"),
    pytest.param("X = " + "+".join(["1"] * 9000) + "\n", id="node-count"),
    pytest.param("X = 1\n\x00", id="null-byte"),
])
def test_hostile_sources_fail_fast_with_a_typed_error(source: str) -> None:
    start = time.perf_counter()
    with pytest.raises(ModelError) as info:
        load_model(source)
    assert info.value.construct in {"size", "nesting", "syntax"}
    assert time.perf_counter() - start < 5.0


def test_errors_inside_augmented_assignments_point_at_their_line() -> None:
    body = "t: Array[UInt[8], 2] = (1, 2)\nt[q] += 1\nreturn Out(y=x)"
    with pytest.raises(ModelError) as info:
        load_model(with_body(body))
    assert (info.value.construct, info.value.line) == ("name", 12)
