"""The ``symbolic`` generator and its solver (rtlforge.plugins.generators.symbolic.logic_min).

Every table below is written by hand next to an independent Python oracle (a lambda over port
bits, ``None`` for don't-care); each emitted circuit is checked against that oracle on every
input combination, in Python and (``tools``) by simulating it with iverilog. A hypothesis test
renders random functions in random layouts and solves them back.
"""

from __future__ import annotations

import itertools
import random
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rtlforge.plugins.generators.symbolic as symbolic_plugin
from rtlforge.core.interfaces import GenerationRequest, SamplingParams
from rtlforge.core.models import Port, Task
from rtlforge.core.plugins import PluginHost
from rtlforge.plugins.generators.symbolic import SymbolicGenerator
from rtlforge.plugins.generators.symbolic.logic_min import (
    Decline,
    Function,
    PortDecl,
    Solution,
    evaluate,
    minimise,
    minimum_cover,
    prime_implicants,
    solve,
    try_solve,
)
from rtlforge.testing import requires_tools

Env = dict[str, int]
Oracle = Callable[[Env], dict[str, int | None]]


# ------------------------------------------------------------------------------- helpers


def _envs(ports: tuple[PortDecl, ...]) -> list[Env]:
    bits = [b for p in ports if p.direction == "input" for b in p.bits()]
    return [dict(zip(bits, values, strict=True))
            for values in itertools.product((0, 1), repeat=len(bits))]


def _py_eval(expr: str, env: Env) -> int:
    """Evaluate emitted Verilog as Python (same precedence for ~ & ^ |), independently."""
    scope: dict[str, Any] = {}
    for name, value in env.items():
        m = re.fullmatch(r"(\w+)\[(\d+)\]", name)
        if m:
            scope.setdefault(m.group(1), {})[int(m.group(2))] = value
        else:
            scope[name] = value
    text = expr.replace("1'b0", "0").replace("1'b1", "1")
    return eval(text, {"__builtins__": {}}, scope) & 1  # our own emitted text


def _assigns(verilog: str) -> dict[str, str]:
    return dict(re.findall(r"assign\s+(\S+)\s*=\s*(.*?);", verilog))


def check_python(sol: Solution, oracle: Oracle) -> None:
    assigns = _assigns(sol.verilog)
    outputs = [b for p in sol.ports if p.direction == "output" for b in p.bits()]
    assert sorted(assigns) == sorted(outputs)
    for env in _envs(sol.ports):
        for target, want in oracle(env).items():
            if want is not None:
                assert _py_eval(assigns[target], env) == want, (target, env, sol.verilog)


def check_iverilog(sol: Solution, oracle: Oracle, tmp_path: Path) -> None:
    """Compile the module with an exhaustive self-checking testbench; don't-cares are free."""
    decls, conns, checks = [], [], []
    for p in sol.ports:
        rng = f" [{p.msb}:{p.lsb}]" if p.msb is not None else ""
        decls.append(f"  {'reg' if p.direction == 'input' else 'wire'}{rng} {p.name};")
        conns.append(f".{p.name}({p.name})")
    for env in _envs(sol.ports):
        drive = " ".join(f"{bit} = 1'b{v};" for bit, v in env.items())
        expect = " ".join(
            f"if ({target} !== 1'b{want}) begin errors = errors + 1; "
            f"$display(\"MISMATCH {target} {env}\"); end"
            for target, want in oracle(env).items() if want is not None
        )
        checks.append(f"    {drive} #1; {expect}")
    tb = "\n".join([
        "module tb;", *decls, "  integer errors;",
        f"  {sol.top} dut({', '.join(conns)});",
        "  initial begin", "    errors = 0;", *checks,
        '    if (errors == 0) $display("ALL_PASS"); else $display("FAILED %0d", errors);',
        "    $finish;", "  end", "endmodule", "",
    ])
    (tmp_path / "design.v").write_text(sol.verilog)
    (tmp_path / "tb.v").write_text(tb)
    subprocess.run(["iverilog", "-g2001", "-o", str(tmp_path / "sim"), str(tmp_path / "design.v"),
                    str(tmp_path / "tb.v")], check=True, capture_output=True, text=True)
    run = subprocess.run(["vvp", str(tmp_path / "sim")], capture_output=True, text=True,
                         check=True)
    assert "ALL_PASS" in run.stdout, run.stdout + sol.verilog


