"""The BEHAVE attack corpus: hostile task files, RTLLM trees, designs, completions and reports.

Each test is one attack and says in its docstring what it tries. Attacks on the verdict are run
with the static gate on and, where the gate is what refuses them, with it switched off too
(``SandboxRunner(unsafe_skip_gate=True)``): the jail must still keep every file write and read
inside the run directory, and the checker must still give no pass a log does not prove. What
only the gate can stop (a design that, with the gate off, rewrites the whole transaction log it
shares a process with) is said where it applies, as tests/sandbox/test_attack_corpus.py does.
The oracle is always the attack's intent (a wrong design must not pass, nothing may appear
outside the run directory), never the code under test.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rtlforge.behave.rtllm import find_design, rtllm_task
from rtlforge.behave.sim.check import BehaveResult, check_rtl
from rtlforge.behave.sim.stimulus import StimulusConfig
from rtlforge.behave.sim.task import (
    BehaveTask,
    BehaveTaskError,
    load_behave_task,
    parse_behave_task,
)
from rtlforge.core.models import Candidate
from rtlforge.sandbox.runner import SandboxRunner

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "behave"
SMALL = StimulusConfig(sequences=2, transactions=20)
ADD8_TOML = (EXAMPLES / "add8" / "behave.toml").read_text()



def _tool(test: Callable[..., None]) -> Callable[..., None]:
    """Marks a test that runs Icarus in the sandbox."""
    return pytest.mark.tools(pytest.mark.requires_tools("iverilog", "vvp")(test))


#: add8 variants: ``{extra}`` is where an attack adds its module items.
RIGHT = ("module add8(input [7:0] a, input [7:0] b, output [8:0] sum);\n"
         "  assign sum = a + b;\n{extra}\nendmodule\n")
WRONG = ("module add8(input [7:0] a, input [7:0] b, output [8:0] sum);\n"
         "  assign sum = a - b;\n{extra}\nendmodule\n")


@pytest.fixture(scope="module")
def gated() -> Iterator[SandboxRunner]:
    with SandboxRunner() as runner:
        yield runner


@pytest.fixture(scope="module")
def ungated() -> Iterator[SandboxRunner]:
    with SandboxRunner(unsafe_skip_gate=True) as runner:
        yield runner


@pytest.fixture(scope="module")
def add8() -> BehaveTask:
    return load_behave_task(EXAMPLES / "add8")


def _design(template: str, extra: str = "") -> Candidate:
    return Candidate.from_source(template.replace("{extra}", extra))


def _check(task: BehaveTask, candidate: Candidate, runner: SandboxRunner,
           **kw: object) -> BehaveResult:
    return check_rtl(task, candidate, runner=runner, stimulus=kw.pop("stimulus", SMALL),
                     timeout_s=kw.pop("timeout_s", 10.0), **kw)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ task files


def _parse(text: str) -> BehaveTask:
    return parse_behave_task(text, directory=EXAMPLES / "add8")


def test_task_huge_array_width_is_refused() -> None:
    """Attack: a task declaring ``uint4096[65536]`` (268 M bits per transaction) so that the
    stimulus generator, the golden and the testbench's registers exhaust memory."""
    text = ADD8_TOML.replace('{ name = "b", type = "uint8" }',
                             '{ name = "b", type = "uint4096[65536]" }')
    with pytest.raises(BehaveTaskError) as err:
        _parse(text)
    assert "bits" in str(err.value)


def test_task_many_wide_endpoints_are_refused() -> None:
    """Attack: many endpoints each within the per-type limit whose sum is still enormous."""
    many = ", ".join(f'{{ name = "x{k}", type = "uint4096" }}' for k in range(40))
    text = ADD8_TOML.replace('{ name = "b", type = "uint8" }', many)
    with pytest.raises(BehaveTaskError) as err:
        _parse(text)
    assert "bits" in str(err.value)


@pytest.mark.parametrize("port", ["bt_cycle", "bt_fd", "behave_tb"])
def test_task_port_in_the_testbench_namespace_is_refused(port: str) -> None:
    """Attack: a port named like one of the generated testbench's own signals (``bt_*``) or
    its top: every design, the right one included, would fail to compile (an ``error`` verdict
    blaming the design for the task's choice)."""
    text = ADD8_TOML.replace('{ name = "b", type = "uint8" }',
                             f'{{ name = "b", type = "uint8", port = "{port}" }}')
    with pytest.raises(BehaveTaskError) as err:
        _parse(text)
    assert err.value.field is not None and "port" in err.value.field


