"""Differential fuzzing of the security gate against the tools' own preprocessors.

Property, for every generated source S (role="design", nothing available): if
``check_sources`` accepts S, then what ``iverilog -E`` (and ``verilator -E -P``) make of S holds

* no ``$name`` outside ``DESIGN_SYSTEM_TASKS``,
* no escaped identifier ``\\$name`` (Icarus runs ``\\$fopen (...)`` as ``$fopen``),
* no ``import``/``export`` followed by a ``"DPI..."`` string (comments in between skipped),
* no ```include`` / ```systemc_*`` / ```verilator_config`` directive,
* no text of a file the preprocessor included (a sentinel file sits next to the design),
* no ``$readmemh("...")``/``$readmemb("...")`` (nothing is available, so every read must be
  refused).

The output is lexed (comments and strings skipped; ``\"\"\"`` strings only for Verilator, which
has them) by ``_verilog_grammar.findings``. Sources reach the gate and the tools as the pipeline
writes them: ``SandboxRunner.put`` normalises line endings first (Verilator deletes a lone CR,
so ``$\\rsystem`` would otherwise fuse), and the CR examples check exactly that.

The sources come from the macro / escape / juxtaposition grammar in ``_verilog_grammar``.
Examples the gate refuses hold trivially (the tool is not run); accepted examples on which the
tool's preprocessor itself fails say nothing and are skipped. The test counts them and fails if
they are most of the accepted ones. The run is derandomized, so CI sees the same examples.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from _verilog_grammar import SENTINEL_FILES, findings, verilog_sources
from hypothesis import HealthCheck, event, example, given, settings

from rtlforge.core.errors import InvalidSourceError, SecurityViolation
from rtlforge.core.models import SourceFile
from rtlforge.sandbox.runner import normalise_source
from rtlforge.sandbox.security import DESIGN_SYSTEM_TASKS, check_sources

IVERILOG = shutil.which("iverilog")
VERILATOR = shutil.which("verilator")
TOOL_TIMEOUT = 5

#: Known attack classes; each is run before the generated examples.
ATTACKS = [
    # a macro body completes the name after a literal '$'
    '`define S system\nmodule m;\ninitial begin\n$`S("echo x");\nend\nendmodule\n',
    # DPI import keyword pasted together by juxtaposition
    '`define P port\nmodule m;\nim`P "DPI-C" function int system(input string s);\n'
    "initial begin\nend\nendmodule\n",
    # a macro whose body is a lone backtick, then a directive name
    '`define BT `\n`BT include "/etc/passwd"\nmodule m;\nendmodule\n',
    '`define BT `\n`define I `BT``include\n`I "secret.vh"\nmodule m;\nendmodule\n',
    # escaped identifiers: Icarus treats \$fopen as $fopen
    'module m;\ninitial begin\n\\$fopen ("/etc/passwd");\nend\nendmodule\n',
    'module m;\ninitial begin\n\\$system ("echo x");\nend\nendmodule\n',
    # CR-only line endings: a line comment or define that a tool ends earlier than a checker
    'module m;\r// note\r$system("x");\rendmodule\r',
    '`define A 1 // c\r$system("x");\rmodule m;\rendmodule\r',
    'module m;\rinitial begin\r/* c\r*/$system("x");\rend\rendmodule\r',
    # '$' from a function-like macro argument, name pasted inside the body
    '`define F(x) $x\nmodule m;\ninitial begin\n`F(system)("x");\nend\nendmodule\n',
    '`define F(a,b) a``b\nmodule m;\ninitial begin\n$`F(sys,tem)("x");\nend\nendmodule\n',
    # a macro that defines the macro spelling the name
    '`define MK `define N system\n`MK\nmodule m;\ninitial begin\n$`N("x");\nend\nendmodule\n',
    # stringification builds the "DPI-C" literal
    '`define Q(x) `"x`"\nmodule m;\nimport `Q(DPI-C) function int system(input string s);\n'
    "endmodule\n",
    # found by this fuzzer: an unterminated /* on a `define line ends at the newline for Icarus
    'module m;\n`define A 1 /* x\ninteger f; initial f = $fopen("p", "w");\nendmodule\n',
    '`define A/*\n`include "secret.vh"\nmodule m;\nendmodule\n',
    # found by this fuzzer: """ opens an SV-2023 triple-quoted string for slang, not for Icarus
    'module m;\ninteger f;\n`define A """\ninitial f = $fopen("p", "w");\n`define B """\n'
    "endmodule\n",
    # found by this fuzzer: a keyword from two juxtaposed macro uses
    '`define A(x) x\n`define P port\nmodule m;\n'
    '`A(im)`P "DPI-C" function int system(input string s);\nendmodule\n',
    # found by this fuzzer: Verilator deletes a lone CR, joining '$' and 'system'
    'module m;\ninitial begin\n$\rsystem("echo x");\nend\nendmodule\n',
]