needs_iverilog = requires_tools("iverilog")


# ------------------------------------------------------------------------------- solvable specs


def _b(e: Env, *names: str) -> tuple[int, ...]:
    return tuple(e[n] for n in names)


KMAP1 = """\
// Implement the circuit described by the Karnaugh map below.
//
//           a
//    bc   0   1
//    00 | 0 | 1 |
//    01 | 1 | 1 |
//    11 | 1 | 1 |
//    10 | 1 | 1 |

module top_module(
    input a,
    input b,
    input c,
    output out  );
"""

KMAP_NON_GRAY_COLS = """\
I would like you to implement a module named TopModule with the following
interface. All input and output ports are one bit unless otherwise
specified.

 - input  a
 - input  b
 - input  c
 - input  d
 - output out

The module should implement the circuit described by the Karnaugh map
below. d is don't-care, which means you may choose to output whatever
value is convenient.

              ab
   cd   01  00  10  11
   00 | d | 0 | 1 | 1 |
   01 | 0 | 0 | d | d |
   11 | 0 | 1 | 1 | 1 |
   10 | 0 | 1 | 1 | 1 |
"""


def _non_gray_oracle(e: Env) -> dict[str, int | None]:
    a, b, c, d = _b(e, "a", "b", "c", "d")
    if (a and not c and d) or (not a and b and not c and not d):
        return {"out": None}
    return {"out": int(bool(a or (not b and c)))}


KMAP_X41 = """\
Consider the function f shown in the Karnaugh map below. Implement this function.

//           x[1]x[2]
// x[3]x[4]   00 01 11 10
//   00     | 1 | 0 | 0 | 1 |
//   01     | 0 | 0 | 0 | 0 |
//   11     | 1 | 1 | 1 | 0 |
//   10     | 1 | 1 | 0 | 1 |

module top_module (input [4:1] x, output f);
"""

_X41 = {  # (x3 x4) -> cells for (x1 x2) = 00 01 11 10
    (0, 0): (1, 0, 0, 1), (0, 1): (0, 0, 0, 0), (1, 1): (1, 1, 1, 0), (1, 0): (1, 1, 0, 1),
}
_GRAY2 = {(0, 0): 0, (0, 1): 1, (1, 1): 2, (1, 0): 3}


def _x41_oracle(e: Env) -> dict[str, int | None]:
    return {"f": _X41[_b(e, "x[3]", "x[4]")][_GRAY2[_b(e, "x[1]", "x[2]")]]}


KMAP_FROM_ONE = """\
 - input  x (4 bits)
 - output f

Consider the function f shown in the Karnaugh map below. d is don't-care.

//           x_1x_2
// x_3x_4   00 01 11 10
//   00   | d | 0 | d | d |
//   01   | 0 | d | 1 | 0 |
//   11   | 1 | 1 | d | d |
//   10   | 1 | 1 | 0 | d |
"""

_FROM_ONE = {
    (0, 0): (None, 0, None, None), (0, 1): (0, None, 1, 0),
    (1, 1): (1, 1, None, None), (1, 0): (1, 1, 0, None),
}


def _from_one_oracle(e: Env) -> dict[str, int | None]:
    # labels x_1..x_4 are the port's bits x[0]..x[3]
    return {"f": _FROM_ONE[_b(e, "x[2]", "x[3]")][_GRAY2[_b(e, "x[0]", "x[1]")]]}


KMAP_MARKDOWN_XOR = """\
The output is given by this Karnaugh map (rows are ab, columns cd):

| ab\\cd | 00 | 01 | 11 | 10 |
|-------|----|----|----|----|
| 00    | 0  | 1  | 0  | 1  |
| 01    | 1  | 0  | 1  | 0  |
| 11    | 0  | 1  | 0  | 1  |
| 10    | 1  | 0  | 1  | 0  |

```verilog
module TopModule(input a, input b, input c, input d, output reg y);
```
"""

KMAP_MARKDOWN_XNOR = """\
| c \\ ab | 00 | 01 | 11 | 10 |
|:------:|:--:|:--:|:--:|:--:|
|   0    | 1  | 0  | 1  | 0  |
|   1    | 0  | 1  | 0  | 1  |

module TopModule(input a, input b, input c, output f);
"""

