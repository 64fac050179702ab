"""``rtlforge acquire``: one round from the command line with scripted roles, a contaminated
source in the library that is excluded (and recorded), and usage errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from acquire_helpers import EXAMPLE, SOURCES, acquisition_host
from click.testing import CliRunner

from rtlforge.cli import cli
from rtlforge.core.plugins import PluginHost

REPO = Path(__file__).resolve().parents[3]
VERILOGEVAL = REPO / "tests" / "tasks" / "fixtures" / "verilogeval"


@pytest.fixture(autouse=True)
def _roles_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's host gets the acquisition roles even where the installed entry points
    predate them (a checkout on PYTHONPATH)."""
    monkeypatch.setattr(PluginHost, "default", classmethod(lambda cls: acquisition_host()))
    monkeypatch.setenv("RTLFORGE_PLUGIN_CACHE", "off")  # no manifest: that host is the CLI's


def _library_with_contamination(tmp_path: Path) -> Path:
    library = tmp_path / "sources"
    shutil.copytree(SOURCES, library)
    # a source whose description is VerilogEval's count4 prompt, reworded nowhere
    prompt = (VERILOGEVAL / "dataset_spec-to-rtl" / "Prob002_count4_prompt.txt").read_text()
    copied = library / "counter4"
    copied.mkdir()
    (copied / "reference.py").write_text("def step(q, reset):\n    return 0 if reset else "
                                         "(q + 1) % 16\n")
    (copied / "meta.toml").write_text(
        'id = "counter4"\ntitle = "4-bit counter"\nlanguage = "python"\n'
        'file = "reference.py"\nprovenance = "written for rtlforge"\nlicence = "Apache-2.0"\n'
        f"description = {json.dumps(' '.join(prompt.split()))}\n")
    return library


def test_one_round_from_the_command_line(tmp_path: Path) -> None:
    library = _library_with_contamination(tmp_path)
    pool, report = tmp_path / "pool", tmp_path / "report"
    args = ["acquire", str(EXAMPLE / "rollouts.jsonl"), "--sources", str(library),
            "--pool", str(pool), "--generator", "scripted",
            "--generator-option", f"path={EXAMPLE / 'script.toml'}",
            "--evaluation", str(VERILOGEVAL), "--report", str(report)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "1 admitted, 1 rejected, 1 sources excluded, 0 unresolved" in result.output
    assert "evaluation_fingerprint" in result.output
    assert (pool / "tasks" / "acq001_01_popcount" / "golden.py").is_file()
    html = (report / "report.html").read_text()
    assert "Prob002_count4_prompt.txt" in html and "max_rounds" in html
    rows = [json.loads(line) for line in (report / "records.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["reason"]) for r in rows] == [
        ("exclusion", "evaluation_fingerprint"), ("admission", "accepted"),
        ("rejection", "max_rounds")]
    assert (pool / "rounds" / "round-001" / "report.html").is_file()


def test_json_output_and_a_second_round_numbered_two(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"analyst": {"acquire-analyst": [
        '```json\n{"gaps": [], "picks": [], "experience": "nothing to add"}\n```'] * 2}}))
    base = ["acquire", str(EXAMPLE / "rollouts.jsonl"), "--sources", str(SOURCES),
            "--pool", str(tmp_path / "pool"), "--generator", "scripted",
            "--generator-option", f"path={script}", "--json"]
    first = CliRunner().invoke(cli, base)
    second = CliRunner().invoke(cli, base)
    assert first.exit_code == 0 and second.exit_code == 0, second.output
    out = json.loads(second.output)
    assert out["round"] == 2 and out["records"] == []


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    bad_log = tmp_path / "rollouts.jsonl"
    bad_log.write_text('{"task_id": "a", "reward": 1.0}\n{"reward": 0.5}\n')
    args = ["acquire", str(bad_log), "--sources", str(SOURCES), "--pool",
            str(tmp_path / "pool"), "--generator", "scripted"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and "line 2" in result.output
    result = CliRunner().invoke(cli, ["acquire", str(EXAMPLE / "rollouts.jsonl"),
                                      "--sources", str(SOURCES), "--pool",
                                      str(tmp_path / "pool"), "--generator", "scripted",
                                      "--generator-option", "script={}",
                                      "--role", "analyst=fast"])
    assert result.exit_code == 2 and "does not play the acquisition stage" in result.output
    result = CliRunner().invoke(cli, ["acquire", str(EXAMPLE / "rollouts.jsonl"),
                                      "--sources", str(SOURCES), "--pool", str(tmp_path),
                                      "--generator", "scripted", "--role", "judge=x"])
    assert result.exit_code == 2 and "STAGE=NAME" in result.output


def test_a_failing_generator_exits_3_and_still_records(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"analyst": {"acquire-analyst": [
        '```json\n{"picks": [{"source": "popcount", "objective": "o"}]}\n```']}}))
    result = CliRunner().invoke(cli, [
        "acquire", str(EXAMPLE / "rollouts.jsonl"), "--sources", str(SOURCES), "--pool",
        str(tmp_path / "pool"), "--generator", "scripted", "--generator-option",
        f"path={script}"])
    assert result.exit_code == 3, result.output
    assert "unresolved" in result.output
    assert (tmp_path / "pool" / "rounds" / "round-001" / "records.jsonl").is_file()


def test_the_behave_plugin_adds_the_command() -> None:
    import click

    from rtlforge.behave import plugin

    host = PluginHost(load_entrypoints=False, plugins=[("behave", plugin)])
    group = click.Group("rtlforge")
    for impl in host.pm.hook.register_commands.get_hookimpls():
        impl.function(cli=group)
    assert "acquire" in group.commands
