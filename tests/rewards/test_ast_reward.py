"""AST-similarity reward (VeriSeek): Algorithm 1, reward cases, backends, safety, RTLLM."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtlforge.core.plugins import PluginHost
from rtlforge.rewards import ast as ast_reward
from rtlforge.rewards.ast import (
    ASTBackendUnavailable,
    ASTNode,
    ASTSimilarityReward,
    PyverilogBackend,
    SimilarityBudgetExceeded,
    tree_similarity,
)

N = ASTNode
RTLLM = Path(__file__).resolve().parents[2].parent / "shared" / "benchmarks" / "rtllm"

REF = """module acc(input clk, input rst, input [7:0] d, output reg [7:0] q);
  always @(posedge clk) begin
    if (rst) q <= 8'd0;
    else q <= q + d;
  end
endmodule
"""
# Same structure: every identifier and constant changed.
RENAMED = """module totally_different(input c, input r, input [15:0] x, output reg [15:0] y);
  always @(posedge c) begin
    if (r) y <= 16'hBEEF;
    else y <= y + x;
  end
endmodule
"""
OTHER_OP = REF.replace("q + d", "q - d")
SV_SOURCES = {
    "fill literal": "module m(input clk, output logic [3:0] q);\n"
                    "  always_ff @(posedge clk) q <= '0;\nendmodule\n",
    "for int": "module m(input [3:0] a, output logic [3:0] y);\n  always_comb begin\n"
               "    for (int i = 0; i < 4; i++) y[i] = a[3 - i];\n  end\nendmodule\n",
    "typedef enum": "module m(input clk, output logic s);\n  typedef enum logic {A, B} st_t;\n"
                    "  st_t st;\n  always_ff @(posedge clk) st <= (st == A) ? B : A;\n"
                    "  assign s = (st == B);\nendmodule\n",
}
STATUSES = {"parsed", "unparsable", "no_code", "too_large", "over_budget", "reference_error"}
LEFTOVERS = ("preprocess.output", "parsetab.py", "parser.out", "lextab.py")


Tree = tuple[str, tuple["Tree", ...]]


def paper_sim(t1: Tree, t2: Tree) -> float:
    """VeriSeek's Algorithm 1 transcribed line by line on (type, children) tuples: the oracle."""
    type1, kids1 = t1
    type2, kids2 = t2
    if type1 != type2:
        return 0.0
    if not kids1 and not kids2:
        return 1.0
    seen: set[int] = set()
    total = 0.0
    for c1 in kids1:
        best_s, best = 0.0, None
        for j, c2 in enumerate(kids2):
            if j in seen or c2[0] != c1[0]:
                continue
            s = paper_sim(c1, c2)
            if s > best_s:
                best_s, best = s, j
        if best is not None:
            seen.add(best)
            total += best_s
    return total / max(len(kids1), len(kids2))


def T(label: str, *kids: Tree) -> Tree:
    return (label, kids)


def as_tuple(node: ASTNode) -> Tree:
    return (node.label, tuple(as_tuple(c) for c in node.children))


def as_node(tree: Tree) -> ASTNode:
    return N(tree[0], [as_node(c) for c in tree[1]])


# Hand-computed: (t1, t2, sim(t1, t2) worked out from the pseudo-code on paper).
HAND_CASES = {
    # B(x) vs B(x) = 1; A finds no B-typed partner and stays unmatched: 1 / max(2, 1).
    "unmatched child leaves its partner free": (T("R", T("A"), T("B", T("x"))),
                                                T("R", T("B", T("x"))), 0.5),
    "identical": (T("R", T("A", T("x")), T("B")), T("R", T("A", T("x")), T("B")), 1.0),
    "root types differ": (T("R", T("A")), T("S", T("A")), 0.0),
    "both leaves, same type": (T("A"), T("A"), 1.0),
    "leaf vs inner node": (T("A"), T("A", T("x")), 0.0),
    # A(x) scores 0 against A(y) and A(z) (x != y, z): with best_s = 0 it takes neither, so
    # A(y) still gets A(y): 1 / 2. Taking a zero-score partner would give 0.
    "best_s > 0 gate": (T("R", T("A", T("x")), T("A", T("y"))),
                        T("R", T("A", T("y")), T("A", T("z"))), 0.5),
    # |C1| = 2 < |C2| = 4: both children match exactly, 2 / 4.
    "fewer children": (T("R", T("A"), T("B")), T("R", T("A"), T("B"), T("C"), T("D")), 0.5),
    # |C1| = 3 > |C2| = 1: only B matches, 1 / 3.
    "more children": (T("R", T("A"), T("B"), T("C")), T("R", T("B")), 1 / 3),
}