KMAP_WHITESPACE = """\
Implement f from its K-map.

          cd
    ab    00  01  11  10
    00    1   1   0   1
    01    0   0   0   0
    11    0   0   0   0
    10    1   1   0   1

module kmap_ws (input a, input b, input c, input d, output f);
"""

# rows cd and columns ab both in binary (not Gray) order, explicitly labelled
KMAP_TRANSPOSED = """\
        ab
cd      00 01 10 11
00      0  0  1  1
01      0  1  1  1
10      x  0  1  1
11      0  1  1  1

module TopModule (input a, input b, input c, input d, output q);
"""


def _transposed_oracle(e: Env) -> dict[str, int | None]:
    a, b, c, d = _b(e, "a", "b", "c", "d")
    if (c, d, a, b) == (1, 0, 0, 0):
        return {"q": None}
    return {"q": int(bool(a or (b and d)))}


KMAP_3VAR_WIDE = """\
| a\\bc | 00 | 01 | 11 | 10 |
|------|----|----|----|----|
| 0    | 0  | 0  | 1  | 0  |
| 1    | 0  | 1  | 1  | 1  |

module maj (input a, input b, input c, output y);
"""

KMAP_CONST0 = """\
        ab
cd    00 01 11 10
00  |  0 | 0 | 0 | 0 |
01  |  0 | 0 | 0 | 0 |
11  |  0 | 0 | - | 0 |
10  |  0 | 0 | 0 | 0 |

module TopModule (input a, input b, input c, input d, output out);
"""

KMAP_CONST1 = """\
      a
bc   0   1
00 | 1 | d |
01 | 1 | 1 |
11 | X | 1 |
10 | 1 | 1 |

module TopModule (input a, input b, input c, output out);
"""

KMAP_ROW_PREFIX = """\
            cd
         00 01 11 10
ab   00   0  0  1  0
     01   0  0  1  0
     11   1  1  1  1
     10   0  0  1  0

module TopModule (input a, input b, input c, input d, output f);
"""

KMAP_FENCED_UPPER = """\
Design the combinational block below. Its behaviour is given by the
following Karnaugh map, where `D` marks a don't-care.

```
AB\\CD   00  01  11  10
  00     1   0   0   1
  01     0   1   D   0
  11     0   1   1   0
  10     1   0   0   1
```

Complete the module:

module TopModule (
    input a, input b, input c, input d,
    output f
);
"""


def _fenced_oracle(e: Env) -> dict[str, int | None]:
    a, b, c, d = _b(e, "a", "b", "c", "d")
    if (a, b, c, d) == (0, 1, 1, 1):
        return {"f": None}
    return {"f": int(bool((not b and not d) or (b and d)))}


KMAP_ALIAS = """\
The K-map uses a, b, c, d where a = x[3], b = x[2], c = x[1] and d = x[0].

      ab
cd   00 01 11 10
00 | 0 | 0 | 1 | 0 |
01 | 0 | 0 | 1 | 0 |
11 | 1 | 1 | 1 | 1 |
10 | 0 | 0 | 1 | 0 |

module TopModule (input [3:0] x, output z);
"""

TT_ROW_INDEX = """\
The module should implement a combinational circuit for the following truth table:

  Row | x3 | x2 | x1 | f
  0   | 0  | 0  | 0  | 0
  1   | 0  | 0  | 1  | 0
  2   | 0  | 1  | 0  | 1
  3   | 0  | 1  | 1  | 1
  4   | 1  | 0  | 0  | 0
  5   | 1  | 0  | 1  | 1
  6   | 1  | 1  | 0  | 0
  7   | 1  | 1  | 1  | 1

module TopModule (input x3, input x2, input x1, output f);
"""

TT_TWO_OUTPUTS = """\
Full adder truth table:

| a | b | cin | sum | cout |
|---|---|-----|-----|------|
| 0 | 0 | 0   | 0   | 0    |
| 0 | 0 | 1   | 1   | 0    |
| 0 | 1 | 0   | 1   | 0    |
| 0 | 1 | 1   | 0   | 1    |
| 1 | 0 | 0   | 1   | 0    |
| 1 | 0 | 1   | 0   | 1    |
| 1 | 1 | 0   | 0   | 1    |
| 1 | 1 | 1   | 1   | 1    |

module full_adder (input a, input b, input cin, output sum, output cout);
"""

TT_VECTOR = """\
  sel  y
  00   01
  01   10
  1x   d1

module dec (input [1:0] sel, output [1:0] y);
"""

