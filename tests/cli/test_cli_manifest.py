"""The plugin manifest (rtlforge.cli.manifest): ``--help`` and ``plugins`` without importing
plugins, and never a stale or broken answer.

Plugins are installed the way pip installs one: a module and a ``*.dist-info`` folder whose
``entry_points.txt`` names it in the ``rtlforge`` group, in a folder on ``sys.path``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from rtlforge.cli import cli
from rtlforge.cli.manifest import cache_file, read
from rtlforge.cli.root import BUILTIN_COMMANDS
from rtlforge.testing import skip_unless_tools

ROOT = Path(__file__).resolve().parents[2]

PLUGIN = '''
    import click
    from rtlforge import hookimpl


    @hookimpl
    def register_commands(cli):
        @cli.command(name="{command}")
        def greet():
            """{help}"""
            click.echo("greetings from {command}")
'''


@pytest.fixture(autouse=True)
def manifests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A manifest folder of this test; the shell's allow/block lists left out."""
    monkeypatch.delenv("RTLFORGE_PLUGINS_ALLOW", raising=False)
    monkeypatch.delenv("RTLFORGE_PLUGINS_BLOCK", raising=False)
    folder = tmp_path / "manifests"
    monkeypatch.setenv("RTLFORGE_PLUGIN_CACHE", str(folder))
    return folder


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on ``sys.path`` to install plugins into; their modules are forgotten after."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    before = set(sys.modules)
    yield folder
    for name in set(sys.modules) - before:
        if name.startswith("rtlforge_greeter_"):
            del sys.modules[name]


def _install(site: Path, command: str, help_text: str = "Say hello.",
             module_dir: Path | None = None) -> str:
    """Install a plugin adding ``command``; its module goes to ``module_dir`` (a checkout on
    the path, as an editable install has it) or beside its dist-info. Returns the module."""
    module = f"rtlforge_greeter_{uuid.uuid4().hex[:8]}"
    (module_dir or site).joinpath(f"{module}.py").write_text(
        textwrap.dedent(PLUGIN.format(command=command, help=help_text)))
    dist = site / f"{module}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[rtlforge]\n{command} = {module}\n")
    import importlib

    importlib.invalidate_caches()
    return module


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def _manifest_file() -> Path:
    path = cache_file()
    assert path is not None
    return Path(path)


def test_help_lists_an_installed_plugins_command_from_the_manifest(site: Path) -> None:
    _install(site, "greet-me", "Say hello to whoever asks.")
    code, built = _invoke("--help")
    assert code == 0, built
    assert "greet-me  Say hello to whoever asks." in built
    assert read(str(_manifest_file())) is not None  # kept for the next run
    kept = _manifest_file().stat().st_mtime_ns
    code, again = _invoke("--help")
    assert (code, again) == (0, built)
    assert _manifest_file().stat().st_mtime_ns == kept  # read, not made again
    code, out = _invoke("greet-me")
    assert (code, out) == (0, "greetings from greet-me\n")


