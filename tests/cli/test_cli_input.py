"""Bad input on the command line: a clear exit-2 message before any work starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rtlforge.cli import cli
from rtlforge.cmdline import EXIT_INFRA
from rtlforge.core.plugins import PluginHost

AND2 = "module and2(input a, input b, output y);\n  assign y = a & b;\nendmodule\n"
TB = """module tb;
  reg a, b; wire y;
  and2 dut(.a(a), .b(b), .y(y));
  initial begin a = 0; b = 0; #1 $display("Mismatches: 0 in 1 samples"); $finish; end
endmodule
"""


def _invoke(*args: str, host: PluginHost | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), obj=host)
    return result.exit_code, result.stdout, result.stderr


def _suite(tmp_path: Path) -> Path:
    """One task (and2) in a task.toml suite; a golden is left out so nothing is simulated."""
    task = tmp_path / "tasks" / "and2"
    task.mkdir(parents=True, exist_ok=True)
    (task / "task.toml").write_text('id = "and2"\ntop = "and2"\nspec = "An AND gate."\n'
                                    'testbench = ["tb.v"]\n')
    (task / "tb.v").write_text(TB)
    return task.parent


def _samples(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps({"task_id": "and2", "completion": AND2}) + "\n"
                            for _ in range(n)))
    return path


@pytest.mark.parametrize("ks", ["0", "abc", "1,-2", ",", "1.5"])
def test_eval_k_that_is_not_positive_integers_is_a_usage_error(tmp_path: Path, ks: str,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    import rtlforge.evaluation.evaluate as evaluate

    def no_work(*_a: object, **_k: object) -> None:
        raise AssertionError("validation ran before -k was checked")

    monkeypatch.setattr(evaluate, "evaluate_detailed", no_work)
    code, _, err = _invoke("eval", str(_samples(tmp_path, 2)), "--tasks", str(_suite(tmp_path)),
                           "-k", ks)
    assert code == 2
    assert "-k:" in err and "positive integer" in err
    assert "invalid literal" not in err and "Traceback" not in err


def test_eval_explicit_k_above_every_tasks_samples_is_refused_before_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rtlforge.evaluation.evaluate as evaluate

    monkeypatch.setattr(evaluate, "evaluate_detailed", lambda *a, **k: pytest.fail("ran"))
    code, _, err = _invoke("eval", str(_samples(tmp_path, 3)), "--tasks", str(_suite(tmp_path)),
                           "-k", "1,4")
    assert code == 2
    assert "-k 4" in err and "no task has more than 3" in err


def test_eval_on_an_empty_samples_file_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    code, out, err = _invoke("eval", str(empty), "--tasks", str(_suite(tmp_path)))
    assert code == 2
    assert f"no samples in {empty}" in err
    assert "verdicts" not in out


def test_metrics_on_an_empty_records_file_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "records.jsonl"
    empty.write_text("")
    code, out, err = _invoke("metrics", str(empty))
    assert code == 2
    assert f"no records in {empty}" in err
    assert out == ""


@pytest.mark.parametrize("marks", ["abc", "0", "1,x"])
def test_explore_checkpoints_that_are_not_positive_integers_is_a_usage_error(
        tmp_path: Path, marks: str) -> None:
    code, _, err = _invoke("explore", "--tasks", str(_suite(tmp_path)), "--generator", "replay",
                           "--generator-option", f"path={_samples(tmp_path, 1)}",
                           "--checkpoints", marks, "--dry-run", "--run-dir",
                           str(tmp_path / "run"))
    assert code == 2
    assert "--checkpoints:" in err and "positive integer" in err
    assert "invalid literal" not in err


def test_ppa_top_that_no_file_declares_is_a_usage_error(tmp_path: Path) -> None:
    design = tmp_path / "and2.v"
    design.write_text(AND2)
    code, _, err = _invoke("ppa", str(design), "--top", "wrong")
    assert code == 2
    assert "--top 'wrong': no such module in and2.v (declared: and2)" in err
    assert "Yosys" not in err


@pytest.mark.tools
def test_ppa_infers_the_top_as_validate_does(tmp_path: Path) -> None:
    design = tmp_path / "and2.v"
    design.write_text(AND2)
    code, out, err = _invoke("ppa", str(design), "--json")
    assert code == 0, err
    assert json.loads(out)["area_um2"] > 0


def test_ppa_on_an_empty_file_says_no_module(tmp_path: Path) -> None:
    design = tmp_path / "empty.v"
    design.write_text("")
    code, _, err = _invoke("ppa", str(design), "--top", "m")
    assert code == 2
    assert "no module declaration found in empty.v" in err


def test_ppa_and_validate_on_binary_input_name_the_file(tmp_path: Path) -> None:
    design = tmp_path / "blob.v"
    design.write_bytes(b"\xff\xfe\x00module")
    for command in (["ppa", str(design), "--top", "m"], ["validate", str(design)]):
        code, _, err = _invoke(*command)
        assert code == 2
        assert f"{design} is not a UTF-8 text file" in err
        assert "codec" not in err


@pytest.mark.tools
def test_ppa_syntax_error_is_the_yosys_error_line_with_its_location(tmp_path: Path) -> None:
    design = tmp_path / "s.v"
    design.write_text("module m(input a, output y) assign y = a;\nendmodule\n")
    code, _, err = _invoke("ppa", str(design), "--top", "m")
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1, err  # one paragraph: no banner, no log tail
    assert "s.v:1: ERROR: syntax error" in lines[0]
    assert "Executing" not in lines[0]


@pytest.mark.tools
def test_ppa_no_clock_message_names_the_cli_option(tmp_path: Path) -> None:
    design = tmp_path / "c.v"
    design.write_text("module c(input tick, input d, output reg q);\n"
                      "  always @(posedge tick) q <= d;\nendmodule\n")
    code, _, err = _invoke("ppa", str(design), "--top", "c")
    assert code == 1
    assert "--clock NAME" in err and "clock=NAME" not in err


def _misspelt_hook_plugin() -> object:
    """A plugin whose hook name has a typo (``register_validator``, no s)."""
    from rtlforge import hookimpl

    class Plugin:
        @hookimpl
        def register_validator(self, register: object) -> None:
            raise AssertionError("never called: the hook does not exist")

    return Plugin()


def test_plugins_exits_3_listing_a_plugin_that_failed_and_suggests_the_hook(
        monkeypatch: pytest.MonkeyPatch) -> None:
    host = PluginHost(load_entrypoints=False, allow=None, block=(),
                      plugins=[("typo", _misspelt_hook_plugin())])
    code, out, err = _invoke("plugins", host=host)
    assert code == EXIT_INFRA
    assert "plugin 'typo' failed to load" in err
    assert "unknown hook 'register_validator'" in err
    assert "did you mean 'register_validators'?" in err
    code, out, _ = _invoke("plugins", "--json", host=host)
    assert code == EXIT_INFRA
    typo = next(p for p in json.loads(out)["plugins"] if p["name"] == "typo")
    assert "did you mean 'register_validators'?" in typo["error"]


@pytest.mark.tools
def test_security_refusal_shows_its_location_once(tmp_path: Path) -> None:
    design = tmp_path / "sec.v"
    design.write_text('module m(input a, output y);\n  initial $system("ls");\n'
                      "  assign y = a;\nendmodule\n")
    code, out, _ = _invoke("validate", str(design))
    assert code == 1
    line = next(li for li in out.splitlines() if li.startswith("- [security]"))
    assert line.count("sec.v:2") == 1, line
    code, out, _ = _invoke("validate", str(design), "--json")
    fb = json.loads(out)["feedback"][0]
    assert (fb["file"], fb["line"]) == ("sec.v", 2)
    assert fb["message"] == "system task/function $system is not on the allow-list"


def _two_task_suite(tmp_path: Path) -> Path:
    root = _suite(tmp_path)
    other = root / "or2"
    other.mkdir()
    (other / "task.toml").write_text('id = "or2"\ntop = "or2"\nspec = "An OR gate."\n')
    return root


def test_explore_dry_run_shows_each_methods_prompt(tmp_path: Path) -> None:
    code, out, _ = _invoke("explore", "--tasks", str(_two_task_suite(tmp_path)),
                           "--method", "plain=replay:spec", "--method", "front=replay:pareto",
                           "--generator-option", f"path={_samples(tmp_path, 1)}",
                           "--dry-run", "--json", "--run-dir", str(tmp_path / "run"))
    assert code == 0, out
    ids = [p["request_id"] for p in json.loads(out)["prompts"]]
    assert [i.split("/")[1] for i in ids] == ["plain", "front"], ids


def test_eval_ppa_with_a_file_that_is_no_liberty_stops_before_any_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rtlforge.evaluation.evaluate as evaluate

    monkeypatch.setattr(evaluate, "evaluate_detailed", lambda *a, **k: pytest.fail("ran"))
    not_lib = tmp_path / "cells.lib"
    not_lib.write_text(AND2)
    code, _, err = _invoke("eval", str(_samples(tmp_path, 1)), "--tasks", str(_suite(tmp_path)),
                           "--ppa", "--liberty", str(not_lib))
    assert code == 2
    assert "cells.lib: no 'library (...)' group" in err


def test_explore_with_a_file_that_is_no_liberty_is_a_usage_error(tmp_path: Path) -> None:
    not_lib = tmp_path / "cells.lib"
    not_lib.write_text(AND2)
    code, _, err = _invoke("explore", "--tasks", str(_suite(tmp_path)), "--generator", "replay",
                           "--generator-option", f"path={_samples(tmp_path, 1)}",
                           "--liberty", str(not_lib), "--no-ast",
                           "--run-dir", str(tmp_path / "run"))
    assert code == 2, err
    assert "cells.lib: no 'library (...)' group" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("command", ["explore", "generate"])
def test_replay_without_a_path_names_the_missing_option(tmp_path: Path, command: str) -> None:
    where = (["--tasks", str(_suite(tmp_path)), "--dry-run", "--run-dir", str(tmp_path / "r")]
             if command == "explore" else ["--task", str(_suite(tmp_path) / "and2")])
    code, _, err = _invoke(command, "--generator", "replay", *where)
    assert code == 2
    assert "option 'path' is required" in err and "--generator-option" in err
    assert "__init__()" not in err


def test_estimator_settings_without_an_estimator_are_usage_errors(tmp_path: Path) -> None:
    lib = tmp_path / "cells.lib"
    lib.write_text("library (x) { }\n")
    code, _, err = _invoke("eval", str(_samples(tmp_path, 1)), "--tasks", str(_suite(tmp_path)),
                           "--liberty", str(lib))
    assert code == 2 and "--liberty sets up the PPA estimator: add --ppa" in err
    code, _, err = _invoke("eval", str(_samples(tmp_path, 1)), "--tasks", str(_suite(tmp_path)),
                           "--estimator-option", "activity=0.2")
    assert code == 2 and "--estimator-option sets up the PPA estimator: add --ppa" in err
    code, _, err = _invoke("explore", "--tasks", str(_suite(tmp_path)), "--generator", "replay",
                           "--generator-option", f"path={_samples(tmp_path, 1)}",
                           "--ppa-estimator", "none", "--liberty", str(lib),
                           "--run-dir", str(tmp_path / "run"))
    assert code == 2 and "--ppa-estimator is none" in err


def test_generate_with_a_binary_spec_names_the_file(tmp_path: Path) -> None:
    spec = tmp_path / "spec.txt"
    spec.write_bytes(b"\xff\xfe a spec")
    code, _, err = _invoke("generate", "--generator", "replay", "--generator-option",
                           f"path={_samples(tmp_path, 1)}", "--spec", str(spec))
    assert code == 2
    assert f"{spec} is not a UTF-8 text file" in err and "codec" not in err