@pytest.mark.parametrize("port", ["posedge", "int", "xor", "final"])
def test_task_port_named_a_keyword_is_refused(port: str) -> None:
    """Attack: a port named a Verilog/SystemVerilog keyword the short reserved list missed;
    the testbench could not declare it, so every design would get ``error``."""
    text = ADD8_TOML.replace('{ name = "b", type = "uint8" }',
                             f'{{ name = "b", type = "uint8", port = "{port}" }}')
    with pytest.raises(BehaveTaskError):
        _parse(text)


def test_task_top_named_like_the_testbench_is_refused() -> None:
    """Attack: ``top = "behave_tb"``: the testbench would instantiate itself."""
    with pytest.raises(BehaveTaskError) as err:
        _parse(ADD8_TOML.replace('top = "add8"', 'top = "behave_tb"'))
    assert err.value.field == "top"


@pytest.mark.parametrize("value", ['"add8\\n`include \\"/etc/passwd\\""', '"../../etc"',
                                   '"a b"', "123", '""'])
def test_task_hostile_id_is_a_typed_error(value: str) -> None:
    """Attack: an ``id`` carrying a newline and a directive, a path, a space, a number or
    nothing: the id lands in the generated testbench's comment line."""
    with pytest.raises(BehaveTaskError) as err:
        _parse(ADD8_TOML.replace('id = "add8"', f"id = {value}"))
    assert err.value.field == "id"


@pytest.mark.parametrize("nested", ["[" * 50_000 + "]" * 50_000,
                                    "{a=" * 50_000 + "1" + "}" * 50_000])
def test_task_deeply_nested_toml_is_a_typed_error(nested: str) -> None:
    """Attack: a 100 kB ``behave.toml`` value nested 50 000 arrays (or inline tables) deep:
    Python's TOML reader recurses once per level and raised a bare RecursionError."""
    with pytest.raises(BehaveTaskError, match="nested"):
        parse_behave_task(f"x = {nested}\n")


#: a per-cycle task with a second clock, a gate and a gated endpoint: ``{clocks}``,
#: ``{rules}`` and ``{delay}`` are where an attack puts its declarations
CLOCKED = """
id = "c"
top = "c"
golden = "golden.py"
clock = "clk"
{clocks}

[reset]
signal = "rst"

[[interfaces]]
name = "in"
direction = "input"
protocol = "per_cycle"
endpoints = [{{ name = "g", type = "bool" }}, {{ name = "h", type = "bool" }},
             {{ name = "x", type = "uint64" }}, {{ name = "y", type = "uint64" }}]

[[interfaces]]
name = "out"
direction = "output"
protocol = "per_cycle"
{delay}
endpoints = [{{ name = "q", type = "bool" }}]
{rules}
"""


def _clocked(clocks: str = "", rules: str = "", delay: str = "") -> BehaveTask:
    return parse_behave_task(CLOCKED.format(clocks=clocks, rules=rules, delay=delay))


@pytest.mark.parametrize("ratio", ["1000000000000000", "-2", "0"])
def test_task_huge_or_silly_clock_ratio_is_refused_at_once(ratio: str) -> None:
    """Attack: a further clock at 10^15 edges per cycle: the testbench writes every edge, so
    the simulation (and the generated text's schedule) would never end."""
    start = time.monotonic()
    with pytest.raises(BehaveTaskError) as err:
        _clocked(clocks=f'[[clocks]]\nport = "fast"\nratio = {ratio}')
    assert err.value.field == "clocks[0].ratio"
    assert time.monotonic() - start < 2


def test_task_coprime_clock_ratios_keep_the_cycle_bounded() -> None:
    """Attack: four further clocks at large, mostly coprime ratios, so that the stretched
    cycle (10 x lcm units) and its edge list are as large as the format allows; a fifth is
    refused."""
    from rtlforge.behave.sim.testbench import cycle_schedule

    clocks = "\n".join(f'[[clocks]]\nport = "c{r}"\nratio = {r}' for r in (13, 14, 15, 16))
    schedule = cycle_schedule(_clocked(clocks=clocks))
    assert len(schedule) == 2 * (13 + 14 + 15 + 16) + 5
    assert sum(e.delay for e in schedule) == 10 * 21840 < 2**31  # lcm(13, 14, 15, 16)
    with pytest.raises(BehaveTaskError, match="at most 4"):
        _clocked(clocks=clocks + '\n[[clocks]]\nport = "c11"\nratio = 11')