def test_the_manifest_answers_as_importing_every_plugin_does(
        manifests: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--help, plugins and plugins --json, from the manifest, are what they are without one."""
    commands = (["--help"], ["plugins"], ["plugins", "--json"])
    monkeypatch.setenv("RTLFORGE_PLUGIN_CACHE", "off")
    without = [_invoke(*args) for args in commands]
    assert cache_file() is None
    monkeypatch.setenv("RTLFORGE_PLUGIN_CACHE", str(manifests))
    building = [_invoke(*args) for args in commands]
    kept = _manifest_file().stat().st_mtime_ns
    served = [_invoke(*args) for args in commands]
    assert _manifest_file().stat().st_mtime_ns == kept
    assert without == building == served
    assert all(code == 0 for code, _ in served)
    assert json.loads(served[2][1])["plugins"]  # the real listing, not an empty one


def test_the_manifest_records_each_validators_stage_and_toolchain_as_its_class_does(
        manifests: Path) -> None:
    """A pipeline chooses its validators from what the manifest recorded, without importing
    them: the record must be what the installed classes say (the oracle: an eager host)."""
    from rtlforge.cli.manifest import Installed
    from rtlforge.core.plugins import PluginHost

    assert _invoke("--help")[0] == 0  # makes the manifest
    served = Installed(BUILTIN_COMMANDS)
    assert served.manifest() is not None
    lazy = served.host()
    recorded = lazy.declared("validator")
    assert {"iverilog-lint", "iverilog-sim", "yosys-synth"} <= set(recorded)
    assert recorded == PluginHost().declared("validator")
    assert all(p.registers is not None for p in served.manifest().known())


def test_installing_or_removing_a_plugin_rebuilds_the_manifest(site: Path) -> None:
    code, out = _invoke("--help")
    assert code == 0 and "greet-new" not in out and _manifest_file().is_file()
    module = _install(site, "greet-new")  # same sys.path, so the same manifest file
    code, out = _invoke("--help")
    assert code == 0 and "greet-new" in out
    for dist in site.glob(f"{module}-*.dist-info"):  # uninstall
        for f in dist.iterdir():
            f.unlink()
        dist.rmdir()
    code, out = _invoke("--help")
    assert code == 0 and "greet-new" not in out
    code, out = _invoke("greet-new")
    assert code == 2 and "No such command 'greet-new'" in out


def test_editing_a_plugin_outside_site_packages_rebuilds_the_manifest(
        site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An editable install: the dist-info in site, the module in a checkout on the path."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    monkeypatch.syspath_prepend(str(checkout))
    module = _install(site, "greet-edit", "First words.", module_dir=checkout)
    assert "First words." in _invoke("--help")[1]
    source = checkout / f"{module}.py"
    source.write_text(source.read_text().replace("First words.", "Second thoughts."))
    stat = source.stat()
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    del sys.modules[module]  # as a new process would, it reads the file again
    code, out = _invoke("--help")
    assert code == 0 and "Second thoughts." in out and "First words." not in out


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong shape", "foreign plugin",
                                    "not a list"])
def test_a_corrupt_manifest_falls_back_to_importing(site: Path, damage: str) -> None:
    _install(site, "greet-ok")
    code, reference = _invoke("--help")
    assert code == 0 and "greet-ok" in reference
    path = _manifest_file()
    text = path.read_text()
    data = json.loads(text)
    if damage == "garbage":
        path.write_bytes(b"\x00\xffnot json at all")
    elif damage == "truncated":
        path.write_text(text[: len(text) // 2])
    elif damage == "wrong shape":
        path.write_text(json.dumps({**data, "plugins": 5}))
    elif damage == "foreign plugin":  # a command of a plugin the manifest does not list
        data["commands"]["greet-ok"]["plugin"] = "nobody"
        path.write_text(json.dumps(data))
    else:
        data["plugins"][0]["hooks"] = "register_commands"
        path.write_text(json.dumps(data))
    assert read(str(path)) is None
    code, out = _invoke("--help")
    assert (code, out) == (0, reference)
    assert read(str(path)) is not None  # made again
    code, out = _invoke("greet-ok")
    assert (code, out) == (0, "greetings from greet-ok\n")


def test_nothing_is_kept_while_a_plugin_fails_to_load(site: Path) -> None:
    dist = site / "rtlforge_broken_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rtlforge-broken\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[rtlforge]\nbroken = rtlforge_no_such_module_4714\n")
    code, out = _invoke("--help")
    assert code == 0 and "validate" in out
    assert not _manifest_file().exists()
    result = CliRunner().invoke(cli, ["plugins"])
    assert result.exit_code == 3
    assert "plugin 'broken' failed to load" in result.stderr


def test_a_host_with_a_plugin_added_in_process_makes_no_manifest() -> None:
    """A manifest describes the installed entry points only (a test's host never becomes the
    installed plugins' description)."""
    from importlib import metadata

    from rtlforge.cli.manifest import describe
    from rtlforge.core.plugins import ENTRY_POINT_GROUP, PluginHost

    class Local:
        """No hooks at all."""

    eps = list(metadata.entry_points(group=ENTRY_POINT_GROUP))
    assert describe(PluginHost(), eps, BUILTIN_COMMANDS) is not None
    assert describe(PluginHost(plugins=[("local", Local())]), eps, BUILTIN_COMMANDS) is None


def test_the_builtin_commands_are_named_as_they_are_listed() -> None:
    from rtlforge.cli.manifest import load_command

    for name, target in BUILTIN_COMMANDS.items():
        assert load_command(target).name == name


# ------------------------------------------------------------------------------ import cost

PROBE = """
import json, os, sys
from rtlforge.cli import main
sys.argv = ["rtlforge", *{args!r}]


def record(code):
    with open({out!r}, "w") as f:
        json.dump({{"code": code, "modules": sorted(sys.modules)}}, f)


def ending(status, end=os._exit):  # a finished validate ends here (cmdline.Finished)
    record(status)
    end(status)


os._exit = ending
try:
    main()
except SystemExit as exc:
    record(exc.code)
"""

HEAVY = {"numpy", "pyslang", "structlog", "torch", "transformers", "moocore", "rich", "yaml"}


def _run(tmp_path: Path, *args: str) -> tuple[int, set[str]]:
    """Exit code and imported modules of ``rtlforge ARGS`` in a fresh interpreter."""
    out = tmp_path / "probe.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", PROBE.format(args=list(args), out=str(out))],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
                         check=False)
    assert out.is_file(), run.stderr
    data = json.loads(out.read_text())
    return data["code"], set(data["modules"])