TT_WAVEFORM = """\
This is a combinational circuit. Read the simulation waveforms to determine what the circuit
does, then implement it.

  time  a  b  q
  0ns   0  0  1
  5ns   0  1  0
  10ns  1  0  0
  15ns  1  1  1
  20ns  0  0  1
  25ns  1  1  1

module TopModule (input a, input b, output q);
"""

SOLVABLE: dict[str, tuple[str, str | None, Oracle]] = {
    "verilogeval_3var": (KMAP1, None, lambda e: {"out": int(bool(e["a"] or e["b"] or e["c"]))}),
    "non_gray_columns_dc": (KMAP_NON_GRAY_COLS, None, _non_gray_oracle),
    "bit_labels_literal": (KMAP_X41, None, _x41_oracle),
    "bit_labels_from_one": (KMAP_FROM_ONE, "TopModule", _from_one_oracle),
    "markdown_xor": (KMAP_MARKDOWN_XOR, None,
                     lambda e: {"y": e["a"] ^ e["b"] ^ e["c"] ^ e["d"]}),
    "markdown_xnor_3var": (KMAP_MARKDOWN_XNOR, None,
                           lambda e: {"f": 1 - (e["a"] ^ e["b"] ^ e["c"])}),
    "whitespace_gray": (KMAP_WHITESPACE, None,
                        lambda e: {"f": int(not e["b"] and not (e["c"] and e["d"]))}),
    "transposed_binary_order": (KMAP_TRANSPOSED, None, _transposed_oracle),
    "three_var_wide": (KMAP_3VAR_WIDE, None,
                       lambda e: {"y": int(e["a"] + e["b"] + e["c"] >= 2)}),
    "constant_0": (KMAP_CONST0, None, lambda e: {"out": 0 if e != {"a": 1, "b": 1, "c": 1,
                                                                  "d": 1} else None}),
    "constant_1": (KMAP_CONST1, None, lambda e: {
        "out": None if (e["a"], e["b"], e["c"]) in {(1, 0, 0), (0, 1, 1)} else 1}),
    "row_var_prefix": (KMAP_ROW_PREFIX, None,
                       lambda e: {"f": int(bool((e["a"] and e["b"]) or (e["c"] and e["d"])))}),
    "fenced_uppercase_labels": (KMAP_FENCED_UPPER, None, _fenced_oracle),
    "prose_aliases": (KMAP_ALIAS, None, lambda e: {
        "z": int(bool((e["x[3]"] and e["x[2]"]) or (e["x[1]"] and e["x[0]"])))}),
    "truth_table_row_index": (TT_ROW_INDEX, None, lambda e: {
        "f": int(bool((not e["x3"] and e["x2"]) or (e["x3"] and e["x1"])))}),
    "truth_table_two_outputs": (TT_TWO_OUTPUTS, None, lambda e: {
        "sum": e["a"] ^ e["b"] ^ e["cin"], "cout": int(e["a"] + e["b"] + e["cin"] >= 2)}),
    "truth_table_vectors": (TT_VECTOR, None, lambda e: {
        "y[1]": None if e["sel[1]"] else e["sel[0]"],
        "y[0]": 1 if e["sel[1]"] else 1 - e["sel[0]"]}),
    "waveform_combinational": (TT_WAVEFORM, None, lambda e: {"q": 1 - (e["a"] ^ e["b"])}),
}


@pytest.mark.parametrize("case", sorted(SOLVABLE))
def test_solves_and_matches_oracle(case: str) -> None:
    spec, top, oracle = SOLVABLE[case]
    sol = solve(spec, top=top)
    check_python(sol, oracle)


@needs_iverilog
@pytest.mark.tools
@pytest.mark.parametrize("case", sorted(SOLVABLE))
def test_solutions_simulate_exhaustively(case: str, tmp_path: Path) -> None:
    spec, top, oracle = SOLVABLE[case]
    check_iverilog(solve(spec, top=top), oracle, tmp_path)