def test_task_constraint_loop_is_a_typed_error_not_a_hang() -> None:
    """Attack: g may change only while h is 0 and h only while g is 0: with both high no
    input could ever change, and a generator honouring both would wait forever."""
    rules = ('[[constraints]]\nendpoint = "g"\nstable_while = "h"\n'
             '[[constraints]]\nendpoint = "h"\nstable_while = "g"\n')
    start = time.monotonic()
    with pytest.raises(BehaveTaskError, match="chains") as err:
        _clocked(rules=rules)
    assert err.value.field is not None and err.value.field.startswith("constraints")
    assert time.monotonic() - start < 2


@pytest.mark.parametrize(("rules", "field"), [
    # x must change within 5 transactions but may wait 4 (g's run) + 3 (settle) for its gate
    ('[[constraints]]\nendpoint = "g"\nhold = [4, 9]\n'
     '[[constraints]]\nendpoint = "x"\nhold = [1, 5]\nstable_while = "g"\nsettle = 3\n',
     "constraints[1].hold"),
    # x needs g low 6 transactions in a row; g holds any value 5 at most
    ('[[constraints]]\nendpoint = "g"\nhold = [1, 5]\n'
     '[[constraints]]\nendpoint = "x"\nstable_while = "g"\nsettle = 5\n',
     "constraints[1].settle"),
])
def test_task_unsatisfiable_constraints_are_typed_errors(rules: str, field: str) -> None:
    """Attack: rules that cannot all hold: a generator would have to break one (a stimulus
    outside the spec) or search forever."""
    with pytest.raises(BehaveTaskError, match="unsatisfiable") as err:
        _clocked(rules=rules)
    assert err.value.field == field


def test_task_holds_blowing_up_the_edge_sweep_are_refused_quickly() -> None:
    """Attack: the longest holds on 64-bit endpoints: the edge sweep proposes each of their
    73 edge values for a whole run (7.3 M transactions each) before any random sequence."""
    rules = ('[[constraints]]\nendpoint = "x"\nhold = [1, 100000]\n'
             '[[constraints]]\nendpoint = "y"\nhold = [1, 100000]\n')
    start = time.monotonic()
    with pytest.raises(BehaveTaskError, match="edge sweep") as err:
        _clocked(rules=rules)
    assert err.value.field == "constraints"
    assert time.monotonic() - start < 2


def test_task_huge_delay_window_is_refused() -> None:
    """Attack: a delay window of a million cycles: the judge tries every delay in it."""
    with pytest.raises(BehaveTaskError) as err:
        _clocked(delay="delay = [0, 1000000]")
    assert err.value.field == "interfaces[1].delay"


def _task_dir(tmp_path: Path, toml: str, **files: str) -> Path:
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "behave.toml").write_text(toml)
    (folder / "golden.py").write_text((EXAMPLES / "add8" / "golden.py").read_text())
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_task_spec_file_symlink_to_a_host_file_is_refused(tmp_path: Path) -> None:
    """Attack: ``spec_file`` a symlink to a host file, so its text reaches prompts."""
    folder = _task_dir(tmp_path, ADD8_TOML)
    (folder / "spec.md").symlink_to("/etc/hostname")
    with pytest.raises(BehaveTaskError) as err:
        load_behave_task(folder)
    assert err.value.field == "spec_file"


def test_task_huge_and_binary_spec_files_are_refused(tmp_path: Path) -> None:
    """Attack: a 2 MB spec and a spec that is not UTF-8 text."""
    folder = _task_dir(tmp_path, ADD8_TOML)
    (folder / "spec.md").write_text("x" * (2 << 20))
    with pytest.raises(BehaveTaskError, match="larger than"):
        load_behave_task(folder)
    (folder / "spec.md").write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(BehaveTaskError, match="cannot read"):
        load_behave_task(folder)


@_tool
def test_empty_stimulus_never_passes(gated: SandboxRunner) -> None:
    """Attack: a stimulus with no transactions (no sequences, no edge sweep; a per_cycle
    input with no endpoints makes the sweep empty too): nothing is checked, so any design,
    a wrong one included, would pass vacuously."""
    task = load_behave_task(EXAMPLES / "add8")
    empty = StimulusConfig(sequences=0, edge_sweep=False)
    result = _check(task, _design(WRONG), gated, stimulus=empty)
    assert result.verdict == "infra_error" and "no transactions" in result.message