def _gate_accepts(src: str) -> bool:
    try:
        check_sources([SourceFile(name="design.v", content=src)], role="design", available=())
    except SecurityViolation:
        return False
    return True


def _run_in_tmp(src: str, argv: list[str], output: str | None) -> str | None:
    """Preprocessed text of ``src`` (as design.v) by ``argv``, or None if the tool failed."""
    with tempfile.TemporaryDirectory(prefix="rtlforge-fuzz-") as tmp:
        d = Path(tmp)
        (d / "design.v").write_bytes(src.encode("utf-8", "surrogatepass"))
        for name, content in SENTINEL_FILES.items():
            (d / name).write_text(content)
        try:
            run = subprocess.run(argv, cwd=d, capture_output=True, timeout=TOOL_TIMEOUT,
                                 check=False)
        except subprocess.TimeoutExpired:
            return None
        if run.returncode != 0:
            return None
        data = (d / output).read_bytes() if output else run.stdout
        return data.decode("latin-1")  # byte-exact: CRs survive, nothing can fail to decode


def iverilog_e(src: str) -> str | None:
    assert IVERILOG
    return _run_in_tmp(src, [IVERILOG, "-E", "-o", "out.v", "design.v"], "out.v")


def verilator_e(src: str) -> str | None:
    assert VERILATOR
    return _run_in_tmp(src, [VERILATOR, "-E", "-P", "-Wno-fatal", "design.v"], None)


def _check_one(src: str, tool: str, preprocess: Callable[[str], str | None],
               stats: Counter[str], triple_quotes: bool) -> None:
    stats["total"] += 1
    try:  # what SandboxRunner.put does before the gate and before writing the file
        src = normalise_source(SourceFile(name="design.v", content=src)).content
    except InvalidSourceError:
        stats["refused"] += 1
        return
    if not _gate_accepts(src):
        stats["refused"] += 1  # the property holds; the tool need not run
        event("gate refused")
        return
    stats["accepted"] += 1
    out = preprocess(src)
    if out is None:
        stats["tool_error"] += 1
        event(f"gate accepted; {tool} -E failed (example skipped)")
        return
    stats["checked"] += 1
    event("gate accepted; output checked")
    found = findings(out, DESIGN_SYSTEM_TASKS, triple_quotes=triple_quotes)
    where = f"\n--- source ---\n{src!r}\n--- {tool} -E output ---\n{out!r}"
    # One assert per class, so that Hypothesis reports (and shrinks) each class separately.
    assert not found.tasks, f"gate accepted; {tool} sees system tasks {found.tasks}{where}"
    assert not found.escaped, f"gate accepted; {tool} sees escaped {found.escaped}{where}"
    assert not found.dpi, f"gate accepted; {tool} sees foreign import {found.dpi}{where}"
    assert not found.directives, f"gate accepted; {tool} sees {found.directives}{where}"
    assert not found.included, f"gate accepted; {tool} included a file{where}"
    assert not found.file_reads, f"gate accepted; {tool} reads files {found.file_reads}{where}"


def _with_attacks(test: Callable[[str], None]) -> Callable[[str], None]:
    for src in reversed(ATTACKS):
        test = example(src=src)(test)
    return test


def _differential(tool: str, preprocess: Callable[[str], str | None], max_examples: int, *,
                  triple_quotes: bool) -> None:
    stats: Counter[str] = Counter()

    @settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(src=verilog_sources())
    @_with_attacks
    def prop(src: str) -> None:
        _check_one(src, tool, preprocess, stats, triple_quotes)

    try:
        prop()
    finally:
        print(f"{tool}: {dict(stats)}")  # shown with -s, or with the failure
    # Accepted examples the tool could not preprocess say nothing; they must stay a minority,
    # and enough examples must get through the gate for the property to say something.
    assert stats["tool_error"] * 2 < stats["accepted"], f"{tool} -E failed too often: {stats}"
    assert stats["checked"] >= 5, f"too few examples both accepted and preprocessed: {stats}"


@pytest.mark.tools
@pytest.mark.skipif(IVERILOG is None, reason="iverilog not installed")
def test_gate_agrees_with_iverilog_preprocessor() -> None:
    # Icarus has no SV-2023 triple-quoted strings: """ is "" followed by an open string.
    _differential("iverilog", iverilog_e, max_examples=300, triple_quotes=False)


@pytest.mark.tools
@pytest.mark.skipif(VERILATOR is None, reason="verilator not installed")
def test_gate_agrees_with_verilator_preprocessor() -> None:
    # verilator -E costs ~55 ms of CPU a call (Perl wrapper + C++ binary), but it only runs on
    # what the gate accepts (about one example in six), so the example count can stay high.
    _differential("verilator", verilator_e, max_examples=300, triple_quotes=True)