def test_forms_and_interfaces() -> None:
    """The emitted text itself: XOR/XNOR forms, constants, exact names and ranges."""
    xor = solve(KMAP_MARKDOWN_XOR)
    assert _assigns(xor.verilog) == {"y": "a ^ b ^ c ^ d"}
    assert "output y" in xor.verilog and "reg" not in xor.verilog  # assign-driven, plain wire
    assert solve(KMAP_MARKDOWN_XNOR).outputs[0].expression.form == "xnor"
    assert _assigns(solve(KMAP_CONST0).verilog) == {"out": "1'b0"}
    assert _assigns(solve(KMAP_CONST1).verilog) == {"out": "1'b1"}
    assert "input [4:1] x" in solve(KMAP_X41).verilog
    from_one = solve(KMAP_FROM_ONE, top="TopModule")
    assert "input [3:0] x" in from_one.verilog and "x[4]" not in from_one.verilog
    assert solve(KMAP1).top == "top_module"
    assert solve(TT_TWO_OUTPUTS).kind == "truth_table"
    assert solve(TT_WAVEFORM).kind == "waveform"
    # a sum of products is kept when it is no more expensive than a parity form
    assert _assigns(solve(KMAP1).verilog) == {"out": "a | b | c"}


# ------------------------------------------------------------------------------- declining

_HDR4 = "\nmodule TopModule (input a, input b, input c, input d, output f);\n"


def _map4(body: str, header: str = _HDR4) -> str:
    return "      ab\ncd   00 01 11 10\n" + body + header


_GOOD_ROWS = ("00 | 1 | 0 | 0 | 1 |\n01 | 0 | 0 | 0 | 0 |\n"
              "11 | 1 | 1 | 1 | 0 |\n10 | 1 | 1 | 0 | 1 |\n")