# ------------------------------------------------------------------------------ RTLLM roots


def _rtllm_tree(root: Path, design: str = "adder_8bit", *, verified: tuple[str, ...] = (
        "verified_adder_8bit.v",)) -> Path:
    folder = root / "Arithmetic" / "Adder" / design
    folder.mkdir(parents=True)
    (folder / "design_description.txt").write_text("An 8-bit adder.\n")
    (folder / "testbench.v").write_text(
        "module tb; reg [7:0] a, b; wire [8:0] s;\n"
        f"  {design} uut(.a(a), .b(b), .sum(s));\nendmodule\n")
    for name in verified:
        (folder / name).write_text(f"module verified_{design}(input [7:0] a, input [7:0] b, "
                                   "output [8:0] sum); assign sum = a + b; endmodule\n")
    return folder


def _rtllm_task_dir(tmp_path: Path, name: str) -> Path:
    toml = ADD8_TOML.replace('spec_file = "spec.md"\n', f'rtllm = "{name}"\n')
    return _task_dir(tmp_path, toml)


@pytest.mark.parametrize("name", ["../../etc", "a/b", ".hidden", "/etc"])
def test_rtllm_name_with_a_path_is_refused(name: str) -> None:
    """Attack: ``rtllm = "../../etc"`` and friends, to make the loader read outside a root."""
    with pytest.raises(BehaveTaskError) as err:
        _parse(ADD8_TOML.replace('spec_file = "spec.md"\n', f'rtllm = "{name}"\n'))
    assert err.value.field == "rtllm"


def test_rtllm_root_at_the_filesystem_root_is_a_quick_typed_miss(tmp_path: Path) -> None:
    """Attack: an RTLLM root pointing at ``/`` (a search over the whole machine, /proc
    included): the bounded search ends in seconds with a typed error."""
    start = time.perf_counter()
    with pytest.raises(BehaveTaskError) as err:
        find_design("no_such_design_anywhere", tmp_path, "/")
    assert err.value.field == "rtllm"
    assert time.perf_counter() - start < 30


def test_rtllm_tree_with_two_verified_files_is_a_typed_error(tmp_path: Path) -> None:
    """Attack: a fake RTLLM tree whose design folder holds two verified references, so which
    one is the reference would be a guess."""
    root = tmp_path / "rtllm_root"
    _rtllm_tree(root, verified=("verified_adder_8bit.v", "verified_adder_8bit_alt.v"))
    task = load_behave_task(_rtllm_task_dir(tmp_path, "adder_8bit"), rtllm_root=root)
    with pytest.raises(BehaveTaskError, match="exactly one verified"):
        rtllm_task(task)


def test_rtllm_description_symlink_to_a_host_file_is_refused(tmp_path: Path) -> None:
    """Attack: the design's description a symlink to a host file (its text becomes the spec
    shown to a model)."""
    root = tmp_path / "rtllm_root"
    folder = _rtllm_tree(root)
    (folder / "design_description.txt").unlink()
    (folder / "design_description.txt").symlink_to("/etc/hostname")
    with pytest.raises(BehaveTaskError):
        load_behave_task(_rtllm_task_dir(tmp_path, "adder_8bit"), rtllm_root=root)


def test_rtllm_symlinked_design_folder_is_not_followed(tmp_path: Path) -> None:
    """Attack: the design folder itself a symlink to a folder elsewhere on the host."""
    elsewhere = tmp_path / "elsewhere"
    real = _rtllm_tree(elsewhere)
    root = tmp_path / "rtllm_root"
    (root / "Arithmetic").mkdir(parents=True)
    (root / "Arithmetic" / "adder_8bit").symlink_to(real, target_is_directory=True)
    with pytest.raises(BehaveTaskError, match="not found"):
        load_behave_task(_rtllm_task_dir(tmp_path, "adder_8bit"), rtllm_root=root)


def test_rtllm_huge_and_binary_descriptions_are_refused(tmp_path: Path) -> None:
    """Attack: a 2 MB description, then one that is binary."""
    root = tmp_path / "rtllm_root"
    folder = _rtllm_tree(root)
    task_dir = _rtllm_task_dir(tmp_path, "adder_8bit")
    (folder / "design_description.txt").write_text("y" * (2 << 20))
    with pytest.raises(BehaveTaskError, match="larger than"):
        load_behave_task(task_dir, rtllm_root=root)
    (folder / "design_description.txt").write_bytes(b"\x00\xff\xfe")
    with pytest.raises(BehaveTaskError, match="cannot read"):
        load_behave_task(task_dir, rtllm_root=root)


