"""RTLLM v2 designs as BEHAVE tasks (issue 13, section 5): the loader that joins our behaviour
models (examples/behave/rtllm/) with RTLLM's files, and every RTLLM reference passing its task."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rtlforge.behave.rtllm import ENV_ROOT, reference_candidate, rtllm_task
from rtlforge.behave.sim.check import check_rtl
from rtlforge.behave.sim.task import BehaveTaskError, load_behave_task

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "examples" / "behave" / "rtllm"
#: RTLLM's data in a `shared` folder beside the checkout or above it (a worktree), as the
#: loader searches (rtlforge.behave.rtllm)
RTLLM = next((p / "shared" / "benchmarks" / "rtllm" for p in REPO.parents
              if (p / "shared" / "benchmarks" / "rtllm").is_dir()),
             REPO.parent / "shared" / "benchmarks" / "rtllm")

DESCRIPTION = "Please act as a professional verilog designer.\nAn 8-bit adder.\n"
REFERENCE = ("module verified_adder_8bit(input [7:0] a, b, input cin, output [7:0] sum, "
             "output cout);\n  assign {cout, sum} = a + b + cin;\nendmodule\n")
TESTBENCH = "module tb; adder_8bit dut(); endmodule\n"


def _fake_rtllm(root: Path) -> Path:
    """A minimal RTLLM-shaped tree: <group>/<category>/<design> with the three files."""
    design = root / "Arithmetic" / "Adder" / "adder_8bit"
    design.mkdir(parents=True)
    (design / "design_description.txt").write_text(DESCRIPTION)
    (design / "verified_adder_8bit.v").write_text(REFERENCE)
    (design / "testbench.v").write_text(TESTBENCH)
    (root / "_chatgpt4" / "t1" / "adder_8bit").mkdir(parents=True)  # model outputs: skipped
    return design


def _task_copy(tmp_path: Path) -> Path:
    task = tmp_path / "tasks" / "adder_8bit"
    shutil.copytree(TASKS / "adder_8bit", task)
    return task


def test_an_explicit_root_joins_the_description_and_the_renamed_reference(tmp_path):
    design = _fake_rtllm(tmp_path / "rtllm-copy")
    task = load_behave_task(_task_copy(tmp_path), rtllm_root=tmp_path / "rtllm-copy")
    assert task.spec == DESCRIPTION
    assert task.rtllm_dir == design.resolve()
    candidate = reference_candidate(task)
    assert candidate.top == "adder_8bit"
    assert "module adder_8bit" in candidate.files[0].content
    assert "verified_adder_8bit" not in candidate.files[0].content
    assert rtllm_task(task).testbench[0].content == TESTBENCH


def test_the_environment_variable_names_the_root(tmp_path, monkeypatch):
    _fake_rtllm(tmp_path / "elsewhere")
    monkeypatch.setenv(ENV_ROOT, str(tmp_path / "elsewhere"))
    assert load_behave_task(_task_copy(tmp_path)).spec == DESCRIPTION


def test_files_copied_beside_behave_toml_are_found(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_ROOT, raising=False)
    task_dir = _task_copy(tmp_path)
    design = _fake_rtllm(tmp_path / "src")
    for f in design.iterdir():
        shutil.copy(f, task_dir / f.name)
    assert load_behave_task(task_dir).rtllm_dir == task_dir.resolve()


def test_an_rtllm_folder_above_the_task_is_found(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_ROOT, raising=False)
    _fake_rtllm(tmp_path / "rtllm")
    assert load_behave_task(_task_copy(tmp_path)).spec == DESCRIPTION


def test_a_missing_design_is_a_task_error_naming_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_ROOT, raising=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(BehaveTaskError) as err:
        load_behave_task(_task_copy(tmp_path), rtllm_root=tmp_path / "empty")
    assert err.value.field == "rtllm"
    assert "adder_8bit" in str(err.value) and "empty" in str(err.value)


def test_a_wrong_top_or_a_path_as_design_name_is_refused(tmp_path):
    _fake_rtllm(tmp_path / "r")
    task_dir = _task_copy(tmp_path)
    toml = task_dir / "behave.toml"
    toml.write_text(toml.read_text().replace('top = "adder_8bit"', 'top = "adder"'))
    task = load_behave_task(task_dir, rtllm_root=tmp_path / "r")
    with pytest.raises(BehaveTaskError, match="instantiates"):
        reference_candidate(task)
    toml.write_text(toml.read_text().replace('rtllm = "adder_8bit"', 'rtllm = "../../etc"'))
    with pytest.raises(BehaveTaskError) as err:
        load_behave_task(task_dir, rtllm_root=tmp_path / "r")
    assert err.value.field == "rtllm"


def _rtllm_task_dirs() -> list[Path]:
    return sorted(p for p in TASKS.iterdir() if (p / "behave.toml").is_file())


@pytest.mark.tools
@pytest.mark.shared
@pytest.mark.skipif(not RTLLM.is_dir(), reason=f"RTLLM data not found at {RTLLM}")
@pytest.mark.parametrize("task_dir", _rtllm_task_dirs(), ids=lambda p: p.name)
def test_the_rtllm_reference_passes_its_behaviour_task(task_dir, monkeypatch):
    monkeypatch.delenv(ENV_ROOT, raising=False)
    task = load_behave_task(task_dir, rtllm_root=RTLLM)
    result = check_rtl(task, reference_candidate(task))  # the baseline stimulus, seed 0
    assert result.verdict == "pass", (result.message, result.first_failure)


#: RTLLM v2 designs whose reference passes its own testbench (benchmarks/mutation_study.py:
#: asyn_fifo, clkgenerator, radix2_div and ring_counter do not): all 46 have a task.
#: `synchronizer` uses a second clock, a second reset, input constraints and a delay window
#: (docs/behave-constraints.md; its own tests: test_rtllm_synchronizer.py).
MODELLED = frozenset([
    "JC_counter", "LFSR", "LIFObuffer", "RAM", "ROM", "accu", "adder_16bit", "adder_32bit",
    "adder_8bit", "adder_bcd", "adder_pipe_64bit", "alu", "barrel_shifter", "calendar",
    "comparator_3bit", "comparator_4bit", "counter_12", "div_16bit", "edge_detect",
    "fixed_point_adder", "fixed_point_substractor", "float_multi", "freq_div", "freq_divbyeven",
    "freq_divbyfrac", "freq_divbyodd", "fsm", "instr_reg", "multi_16bit", "multi_8bit",
    "multi_booth_8bit", "multi_pipe_4bit", "multi_pipe_8bit", "parallel2serial", "pe",
    "pulse_detect", "right_shifter", "sequence_detector", "serial2parallel", "signal_generator",
    "square_wave", "sub_64bit", "synchronizer", "traffic_light", "up_down_counter",
    "width_8to16",
])


def test_every_rtllm_design_has_a_behaviour_task():
    assert len(MODELLED) == 46
    assert {p.name for p in _rtllm_task_dirs()} == MODELLED