def _tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_help_and_plugins_import_no_plugin_and_no_heavy_library(tmp_path: Path) -> None:
    code, first = _run(tmp_path, "--help")  # no manifest yet: every plugin is imported once
    assert code == 0 and "rtlforge.plugins.validators.iverilog" in first
    for args in (["--help"], ["plugins"], ["plugins", "--json"]):
        code, modules = _run(tmp_path, *args)
        assert code == 0, args
        assert _tops(modules) & {*HEAVY, "pydantic"} == set(), args
        assert not any(m.startswith(("rtlforge.plugins", "rtlforge.agents", "rtlforge.behave",
                                     "rtlforge.core.plugins", "rtlforge.cli.validate"))
                       for m in modules), args


VALIDATOR_PLUGINS = "rtlforge.plugins.validators."


def test_validate_imports_only_the_validators_it_runs(tmp_path: Path) -> None:
    task = ROOT / "examples" / "tasks" / "mux4"
    _run(tmp_path, "--help")  # make the manifest
    code, modules = _run(tmp_path, "validate", "--task", str(task), str(task / "golden.v"),
                         "--simulator", "nosuch")
    assert code == 2  # stops at the usage error, after the validators were looked at
    assert not any(m.startswith(VALIDATOR_PLUGINS) for m in modules)  # the manifest's records
    assert _tops(modules) & HEAVY == set()
    assert not any(m.startswith(("rtlforge.agents", "rtlforge.behave", "rtlforge.trainers",
                                 "rtlforge.plugins.generators", "rtlforge.rewards",
                                 "rtlforge.explore")) for m in modules)
    skip_unless_tools("iverilog", "vvp", "bwrap")
    code, modules = _run(tmp_path, "validate", "--task", str(task), str(task / "golden.v"))
    assert code == 0
    assert {m for m in modules if m.startswith(VALIDATOR_PLUGINS)} == {
        VALIDATOR_PLUGINS + "iverilog"}


GATE_ORDER_PROBE = """
import json, sys

def hook(event, args):
    if event == "subprocess.Popen" and any("_gate_worker" in str(a) for a in args[1]):
        with open({out!r}, "a") as f:
            f.write(json.dumps({{"pydantic": "pydantic" in sys.modules}}) + "\\n")

sys.addaudithook(hook)
from rtlforge.cli import main
sys.argv = ["rtlforge", *{args!r}]
main()
"""


def test_validate_starts_its_gate_worker_before_importing_pydantic(tmp_path: Path) -> None:
    """The first check of a one-shot validation would wait for the gate's worker (Python and
    pyslang in a jail); started before pydantic and the pipeline load, it is ready first."""
    skip_unless_tools("iverilog", "vvp", "bwrap")
    task = ROOT / "examples" / "tasks" / "mux4"
    out = tmp_path / "popens.jsonl"
    run = subprocess.run(
        [sys.executable, "-c", GATE_ORDER_PROBE.format(
            args=["validate", "--task", str(task), str(task / "golden.v")], out=str(out))],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
        text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    starts = [json.loads(line) for line in out.read_text().splitlines()]
    assert starts == [{"pydantic": False}]  # one worker, started before pydantic