# ------------------------------------------------------------------------------ designs


@_tool
@pytest.mark.parametrize("backend", [
    "icarus", pytest.param("verilator", marks=[
        pytest.mark.slow, pytest.mark.requires_tools("verilator", "make", "g++")])])
def test_design_finish_at_time_zero_is_a_fail(backend: str, add8: BehaveTask,
                                              gated: SandboxRunner) -> None:
    """Attack: ``initial $finish;`` ends the simulation before the testbench opens its log,
    turning the design's own act into an infrastructure error (a reward would abstain instead
    of scoring 0)."""
    result = _check(add8, _design(RIGHT, "initial $finish;"), gated, backend=backend,
                    timeout_s=120.0)
    assert result.verdict == "fail"
    assert any(v.kind == "early_end" for v in result.violations)


@_tool
def test_design_output_flood_at_time_zero_is_a_fail(add8: BehaveTask,
                                                    gated: SandboxRunner) -> None:
    """Attack: a ``$display`` flood from time 0: the sandbox kills the run at its output cap
    before any log exists, which must count against the design, not the infrastructure."""
    flood = 'initial forever $display("%0200d", 0);'
    result = _check(add8, _design(RIGHT, flood), gated)
    assert result.verdict == "fail"


@_tool
def test_design_finish_mid_run_is_an_early_end(add8: BehaveTask, gated: SandboxRunner) -> None:
    """Attack: a design that ends the simulation after a few cycles, hoping a short log with
    few mismatches, or none, passes."""
    result = _check(add8, _design(RIGHT, "initial #55 $finish;"), gated)
    assert result.verdict == "fail"
    assert [v.kind for v in result.violations] == ["early_end"]


LOG_REWRITE = ('integer bt_forge_fd;\nfinal begin bt_forge_fd = $fopen("behave_log.txt", "w");'
               '\n  $fwrite(bt_forge_fd, "0 E\\n"); $fclose(bt_forge_fd); end')


@_tool
def test_design_rewriting_the_log_is_refused_by_the_gate(add8: BehaveTask,
                                                         gated: SandboxRunner) -> None:
    """Attack: a wrong design whose ``final`` block reopens the transaction log and writes an
    ended run with no transactions in it."""
    result = _check(add8, _design(WRONG, LOG_REWRITE), gated)
    assert result.verdict == "fail" and result.message.startswith("security:")


@_tool
def test_design_rewriting_the_log_without_the_gate_does_not_pass(
        add8: BehaveTask, ungated: SandboxRunner) -> None:
    """Attack: the log rewrite above with the gate off: an ended log that accepted none of the
    stimulus's transactions must not read as a pass. (A design that, with the gate off,
    recomputes and writes a complete, correct log is a forgery only the gate stops: it runs in
    the testbench's own process.)"""
    result = _check(add8, _design(WRONG, LOG_REWRITE), ungated)
    assert result.verdict == "fail"


@_tool
def test_design_ending_the_testbench_loop_without_the_gate_does_not_pass(
        add8: BehaveTask, ungated: SandboxRunner) -> None:
    """Attack: with the gate off, a hierarchical write into the testbench
    (``behave_tb.bt_ip``) that ends its stimulus loop after the first transactions, so the
    log ends cleanly with almost nothing checked."""
    extra = "initial #45 behave_tb.bt_ip = 1000000;"
    wrong_later = WRONG.replace("a - b", "($time < 1000) ? a + b : a - b")
    result = _check(add8, _design(wrong_later, extra), ungated)
    assert result.verdict == "fail"


@_tool
@pytest.mark.parametrize("extra", [
    'initial #3 $fwrite(behave_tb.bt_fd, "0 E\\n");',
    "initial #3 $root.behave_tb.bt_dead = 1;",
    "defparam behave_tb.bt_dut.W = 1;",
    "initial #3 $fwrite(32'h80000003, \"0 E\\n\");",
    'initial $dumpfile("behave_log.txt");',
    'initial $system("echo 0 E > behave_log.txt");',
])
def test_design_reaching_into_the_testbench_is_refused_by_the_gate(
        extra: str, add8: BehaveTask, gated: SandboxRunner) -> None:
    """Attack: hierarchical references, ``$root``, ``defparam``, a guessed file descriptor,
    ``$dumpfile`` and ``$system`` aimed at the testbench's log and state."""
    result = _check(add8, _design(WRONG, extra), gated)
    assert result.verdict == "fail" and result.message.startswith("security:")