MALFORMED: dict[str, str] = {
    "short_row": _map4(_GOOD_ROWS.replace("01 | 0 | 0 | 0 | 0 |", "01 | 0 | 0 | 0 |")),
    "long_row": _map4(_GOOD_ROWS.replace("01 | 0 | 0 | 0 | 0 |", "01 | 0 | 0 | 0 | 0 | 1 |")),
    "duplicate_row_label": _map4(_GOOD_ROWS.replace("11 |", "01 |")),
    "missing_row": _map4(_GOOD_ROWS.replace("10 | 1 | 1 | 0 | 1 |\n", "")),
    "duplicate_column_label": _map4(_GOOD_ROWS).replace("00 01 11 10", "00 01 01 10"),
    "unknown_symbol": _map4(_GOOD_ROWS.replace("11 | 1 | 1 | 1 | 0 |", "11 | 1 | ? | 1 | 0 |")),
    "two_kmaps": _map4(_GOOD_ROWS, "\n") + "\n" + _map4(_GOOD_ROWS),
    "ports_do_not_match": _map4(_GOOD_ROWS, "\nmodule TopModule (input p, input q, input r,"
                                            " input s, output f);\n"),
    "extra_input_port": _map4(_GOOD_ROWS, "\nmodule TopModule (input a, input b, input c,"
                                          " input d, input e, output f);\n"),
    "two_outputs_one_map": _map4(_GOOD_ROWS, "\nmodule TopModule (input a, input b, input c,"
                                             " input d, output f, output g);\n"),
    "unmapped_letters_for_vector": _map4(_GOOD_ROWS, "\nmodule TopModule (input [3:0] x,"
                                                     " output f);\n"),
    "unlabelled_rows": "      ab\ncd   00 01 11 10\n 1 0 0 1\n 0 0 0 0\n 1 1 1 0\n 1 1 0 1\n"
                       + _HDR4,
    "literal_labels": "       c'd' c'd cd cd'\na'b'   1    0   0   1\na'b    0    0   0   0\n"
                      "ab     1    1   1   0\nab'    1    1   0   1\n" + _HDR4,
    "axes_unknown": "   00 01 11 10\n00 1 0 0 1\n01 0 0 0 0\n11 1 1 1 0\n10 1 1 0 1\n" + _HDR4,
    "label_bits_vs_variables": "      abc\ncd   00 01 11 10\n" + _GOOD_ROWS + _HDR4,
    "no_table": "Build a 4-bit counter with synchronous reset." + _HDR4,
    "no_interface": "      ab\ncd   00 01 11 10\n" + _GOOD_ROWS,
    "truth_table_incomplete": "a b f\n0 0 1\n0 1 0\n1 0 0\n\n"
                              "module t (input a, input b, output f);\n",
    "truth_table_conflict": "a b f\n0 0 1\n0 1 0\n1 x 0\n1 1 1\n\n"
                            "module t (input a, input b, output f);\n",
    "truth_table_bad_value": "a b f\n0 0 1\n0 1 0\n1 0 2\n1 1 1\n\n"
                             "module t (input a, input b, output f);\n",
    "waveform_not_said_combinational": TT_WAVEFORM.replace("This is a combinational circuit. ",
                                                           ""),
    "shift_does_not_fit": KMAP_X41.replace("[4:1]", "[4:0]"),
    "several_module_headers": KMAP1 + "\nmodule other (input a, output b);\n",
    "parameterised_header": _map4(_GOOD_ROWS, "\nmodule TopModule #(parameter W = 1) (input a,"
                                              " input b, input c, input d, output f);\n"),
    "waveform_of_sequential_circuit": TT_WAVEFORM.replace(
        "does, then", "does (it is a combinational circuit after a flip-flop), then"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_declines_malformed_or_ambiguous(case: str) -> None:
    with pytest.raises(Decline):
        solve(MALFORMED[case])
    assert try_solve(MALFORMED[case]) is None


def test_declines_when_task_and_spec_disagree() -> None:
    with pytest.raises(Decline, match="disagree"):
        solve(KMAP1, top="top_module", ports=(Port(name="a", direction="input"),
                                               Port(name="out", direction="output")))
    with pytest.raises(Decline, match="module name"):
        solve(KMAP1, top="TopModule")


def test_good_rows_solve_when_well_formed() -> None:
    """The base of the malformed cases is itself solvable: the declines are about the damage."""
    assert solve(_map4(_GOOD_ROWS)).outputs[0].expression.terms >= 1


# ------------------------------------------------------------------------------- minimisation


def test_cyclic_chart_needs_petrick() -> None:
    """Σm(0,1,2,5,6,7) has no essential primes; the minimum is 3 terms of 2 literals."""
    f = Function(3, frozenset({0, 1, 2, 5, 6, 7}), frozenset({3, 4}))
    assert len(prime_implicants(f)) == 6
    cover = minimum_cover(f)
    assert len(cover) == 3 and sum(c.literals(3) for c in cover) == 6
    assert minimise(f, ["a", "b", "c"]).terms == 3


def test_dont_cares_enlarge_cubes() -> None:
    # ones {1,3}, dc {5,7} over abc: c alone (one literal) instead of ~a & c
    f = Function(3, frozenset({1, 3}), frozenset({0, 2, 4, 6}))
    assert minimise(f, ["a", "b", "c"]).text == "c"


def test_evaluator_precedence() -> None:
    env = {"a": 1, "b": 0, "c": 1}
    assert evaluate("a | b & c", env) == 1
    assert evaluate("~(a ^ c) & b", env) == 0
    assert evaluate("a ^ b & c", env) == 1
    with pytest.raises(ValueError):
        evaluate("a & (b", env)


# ------------------------------------------------------------------------------- hypothesis

_SYMBOLS = {1: "1", 0: "0"}


def _render(
    n: int, table: dict[int, int | None], rng: random.Random
) -> tuple[str, list[str], list[str]]:
    """A K-map of ``table`` (minterms over a,b,c[,d]) in a random supported layout."""
    names = ["a", "b", "c", "d"][:n]
    order = rng.sample(names, n)
    rbits = 2 if n == 4 else rng.choice([1, 2])  # 4 variables: 2 per axis
    rows_v, cols_v = order[:rbits], order[rbits:]

    def labels(k: int) -> list[str]:
        labs = ["00", "01", "11", "10"] if k == 2 else ["0", "1"]
        return rng.sample(labs, len(labs)) if rng.random() < 0.5 else labs

    rlabs, clabs = labels(len(rows_v)), labels(len(cols_v))
    dc = rng.choice(["d", "x", "-", "X"])

    def cell(rl: str, cl: str) -> str:
        bits = dict(zip(rows_v + cols_v, rl + cl, strict=True))
        m = int("".join(bits[v] for v in names), 2)
        value = table[m]
        return dc if value is None else _SYMBOLS[value]

    style = rng.choice(["markdown", "verilogeval", "whitespace", "comment"])
    rv, cv = "".join(rows_v), "".join(cols_v)
    lines: list[str] = []
    if style == "markdown":
        lines.append(f"| {rv}\\{cv} | " + " | ".join(clabs) + " |")
        lines.append("|" + "---|" * (len(clabs) + 1))
        lines += [f"| {r} | " + " | ".join(cell(r, c) for c in clabs) + " |" for r in rlabs]
    elif style in ("verilogeval", "comment"):
        lines.append(f"        {cv}")
        lines.append(f"  {rv}   " + "  ".join(clabs))
        lines += [f"  {r} | " + " | ".join(cell(r, c) for c in clabs) + " |" for r in rlabs]
        if style == "comment":
            lines = ["// " + line for line in lines]
    else:
        lines.append(f"{rv}\\{cv}   " + "   ".join(clabs))
        lines += [f"{r}      " + "   ".join(cell(r, c) for c in clabs) for r in rlabs]
    header = "module TopModule (" + ", ".join(f"input {v}" for v in names) + ", output f);"
    spec = "Implement the function in the map below.\n\n" + "\n".join(lines) + "\n\n" + header
    return spec, names, lines


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.sampled_from([3, 4]), seed=st.integers(0, 2**32 - 1),
       dc_rate=st.sampled_from([0.0, 0.15, 0.4]))
def test_random_kmaps_round_trip(n: int, seed: int, dc_rate: float) -> None:
    rng = random.Random(seed)
    table: dict[int, int | None] = {
        m: None if rng.random() < dc_rate else rng.randint(0, 1) for m in range(1 << n)
    }
    spec, names, _ = _render(n, table, rng)
    sol = solve(spec)
    (out,) = sol.outputs
    expr = _assigns(sol.verilog)["f"]
    for m, want in table.items():
        if want is None:
            continue
        env = {v: m >> (n - 1 - i) & 1 for i, v in enumerate(names)}
        assert _py_eval(expr, env) == want, (spec, expr)
    ones = sum(1 for v in table.values() if v == 1)
    assert out.expression.terms <= max(ones, 0) or (ones == 0 and out.expression.terms == 0)
    if out.expression.form == "sop":
        assert expr.count("|") + 1 == out.expression.terms


# ------------------------------------------------------------------------------- generator


def test_generator_returns_n_identical_or_declines() -> None:
    gen = SymbolicGenerator()
    task = Task(id="kmap3", spec=KMAP_NON_GRAY_COLS, top="TopModule")
    requests = [
        GenerationRequest(prompt="ignored when a task is attached", task=task),
        GenerationRequest(prompt="Write a UART transmitter.", request_id="uart"),
        GenerationRequest(prompt=KMAP1),
    ]
    out = gen.generate(requests, SamplingParams(n=3))
    assert [len(x) for x in out] == [3, 0, 3]
    first = out[0]
    assert len({g.text for g in first}) == 1
    assert all(g.generator == "symbolic" and g.candidate is not None for g in first)
    cand = first[0].candidate
    assert cand is not None and cand.top == "TopModule" and cand.task_id == "kmap3"
    assert cand.files[0].content == first[0].text
    assert [g.candidate.provenance.sample_index for g in first if g.candidate] == [0, 1, 2]
    assert "uart" in gen.declined
    assert len(SymbolicGenerator(replicate=False).generate(requests[:1], SamplingParams(n=4))[0]) \
        == 1


def test_generator_uses_task_ports_without_header() -> None:
    spec = "      ab\ncd   00 01 11 10\n" + _GOOD_ROWS
    ports = [Port(name=n, direction="input") for n in "abcd"]
    ports.append(Port(name="f", direction="output"))
    task = Task(id="t", spec=spec, top="TopModule", ports=tuple(ports))
    (gens,) = SymbolicGenerator().generate([GenerationRequest(prompt="", task=task)],
                                           SamplingParams())
    assert len(gens) == 1 and "module TopModule" in gens[0].text


def test_registered_as_generator_plugin() -> None:
    host = PluginHost(load_entrypoints=False, plugins=[("symbolic", symbolic_plugin)])
    assert host.get("generator", "symbolic") is SymbolicGenerator
    assert isinstance(host.create("generator", "symbolic"), SymbolicGenerator)


def test_entry_point_discovery() -> None:
    from importlib import metadata

    declared = {e.name: e.value for e in metadata.entry_points(group="rtlforge")}
    if "symbolic" not in declared:
        pytest.skip("the installed rtlforge metadata does not declare the 'symbolic' entry point")
    assert declared["symbolic"] == "rtlforge.plugins.generators.symbolic"
    host = PluginHost(allow={"symbolic"})
    assert host.get("generator", "symbolic") is SymbolicGenerator
