"""RTLLM v2 `synchronizer` as a BEHAVE task: two clock domains, two resets, input rules from
the spec and a delay window on dataout. Valid designs with another structure pass, wrong ones
fail, the stimulus keeps to the spec's input rules, and the three backends agree."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rtlforge.behave.rtllm import ENV_ROOT, reference_candidate
from rtlforge.behave.sim.check import check_model, check_rtl
from rtlforge.behave.sim.golden import load_task_model
from rtlforge.behave.sim.stimulus import StimulusConfig, generate_stimulus
from rtlforge.behave.sim.task import BehaveTask, load_behave_task
from rtlforge.behave.sim.verilator import VerilatorBuilds
from rtlforge.core.models import Candidate
from rtlforge.sandbox.runner import SandboxRunner

REPO = Path(__file__).resolve().parents[2]
TASK_DIR = REPO / "examples" / "behave" / "rtllm" / "synchronizer"
#: RTLLM's data in a `shared` folder beside the checkout or above it (a worktree), as the
#: loader searches (rtlforge.behave.rtllm)
RTLLM = next((p / "shared" / "benchmarks" / "rtllm" for p in REPO.parents
              if (p / "shared" / "benchmarks" / "rtllm").is_dir()),
             REPO.parent / "shared" / "benchmarks" / "rtllm")

needs_rtllm = pytest.mark.skipif(not RTLLM.is_dir(), reason=f"RTLLM data not found at {RTLLM}")
PORTS = ("module synchronizer(input clk_a, input clk_b, input arstn, input brstn,\n"
         "                    input [3:0] data_in, input data_en, output reg [3:0] dataout);\n")

# data and enable registered in clk_a (as the spec's data_reg / en_data_reg), then THREE
# synchronising flops in clk_b: one cycle later than the reference, inside the window
THREE_FLOP = PORTS + """
  reg [3:0] data_reg;
  reg en_reg;
  reg [2:0] en_sync;
  always @(posedge clk_a or negedge arstn)
    if (!arstn) begin data_reg <= 4'd0; en_reg <= 1'b0; end
    else begin data_reg <= data_in; en_reg <= data_en; end
  always @(posedge clk_b or negedge brstn)
    if (!brstn) en_sync <= 3'b0; else en_sync <= {en_sync[1:0], en_reg};
  always @(posedge clk_b or negedge brstn)
    if (!brstn) dataout <= 4'd0; else if (en_sync[2]) dataout <= data_reg;
endmodule
"""

# another register structure: two synchronising flops, a third only to see the enable's
# rising edge, and dataout loaded once per enable (the data is steady while it is high)
EDGE_LOAD = PORTS + """
  reg [3:0] data_reg;
  reg en_reg, s1, s2, s3;
  always @(posedge clk_a or negedge arstn)
    if (!arstn) begin data_reg <= 4'd0; en_reg <= 1'b0; end
    else begin data_reg <= data_in; en_reg <= data_en; end
  always @(posedge clk_b or negedge brstn)
    if (!brstn) {s1, s2, s3} <= 3'b0; else {s1, s2, s3} <= {en_reg, s1, s2};
  always @(posedge clk_b or negedge brstn)
    if (!brstn) dataout <= 4'd0; else if (s2 && !s3) dataout <= data_reg;
endmodule
"""

WRONG_NO_ENABLE = PORTS + """
  reg [3:0] data_reg;
  always @(posedge clk_a or negedge arstn)
    if (!arstn) data_reg <= 4'd0; else data_reg <= data_in;
  always @(posedge clk_b or negedge brstn)
    if (!brstn) dataout <= 4'd0; else dataout <= data_reg;  // the enable is ignored
endmodule
"""

WRONG_ONE_FLOP = PORTS + """
  reg [3:0] data_reg;
  reg en_reg, en_b;
  always @(posedge clk_a or negedge arstn)
    if (!arstn) begin data_reg <= 4'd0; en_reg <= 1'b0; end
    else begin data_reg <= data_in; en_reg <= data_en; end
  always @(posedge clk_b or negedge brstn)
    if (!brstn) en_b <= 1'b0; else en_b <= en_reg;  // one synchronising flop, not two
  always @(posedge clk_b or negedge brstn)
    if (!brstn) dataout <= 4'd0; else if (en_b) dataout <= data_reg;
endmodule
"""

WRONG_NO_RESET = PORTS + """
  reg [3:0] data_reg;
  reg en_reg, en1, en2;
  always @(posedge clk_a or negedge arstn)
    if (!arstn) begin data_reg <= 4'd0; en_reg <= 1'b0; end
    else begin data_reg <= data_in; en_reg <= data_en; end
  always @(posedge clk_b or negedge brstn)
    if (!brstn) begin en1 <= 1'b0; en2 <= 1'b0; end else begin en1 <= en_reg; en2 <= en1; end
  always @(posedge clk_b)  // reset does not clear dataout
    if (en2) dataout <= data_reg;