@_tool
def test_design_rewriting_the_stimulus_without_the_gate_does_not_pass(
        add8: BehaveTask, ungated: SandboxRunner) -> None:
    """Attack: with the gate off, a wrong adder (``a - b``) that rewrites the stimulus file at
    time 0 to all-zero inputs, where it agrees with a right one: the expected outputs come
    from the stimulus Python generated, not from the file, so the forged inputs mismatch."""
    extra = ('integer fd, k;\ninitial begin fd = $fopen("behave_stim.hex", "w");\n'
             '  for (k = 0; k < 200; k = k + 1) $fwrite(fd, "0\\n"); $fclose(fd); end')
    result = _check(add8, _design(WRONG, extra), ungated)
    assert result.verdict == "fail"


@_tool
def test_design_dumping_into_the_log_without_the_gate_does_not_pass(
        add8: BehaveTask, ungated: SandboxRunner) -> None:
    """Attack: with the gate off, ``$dumpfile`` aimed at the transaction log, so VCD text
    replaces or interleaves the testbench's lines."""
    extra = 'initial begin $dumpfile("behave_log.txt"); $dumpvars(0, add8); end'
    result = _check(add8, _design(WRONG, extra), ungated)
    assert result.verdict == "fail"


@_tool
def test_design_file_io_without_the_gate_stays_in_the_run_directory(
        add8: BehaveTask, ungated: SandboxRunner, tmp_path: Path) -> None:
    """Attack: with the gate off, write a file outside the run directory and read a host
    file (its words would steer the outputs): the jail shows neither."""
    secret = tmp_path / "secret.hex"
    secret.write_text("ff\n")
    outside = tmp_path / "written_by_design"
    extra = (f'integer fd; reg [7:0] m [0:0];\ninitial begin fd = $fopen("{outside}", "w");\n'
             f'  $fwrite(fd, "escaped"); $fclose(fd); $readmemh("{secret}", m); end\n'
             "assign sum = 0;")
    design = WRONG.replace("  assign sum = a - b;\n", "")
    result = _check(add8, _design(design, extra), ungated)
    assert not outside.exists()
    assert result.verdict == "fail"


@_tool
def test_design_output_flood_mid_run_is_a_fail(add8: BehaveTask, gated: SandboxRunner) -> None:
    """Attack: a correct adder that floods the output once the log has started: the sandbox
    cuts the run, and a cut log is an early end, never a pass."""
    result = _check(add8, _design(RIGHT, 'initial #95 forever $display("%0200d", 0);'), gated)
    assert result.verdict == "fail"
    assert [v.kind for v in result.violations] == ["early_end"]


@_tool
def test_design_files_named_like_ours_do_not_replace_them(add8: BehaveTask,
                                                          gated: SandboxRunner) -> None:
    """Attack: a wrong design shipping files named like the testbench, the stimulus and the
    log (``behave_tb.v`` holding a testbench that only logs an end): they are renamed on the
    way in, so ours run and the design is judged. (The compiled image is a dot-file, a name
    no SourceFile may have.)"""
    from rtlforge.core.models import SourceFile

    fake_tb = ('module behave_tb; integer fd; initial begin fd = $fopen("behave_log.txt", "w");'
               ' $fwrite(fd, "0 E\\n"); $fclose(fd); $finish; end endmodule\n')
    files = (SourceFile(name="add8.v", content=WRONG.replace("{extra}", "")),
             SourceFile(name="behave_tb.v", content=fake_tb),
             SourceFile(name="behave_stim.hex", content="0\n"),
             SourceFile(name="behave_log.txt", content="0 E\n"))
    result = _check(add8, Candidate(files=files), gated)
    assert result.verdict == "fail"


@_tool
def test_violation_names_a_long_interface_whole(tmp_path: Path, gated: SandboxRunner) -> None:
    """Attack: an output interface named with more than 16 characters: the testbench's
    violation task held 16, so a design dropping valid was reported on a clipped name (an
    interface the task does not have)."""
    toml = (EXAMPLES / "rv_accum" / "behave.toml").read_text()
    long_name = "accumulated_sum_output"
    folder = tmp_path / "rv"
    folder.mkdir()
    (folder / "behave.toml").write_text(toml.replace('name = "out"', f'name = "{long_name}"')
                                        .replace('spec_file = "spec.md"\n', ""))
    (folder / "golden.py").write_text((EXAMPLES / "rv_accum" / "golden.py").read_text())
    task = load_behave_task(folder)
    result = _check(task, Candidate.from_file(EXAMPLES / "rv_accum" / "wrong_drop.v"), gated)
    assert result.verdict == "fail"
    dropped = [v for v in result.violations if v.kind == "valid_dropped"]
    assert dropped and {v.interface for v in dropped} == {long_name}