@pytest.mark.parametrize("case", sorted(HAND_CASES))
def test_oracle_and_implementation_on_hand_computed_trees(case: str) -> None:
    t1, t2, expected = HAND_CASES[case]
    assert paper_sim(t1, t2) == pytest.approx(expected, abs=1e-15)
    assert tree_similarity(as_node(t1), as_node(t2)) == pytest.approx(expected, abs=1e-15)


# ------------------------------------------------------------------------- Algorithm 1


def assign(op: str) -> ASTNode:
    return N("Assign", [N("Lvalue", [N("Identifier")]),
                        N("Rvalue", [N(op, [N("Identifier"), N("IntConst")])])])


def test_identical_trees_score_one() -> None:
    tree = N("ModuleDef", [assign("Plus"), assign("Minus"), N("Always", [N("SensList")])])
    assert tree_similarity(tree, tree) == 1.0


def test_leaves() -> None:
    assert tree_similarity(N("Identifier"), N("Identifier")) == 1.0
    assert tree_similarity(N("Identifier"), N("IntConst")) == 0.0
    assert tree_similarity(N("Block"), N("Block", [N("X")])) == 0.0  # leaf vs inner node


def test_different_operator_by_hand() -> None:
    # Assign: Lvalue vs Lvalue = 1; Rvalue(Plus) vs Rvalue(Minus) = 0/1 -> (1 + 0) / 2.
    assert tree_similarity(assign("Plus"), assign("Minus")) == pytest.approx(0.5)


def test_extra_statement_by_hand() -> None:
    n1 = N("M", [N("S", [N("x"), N("y")]), N("T", [N("x")])])
    n2 = N("M", [N("S", [N("x"), N("y"), N("z")]), N("T", [N("x")]), N("U")])
    # S vs S = (1 + 1) / 3; T vs T = 1; M = (2/3 + 1) / max(2, 3) = 5/9.
    assert tree_similarity(n1, n2) == pytest.approx(5 / 9)


def test_child_order_does_not_matter() -> None:
    a, b = N("A", [N("x")]), N("A", [N("x"), N("y")])
    assert tree_similarity(N("R", [a, b]), N("R", [b, a])) == 1.0


def test_greedy_is_not_optimal_and_is_asymmetric() -> None:
    n1 = N("R", [N("A", [N("x")]), N("A", [N("x"), N("y")])])
    n2 = N("R", [N("A", [N("x"), N("y")]), N("A", [N("z")])])
    # A(x) takes A(x,y) first (0.5 > 0), leaving A(x,y) with A(z) (0): (0.5 + 0) / 2.
    assert tree_similarity(n1, n2) == pytest.approx(0.25)
    # The other way A(x,y) picks A(x,y) (1), A(z) gets A(x) (0): 1 / 2. Optimal would be 0.5.
    assert tree_similarity(n2, n1) == pytest.approx(0.5)


def test_ties_go_to_the_first_unmatched_child() -> None:
    n1 = N("R", [N("A", [N("x")]), N("A", [N("x"), N("y")])])
    n2 = N("R", [N("A", [N("x"), N("z")]), N("A", [N("x"), N("y")])])
    # A(x) ties at 0.5 with both and takes the first, so A(x,y) still finds its twin: 0.75.
    # Taking the last would give (0.5 + 0.5) / 2.
    assert tree_similarity(n1, n2) == pytest.approx(0.75)


labels = st.sampled_from(["A", "B", "C"])
trees = st.recursive(st.builds(N, labels),
                     lambda kids: st.builds(N, labels, st.lists(kids, max_size=4)),
                     max_leaves=25)