endmodule
"""


@pytest.fixture(scope="module")
def task() -> BehaveTask:
    if not RTLLM.is_dir():
        pytest.skip(f"RTLLM data not found at {RTLLM}")
    return load_behave_task(TASK_DIR, rtllm_root=RTLLM)


@pytest.fixture(scope="module")
def runner() -> Iterator[SandboxRunner]:
    with SandboxRunner() as r:
        yield r


def _spec_rule_breaks(task: BehaveTask, seed: int) -> list[str]:
    """The description's input rules, checked on the generated stimulus directly: data_en
    high for at least 3 cycles, data_in constant while data_en is high, data_in changes at
    least 10 cycles apart (each within a reset segment; a reset may cut a stretch short)."""
    txns = generate_stimulus(task, StimulusConfig(seed=seed)).transactions
    broken: list[str] = []
    last_change = high_since = 0
    for n, txn in enumerate(txns):
        d, en = txn.inputs["data_in"], txn.inputs["data_en"]
        if n == 0 or txn.reset:
            last_change, high_since = n, n if en else -1
            continue
        prev = txns[n - 1].inputs
        if d != prev["data_in"]:
            if n - last_change < 10:
                broken.append(f"data_in changed {n - last_change} after the last change ({n})")
            if en or prev["data_en"]:
                broken.append(f"data_in changed while data_en was high ({n})")
            last_change = n
        if en and not prev["data_en"]:
            high_since = n
        if prev["data_en"] and not en and n - high_since < 3:
            broken.append(f"data_en high for {n - high_since} cycles only ({n})")
    return broken


@needs_rtllm
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_stimulus_keeps_to_the_spec_input_rules(task: BehaveTask, seed: int) -> None:
    assert _spec_rule_breaks(task, seed) == []


@needs_rtllm
def test_the_task_declares_two_domains_and_two_resets(task: BehaveTask) -> None:
    assert task.clock == "clk_b"
    assert [(c.port, c.ratio, c.align) for c in task.clocks] == [("clk_a", 2, "fall")]
    assert task.reset is not None and task.reset.signal == "brstn"
    assert [(r.signal, r.active) for r in task.reset.extra] == [("arstn", "low")]
    assert task.outputs[0].delay == (2, 3)


def _check(task: BehaveTask, source: str, runner: SandboxRunner, **kw):
    return check_rtl(task, Candidate.from_source(source), runner=runner, **kw)


@pytest.mark.tools
@needs_rtllm
def test_the_reference_passes_at_the_spec_delay(task: BehaveTask, runner, monkeypatch) -> None:
    # data_en is registered by the clk_a edge half a clk_a period before clk_b's (the same
    # clk_b cycle), then two flops in clk_b, then dataout: the model shows what cycle n took
    # in cycle n + 1, the reference in cycle n + 3, so d = 2
    monkeypatch.delenv(ENV_ROOT, raising=False)
    for seed in (0, 1):
        result = check_rtl(task, reference_candidate(task), runner=runner, seed=seed)
        assert result.verdict == "pass", result.message
        assert result.metrics["delay.out"] == 2


@pytest.mark.tools
@needs_rtllm
@pytest.mark.parametrize(("source", "delay"), [(THREE_FLOP, 3), (EDGE_LOAD, 2)],
                         ids=["three_flop", "edge_load"])
def test_valid_alternatives_pass(task: BehaveTask, runner, source: str, delay: int) -> None:
    result = _check(task, source, runner)
    assert result.verdict == "pass", result.message
    assert result.metrics["delay.out"] == delay


@pytest.mark.tools
@needs_rtllm
@pytest.mark.parametrize("source", [WRONG_NO_ENABLE, WRONG_ONE_FLOP, WRONG_NO_RESET],
                         ids=["no_enable", "one_flop", "no_reset"])
def test_wrong_designs_fail(task: BehaveTask, runner, source: str) -> None:
    for seed in (0, 1):
        result = _check(task, source, runner, seed=seed)
        assert result.verdict == "fail", seed
        assert result.first_failure is not None and result.first_failure.kind == "value"


@needs_rtllm
def test_models_are_checked_without_the_delay(task: BehaveTask) -> None:
    golden_text = (TASK_DIR / "golden.py").read_text()
    # taking the value only when data_en rises is the same behaviour on this input domain
    on_rise = golden_text.replace("    taken: UInt[4]\n", "    taken: UInt[4]\n    was: Bool\n") \
        .replace("        self.taken = 0\n", "        self.taken = 0\n        self.was = False\n") \
        .replace("        if data_en:\n            self.taken = data_in\n",
                 "        if data_en and not self.was:\n            self.taken = data_in\n"
                 "        self.was = data_en\n")
    assert on_rise != golden_text
    assert check_model(task, load_task_model(task, on_rise)).verdict == "pass"
    ignores_enable = golden_text.replace("        if data_en:\n", "        if True:\n")
    assert check_model(task, load_task_model(task, ignores_enable)).verdict == "fail"


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp", "verilator", "make", "g++")
@needs_rtllm
def test_the_three_backends_log_the_same_run(task: BehaveTask, tmp_path: Path) -> None:
    pytest.importorskip("cocotb")
    small = StimulusConfig(sequences=3, transactions=40)
    logs, verdicts = [], []
    with VerilatorBuilds() as builds:
        for backend in ("icarus", "verilator", "cocotb"):
            where = tmp_path / backend
            with SandboxRunner(base_dir=where, keep_workspaces=True) as runner:
                result = check_rtl(task, reference_candidate(task), runner=runner,
                                   stimulus=small, backend=backend, builds=builds)
            verdicts.append((result.verdict, result.mismatches))
            logs.append([p.read_text() for p in where.rglob("behave_log.txt")])
    assert verdicts == [("pass", 0)] * 3
    assert all(len(found) == 1 for found in logs)
    assert logs[0] == logs[1] == logs[2]