@_tool
def test_design_x_and_z_outputs_fail(add8: BehaveTask, gated: SandboxRunner) -> None:
    """Attack: outputs left at Z (or X), which a careless comparison might read as a match."""
    result = _check(add8, _design(WRONG.replace("a - b", "9'bz")), gated)
    assert result.verdict == "fail" and result.first_failure is not None
    assert "unknown" in result.first_failure.message


@_tool
def test_design_declaring_the_testbench_top_without_the_gate_is_an_error(
        add8: BehaveTask, ungated: SandboxRunner) -> None:
    """Attack: a design that declares ``module behave_tb`` to replace the testbench (with the
    gate off): Icarus refuses the duplicate, an ``error`` verdict, never a pass."""
    design = "module behave_tb; initial $finish; endmodule\n" + RIGHT.replace("{extra}", "")
    result = _check(add8, Candidate.from_source(design), ungated)
    assert result.verdict == "error"


@_tool
def test_design_that_never_advances_time_times_out(add8: BehaveTask,
                                                   gated: SandboxRunner) -> None:
    """Attack: a loop with no delay (``while (1)``) that keeps the simulator in one time step
    forever: a wall-clock ``timeout``, never a pass, fail or infra_error."""
    extra = "integer spin = 0;\ninitial #15 while (1) spin = spin + 1;"
    result = _check(add8, _design(RIGHT, extra), gated, timeout_s=2.0)
    assert result.verdict == "timeout"


@_tool
def test_stimulus_file_over_the_workspace_limit_is_not_the_designs_fault(
        tmp_path: Path, gated: SandboxRunner) -> None:
    """Attack: a legal ``uint4096`` task whose stimulus file (4 000 random 1 024-digit words,
    less than the default 5 000) is over the sandbox's per-file limit: the refusal of our own
    file must be an infrastructure error, not an ``error`` verdict on a correct design."""
    toml = (ADD8_TOML.replace('{ name = "a", type = "uint8" }, { name = "b", type = "uint8" }',
                              '{ name = "a", type = "uint4096" }')
            .replace('{ name = "sum", type = "uint9" }', '{ name = "y", type = "uint4096" }'))
    golden = ("from rtlforge.behave.model.dsl import *\n\n\nclass Out(Record):\n"
              "    y: UInt[4096]\n\n\nclass Wide(Model):\n    def reset(self):\n        pass\n\n"
              "    def process(self, a: UInt[4096]) -> Out:\n        return Out(y=a)\n")
    folder = _task_dir(tmp_path, toml.replace('spec_file = "spec.md"\n', ""))
    (folder / "golden.py").write_text(golden)
    task = load_behave_task(folder)
    design = Candidate.from_source("module add8(input [4095:0] a, output [4095:0] y);\n"
                                   "  assign y = a;\nendmodule\n")
    result = check_rtl(task, design, runner=gated,
                       stimulus=StimulusConfig(sequences=2, transactions=2000))
    assert result.verdict == "infra_error", result.message
    assert "stimulus" in result.message


# ------------------------------------------------------------------------------ misc


def test_areatime_report_escapes_hostile_names_and_reasons() -> None:
    """Attack: a design-set name and a failure message carrying HTML and script."""
    from rtlforge.behave.areatime import AreaTimePoint, AreaTimeResult, Workload, render_report

    evil = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
    point = AreaTimePoint(name=evil, files=(f"{evil}.v",), status="fails_b_star", reason=evil,
                          check_verdict="fail", time_ns=1.0, area_um2=2.0)
    page = render_report(AreaTimeResult(task=evil, freq_mhz=100.0, period_ns=10.0,
                                        workload=Workload(), check=SMALL, liberty=evil,
                                        candidates=(point,)))
    assert "<script>" not in page and "<img" not in page
    assert "&lt;script&gt;" in page