@settings(max_examples=500, deadline=None)
@given(trees, trees)
def test_optimised_similarity_equals_the_paper_oracle(n1: ASTNode, n2: ASTNode) -> None:
    assert tree_similarity(n1, n2) == pytest.approx(paper_sim(as_tuple(n1), as_tuple(n2)),
                                                    abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(trees)
def test_a_tree_matches_its_variants_like_the_oracle(n: ASTNode) -> None:
    """Near-identical pairs (one subtree dropped) exercise deep partial matches."""
    t = as_tuple(n)
    variants = [(t[0], t[1][:i] + t[1][i + 1:]) for i in range(len(t[1]))]
    for v in variants:
        for a, b in ((t, v), (v, t)):
            assert tree_similarity(as_node(a), as_node(b)) == pytest.approx(paper_sim(a, b),
                                                                            abs=1e-12)


def test_deep_trees_do_not_recurse() -> None:
    deep = N("leaf")
    for _ in range(50_000):
        deep = N("Plus", [deep, N("Identifier")])
    assert tree_similarity(deep, deep) == 1.0


def test_step_budget_is_a_typed_error() -> None:
    wide1 = N("M", [N("S", [N(f"x{i}")]) for i in range(300)])
    wide2 = N("M", [N("S", [N(f"y{i}")]) for i in range(300)])
    with pytest.raises(SimilarityBudgetExceeded):
        tree_similarity(wide1, wide2, max_steps=1000)


# ------------------------------------------------------------------------- reward cases


def score(reward: ASTSimilarityReward, completion: object, reference: str = REF):
    return reward.score_detailed([""], [completion], reference=[reference])[0]


@pytest.mark.parametrize("backend", ["pyverilog", "pyslang"])
def test_renamed_identifiers_and_constants_score_ten(backend: str) -> None:
    s = score(ASTSimilarityReward(backend), f"```verilog\n{RENAMED}```")  # type: ignore[arg-type]
    assert (s.reward, s.status, s.similarity, s.backend) == (10.0, "parsed", 1.0, backend)


@pytest.mark.parametrize("backend", ["pyverilog", "pyslang"])
def test_parsed_reward_is_ten_times_similarity(backend: str) -> None:
    s = score(ASTSimilarityReward(backend), OTHER_OP)  # type: ignore[arg-type]
    assert s.status == "parsed" and s.backend == backend
    assert s.similarity is not None and 0.0 < s.similarity < 1.0
    assert s.reward == pytest.approx(10 * s.similarity)


def test_unparsable_code_scores_minus_five() -> None:
    reward = ASTSimilarityReward()
    broken = score(reward, "module m(input a); assign = ; endmodule")
    assert (broken.reward, broken.status, broken.backend) == (-5.0, "unparsable", "pyverilog")
    broken = score(ASTSimilarityReward("auto"), "module m(input a); assign = ; endmodule")
    assert (broken.reward, broken.status, broken.backend) == (-5.0, "unparsable", "pyslang")
    truncated = score(reward, "Sure:\n```verilog\nmodule m(input a, output y);\n  assign y = a")
    assert (truncated.reward, truncated.status) == (-5.0, "unparsable")


@pytest.mark.parametrize("text", ["", "I cannot help with that.",
                                  "The module should add two numbers.", "```python\nx = 1\n```"])
def test_no_verilog_scores_minus_ten(text: str) -> None:
    s = score(ASTSimilarityReward(), text)
    assert (s.reward, s.status, s.backend) == (-10.0, "no_code", None)


def test_custom_constants_and_score_api() -> None:
    reward = ASTSimilarityReward(scale=1.0, unparsable_reward=-1.0, no_code_reward=-2.0)
    got = reward.score(["p"] * 3, [RENAMED, "module m(; endmodule", "nothing"],
                       golden=[REF] * 3)
    assert got == [1.0, -1.0, -2.0]


def test_chat_format_completion() -> None:
    s = score(ASTSimilarityReward(), [{"role": "assistant", "content": RENAMED}])
    assert s.reward == 10.0


def test_missing_reference_abstains_and_missing_column_raises() -> None:
    reward = ASTSimilarityReward()
    s = reward.score_detailed([""], [REF], reference=[None])[0]
    assert (s.reward, s.status) == (None, "reference_error")
    with pytest.raises(ValueError):
        reward.score([""], [REF])
    with pytest.raises(ValueError):
        reward.score(["", ""], [REF, REF], reference=[REF])


def test_oversized_completion_is_refused_cheaply() -> None:
    reward = ASTSimilarityReward(max_source_chars=1000)
    big = "module m;\n" + "wire w;\n" * 500 + "endmodule\n"
    assert score(reward, big).status == "too_large"
    assert score(reward, big).reward == -5.0


def test_deeply_nested_expression_is_scored_not_crashed() -> None:
    chain = "module m(input a, output y);\n  assign y = " + "a + " * 20_000 + "a;\nendmodule\n"
    parens = "module m(input a, output y);\n  assign y = " + "(" * 5000 + "a" + ")" * 5000 \
        + ";\nendmodule\n"
    reward = ASTSimilarityReward()
    assert score(reward, chain, chain).reward == 10.0
    for text in (chain, parens):
        s = score(reward, text)
        assert isinstance(s.reward, float) and s.status in STATUSES


def test_reference_trees_are_cached() -> None:
    reward = ASTSimilarityReward("pyslang")
    calls = 0
    backend = reward._backends[0]
    real = backend.parse

    def counting(source: str, max_nodes: int):
        nonlocal calls
        calls += 1
        return real(source, max_nodes)

    backend.parse = counting  # type: ignore[method-assign]
    reward.score([""] * 16, [RENAMED] * 16, reference=[REF] * 16)
    assert calls == 1 + 16  # the reference once, each completion once


# ------------------------------------------------------------------------- backends


@pytest.mark.parametrize("construct", sorted(SV_SOURCES))
def test_auto_falls_back_to_pyslang_and_says_so(construct: str) -> None:
    src = SV_SOURCES[construct]
    assert score(ASTSimilarityReward("pyverilog"), src, src).status == "reference_error"
    assert score(ASTSimilarityReward("pyslang"), src, src).reward == 10.0
    s = score(ASTSimilarityReward("auto"), src, src)
    assert (s.reward, s.backend) == (10.0, "pyslang")
    assert s.detail is not None and "pyverilog cannot parse" in s.detail


@pytest.mark.parametrize("construct", sorted(SV_SOURCES))
def test_default_is_the_papers_pyverilog_reward(construct: str) -> None:
    """SystemVerilog that pyverilog rejects earns -5 by default, not a pyslang score."""
    reward = ASTSimilarityReward()
    assert reward.requested_backend == "pyverilog"
    s = score(reward, SV_SOURCES[construct])
    assert (s.reward, s.status, s.backend) == (-5.0, "unparsable", "pyverilog")
    assert score(reward, RENAMED).backend == "pyverilog"


def test_sv_completion_against_verilog_reference_compares_pyslang_trees() -> None:
    s = score(ASTSimilarityReward("auto"), SV_SOURCES["fill literal"])
    assert s.status == "parsed" and s.backend == "pyslang"
    assert s.detail is not None and "completion" in s.detail
    only_pv = score(ASTSimilarityReward("pyverilog"), SV_SOURCES["fill literal"])
    assert (only_pv.reward, only_pv.status) == (-5.0, "unparsable")


def test_macros_are_preprocessed_for_pyverilog() -> None:
    with_macro = "`define W 8\n" + REF.replace("[7:0]", "[`W-1:0]")
    plain = REF.replace("[7:0]", "[8-1:0]")
    s = score(ASTSimilarityReward("pyverilog"), plain, with_macro)
    assert (s.reward, s.backend) == (10.0, "pyverilog")
    undefined = score(ASTSimilarityReward("pyverilog"), REF.replace("[7:0]", "[`W-1:0]"))
    assert undefined.status == "unparsable"


def test_includes_never_read_files(tmp_path: Path) -> None:
    secret = tmp_path / "secret.v"
    secret.write_text(REF)
    src = f'`include "{secret}"\n'
    s = score(ASTSimilarityReward(), src + "module m; endmodule\n", src)
    assert s.reward is None and s.status == "reference_error"


def test_pyverilog_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PyverilogBackend, "available", staticmethod(lambda: False))
    with pytest.raises(ASTBackendUnavailable, match=r"rtlforge\[ast\]"):
        ASTSimilarityReward("pyverilog")
    with pytest.raises(ASTBackendUnavailable, match=r"rtlforge\[ast\]"):
        ASTSimilarityReward()  # the default is the paper's parser: no silent substitute
    s = score(ASTSimilarityReward("auto"), RENAMED)
    assert (s.reward, s.backend) == (10.0, "pyslang")
    assert s.detail is not None and "not installed" in s.detail