def test_environment_workspace_refuses_paths_and_hidden_names() -> None:
    """Attack: an agent's tool call naming ``../x``, an absolute path, or a dot-file."""
    from rtlforge.behave.env.workspace import Workspace, WorkspaceError

    ws = Workspace()
    for name in ("../escape.v", "/etc/passwd", "a/b.v", "", "x.v\n`include \"y\""):
        with pytest.raises(WorkspaceError) as err:
            ws.write(name, "module m; endmodule\n")
        assert err.value.kind == "bad_name"
    assert ws.names() == []


@pytest.mark.tools
@pytest.mark.slow  # one Verilator build: about 30 s
@pytest.mark.requires_tools("verilator", "make", "g++")
def test_rtl_coverage_does_not_compile_a_design_header_shadowing_verilated_h(
        add8: BehaveTask, gated: SandboxRunner) -> None:
    """Attack: a design that ships a file named ``verilated.h`` holding C++: the gate reads it
    as (harmless) text, but the coverage build's own C++ main, written next to it, would
    include it instead of Verilator's and run its code. Here it holds an ``#error``, so a
    build that compiled it says so."""
    from rtlforge.behave.sim.rtlcov import rtl_coverage
    from rtlforge.behave.sim.stimulus import Stimulus, Transaction
    from rtlforge.core.models import SourceFile

    marker = "rtlforge-attack-design-header-compiled"
    design = Candidate(files=(SourceFile(name="add8.v", content=RIGHT.replace("{extra}", "")),
                              SourceFile(name="verilated.h", content=f"#error {marker}\n")))
    stim = Stimulus(transactions=(Transaction(inputs={"a": 1, "b": 2}, reset=True),))
    cov = rtl_coverage(add8, design, stim, gated, timeout_s=300)
    assert marker not in cov.message
    assert cov.status == "ok", cov.message


# ------------------------------------------------------------------------------ rewards


@pytest.mark.parametrize("artifact", ["rtl", "model"])
def test_reward_extraction_of_unclosed_fences_is_linear(artifact: str) -> None:
    """Attack: a fence opener followed by one 60 kB word and no newline, and thousands of
    openers on one line: the fence pattern backtracked through the word once per character
    (quadratic: 3.4 s for 36 kB, 90 s for a 120 kB completion), stalling every reward of a
    training step. Linear now: milliseconds."""
    from rtlforge.behave.rewards import BehaveModelReward, BehaveRTLReward

    reward = (BehaveRTLReward if artifact == "rtl" else BehaveModelReward)(sequences=1,
                                                                          transactions=1)
    completions = ["```" + "module" * 10_000, "```" * 6000]
    start = time.perf_counter()
    details = reward.score_detailed([""] * 2, completions, behave_task=[EXAMPLES / "add8"] * 2)
    assert time.perf_counter() - start < 3.0
    assert all(d.reward == 0.0 and "no_code" in d.flags for d in details)


def test_extraction_still_reads_fences_with_info_strings() -> None:
    """The linear fence pattern still reads what the old one did: a language tag followed by
    more info text, and an untagged fence (CommonMark: a backtick fence's info string holds
    no backtick, so none is lost)."""
    from rtlforge.behave.rewards import extract_model_source
    from rtlforge.core.extract import extract_verilog

    body = "module m(input a, output y); assign y = a; endmodule\n"
    assert extract_verilog(f"Here:\n```verilog title=m.v\n{body}```\nDone.").strip() == \
        body.strip()
    assert extract_verilog(f"```\n{body}```").strip() == body.strip()
    model = "class A(Model):\n    pass\n"
    assert extract_model_source(f"```python {{.numberLines}}\n{model}```") == model


def test_reward_giant_and_repeated_completions_are_scored_once(gated: SandboxRunner) -> None:
    """Attack: 100 copies of one completion padded to 1 MB of comment text: checked once
    (one simulation, not 100), and the padding is no crash."""
    from rtlforge.behave.rewards import BehaveRTLReward

    right = RIGHT.replace("{extra}", "")
    giant = f"```verilog\n{right}```\n" + ("// " + "x" * 1000 + "\n") * 1000
    reward = BehaveRTLReward(sequences=2, transactions=20, runner=gated)
    calls: list[int] = []
    real = reward._check
    reward._check = lambda prep, source: calls.append(1) or real(prep, source)  # type: ignore[method-assign]
    details = reward.score_detailed([""] * 100, [giant] * 100,
                                    behave_task=[EXAMPLES / "add8"] * 100)
    assert len(calls) == 1
    assert {d.reward for d in details} == {1.0}