def test_registered_as_a_plugin() -> None:
    host = PluginHost(load_entrypoints=False, plugins=[("ast_reward", ast_reward)])
    assert host.get("reward", "ast-similarity") is ASTSimilarityReward
    with pytest.raises(ValueError):
        ASTSimilarityReward("verilator")  # type: ignore[arg-type]


# ------------------------------------------------------------------------- parallel safety


def _leftovers(dirs: Sequence[Path]) -> set[Path]:
    return {d / name for d in dirs for name in LEFTOVERS if (d / name).exists()}


def test_pyverilog_from_four_threads_writes_nothing(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    watched = [tmp_path, Path.cwd(), Path(tempfile.gettempdir()),
               Path(ast_reward.__file__).parent]
    before = _leftovers(watched)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(PyverilogBackend, "_parser", None)  # the build must write nothing too
    macro_ref = "`define W 8\n" + REF.replace("[7:0]", "[`W-1:0]")
    completions = [RENAMED, OTHER_OP, "module m(; endmodule", "no code", REF,
                   REF.replace("posedge", "negedge"), macro_ref] * 3
    refs = [REF] * 14 + [macro_ref] * 7

    def run() -> list[tuple[float | None, str]]:
        reward = ASTSimilarityReward("pyverilog")
        return [(s.reward, s.status) for s in
                reward.score_detailed([""] * len(completions), completions, reference=refs)]

    serial = run()
    results: list[list[tuple[float | None, str]]] = [[] for _ in range(4)]
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            for _ in range(3):
                results[i] = run()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(r == serial for r in results)
    assert os.listdir(tmp_path) == []
    assert _leftovers(watched) == before


# ------------------------------------------------------------------------- fuzz


verilogish = st.lists(st.sampled_from([
    "module", "endmodule", "m", "(", ")", ";", "input", "output", "reg", "wire", "[7:0]",
    "assign", "=", "+", "always", "@", "(posedge clk)", "begin", "end", "if", "else", "'0",
    "`define", "`W", "`include", '"x.v"', "\n", "```verilog\n", "```", "<answer>", "8'hFF",
    "((((", "))))", "\\", "$display", "//", "/*", "*/", "\x00", "é",
]), max_size=40).map(" ".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=300), verilogish))
def test_fuzz_never_raises(text: str) -> None:
    reward = ASTSimilarityReward()
    for ref in (REF, text):
        s = reward.score_detailed([""], [text], reference=[ref])[0]
        assert s.status in STATUSES
        if ref == REF:
            assert isinstance(s.reward, float)
        else:
            assert s.reward is None or isinstance(s.reward, float)


# ------------------------------------------------------------------------- RTLLM


@pytest.mark.shared
@pytest.mark.skipif(not RTLLM.is_dir(), reason=f"RTLLM data not found at {RTLLM}")
def test_rtllm_references_score_ten_against_themselves(capsys: pytest.CaptureFixture[str]) -> None:
    refs = sorted(p for p in RTLLM.glob("[A-Z]*/**/verified_*.v"))
    assert len(refs) == 50
    auto, pyverilog = ASTSimilarityReward("auto"), ASTSimilarityReward("pyverilog")
    by_pyverilog = 0
    for path in refs:
        src = path.read_text()
        s = auto.score_one(src, src)
        assert (s.reward, s.status) == (10.0, "parsed"), (path.name, s)
        by_pyverilog += s.backend == "pyverilog"
        if pyverilog.score_one(src, src).status == "parsed":
            assert s.backend == "pyverilog"
    with capsys.disabled():
        print(f"\nRTLLM self-similarity: 50/50 = 10.0; pyverilog parses {by_pyverilog}/50")
    assert by_pyverilog == 47  # adder_32bit, multi_8bit, float_multi need pyslang
