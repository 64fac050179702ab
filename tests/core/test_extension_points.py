"""Open extension points, as a third-party package would use them.

The plugin below is installed the way pip installs one: a module and a ``*.dist-info`` folder
whose ``entry_points.txt`` names it in the ``rtlforge`` group, on ``sys.path``. It adds a plugin
kind of its own (``protocol_adapter``, with its own hookspec and interface ABC) and a validator
whose ``order`` (150) places it between lint (100) and simulation (200), the spacing the
Validator interface documents. Both are used from Python and from the CLI.
"""

from __future__ import annotations

import json
import textwrap
import uuid
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from rtlforge import hookimpl
from rtlforge.cli import cli
from rtlforge.core.errors import PluginError, PluginOptionsError
from rtlforge.core.hookspecs import PluginKind, hookspec
from rtlforge.core.interfaces import Plugin, Reward, Score, Trainer, ValidationContext, Validator
from rtlforge.core.models import Candidate, SourceFile, StageResult, Task, Verdict
from rtlforge.core.plugins import PluginHost
from rtlforge.validate.pipeline import Pipeline

PLUGIN_SOURCE = '''
    """A behaviour package: protocol adapters (a new plugin kind) and a pre-simulation check."""

    from abc import abstractmethod
    from dataclasses import dataclass, field
    from typing import ClassVar

    from rtlforge import hookimpl
    from rtlforge.core.hookspecs import PluginKind, hookspec
    from rtlforge.core.interfaces import Plugin, Validator
    from rtlforge.core.models import Feedback, StageResult, Verdict


    class ProtocolAdapter(Plugin):
        """Speaks one handshake protocol to a design under test."""

        @abstractmethod
        def signals(self) -> list[str]:
            """The port names the protocol needs."""


    class Specs:
        @hookspec
        def register_protocol_adapters(self, register):
            """Register ProtocolAdapter classes."""


    @hookimpl
    def register_hookspecs(register):
        register(Specs)


    @hookimpl
    def register_plugin_kinds(register):
        register(PluginKind("protocol_adapter", ProtocolAdapter, "register_protocol_adapters",
                            "speaks a handshake protocol"))


    @dataclass(frozen=True)
    class ValidReady(ProtocolAdapter):
        name: ClassVar[str] = "valid-ready"

        data_width: int = field(default=8, metadata={"description": "payload bits"})
        prefix: str = ""

        def signals(self):
            return [f"{self.prefix}{s}" for s in ("valid", "ready", "data")]


    @hookimpl
    def register_protocol_adapters(register):
        register(ValidReady)


    @dataclass(frozen=True)
    class BehaviourCheck(Validator):
        """Refuses a design that carries a forbidden marker, before any simulation."""

        name: ClassVar[str] = "behaviour-check"
        stage: ClassVar[str] = "behaviour"
        order: ClassVar[int] = 150

        marker: str = field(default="FORBIDDEN", metadata={"description": "text to refuse"})

        def validate(self, ctx):
            bad = any(self.marker in f.content for f in ctx.candidate.files)
            if bad:
                return StageResult(name=self.name, verdict=Verdict.FAIL, feedback=(
                    Feedback(category="behaviour", message=f"found {self.marker}",
                             stage=self.name),))
            return StageResult(name=self.name, verdict=Verdict.PASS)


    @hookimpl
    def register_validators(register):
        register(BehaviourCheck)
'''

ADDER = (Path(__file__).resolve().parents[1] / "fixtures" / "validators" / "adder.v").read_text()
ADDER_TB = (Path(__file__).resolve().parents[1] / "fixtures" / "validators"
            / "adder_tb.v").read_text()
# Would fail simulation (a + b + 1), but the marker stops it before simulation runs.
MARKED_WRONG = ADDER.replace("a + b", "a + b + 1").replace("endmodule", "// FORBIDDEN\nendmodule")


@pytest.fixture(autouse=True)
def _no_env_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RTLFORGE_PLUGINS_ALLOW", raising=False)
    monkeypatch.delenv("RTLFORGE_PLUGINS_BLOCK", raising=False)


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """Install the plugin as a distribution with an entry point; returns the entry-point name."""
    module = f"rtlforge_behave_{uuid.uuid4().hex[:8]}"
    site = tmp_path / "site"
    site.mkdir()
    (site / f"{module}.py").write_text(textwrap.dedent(PLUGIN_SOURCE))
    dist = site / f"{module}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[rtlforge]\nbehaviour-check = {module}\n")
    monkeypatch.syspath_prepend(str(site))
    return "behaviour-check"


# ------------------------------------------------------------------------------ Python


def test_new_kind_is_listed_and_created(installed: str) -> None:
    host = PluginHost.default()
    assert installed not in host.failures
    assert "protocol_adapter" in {k.name for k in host.kinds()}
    assert host.names("protocol_adapter") == ["valid-ready"]
    adapter = host.create("protocol_adapter", "valid-ready", prefix="s_", data_width="16")
    assert adapter.signals() == ["s_valid", "s_ready", "s_data"]
    assert adapter.data_width == 16  # typed by the options model, not passed on as text
    info = {i.name: i for i in host.describe()}[installed]
    assert info.kinds == ["protocol_adapter"]
    assert info.registers == {"protocol_adapter": ["valid-ready"],
                              "validator": ["behaviour-check"]}
    assert info.distribution is not None and info.distribution.startswith("rtlforge_behave_")
    # kinds are per host: a host without the plugin does not know the kind
    bare = PluginHost(load_entrypoints=False)
    with pytest.raises(PluginError, match="unknown plugin kind 'protocol_adapter'"):
        bare.names("protocol_adapter")


def test_options_are_validated_with_a_typed_error(installed: str) -> None:
    host = PluginHost.default()
    with pytest.raises(PluginOptionsError, match=r"data_width"):
        host.create("protocol_adapter", "valid-ready", data_width="wide")
    with pytest.raises(PluginOptionsError, match=r"unknown option 'width'.*data_width, prefix"):
        host.create("protocol_adapter", "valid-ready", width=3)
    options = {o.name: o for o in host.options("protocol_adapter", "valid-ready")}
    assert (options["data_width"].type, options["data_width"].default) == ("int", 8)
    assert options["data_width"].description == "payload bits"
    assert not options["data_width"].required


def test_validator_order_places_it_between_lint_and_simulation(installed: str) -> None:
    host = PluginHost.default()
    pipeline = Pipeline.build(host, extra=["behaviour-check"], synth=True)
    assert [v.name for v in pipeline.validators] == [
        "iverilog-lint", "behaviour-check", "iverilog-sim", "yosys-synth"]


@pytest.mark.tools
def test_pipeline_runs_the_check_before_iverilog_sim(installed: str) -> None:
    pipeline = Pipeline.build(PluginHost.default(), extra=["behaviour-check"])
    task = Task(id="adder", spec="", top="adder",
                testbench=(SourceFile(name="adder_tb.v", content=ADDER_TB),))
    good = pipeline.validate(task, Candidate(files=(SourceFile(name="adder.v",
                                                               content=ADDER),)))
    assert good.verdict is Verdict.PASS
    assert [s.name for s in good.stages] == ["security", "iverilog-lint", "behaviour-check",
                                             "iverilog-sim"]
    marked = pipeline.validate(task, Candidate(files=(SourceFile(name="adder.v",
                                                                 content=MARKED_WRONG),)))
    assert marked.verdict is Verdict.FAIL
    assert [s.name for s in marked.stages] == ["security", "iverilog-lint", "behaviour-check"]
    assert marked.feedback[0].category == "behaviour"


# ------------------------------------------------------------------------------ CLI


def test_cli_lists_the_kind_and_the_options(installed: str) -> None:
    result = CliRunner().invoke(cli, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    kind = {k["name"]: k for k in data["kinds"]}["protocol_adapter"]
    assert kind["hook"] == "register_protocol_adapters"
    plugin = {p["name"]: p for p in data["plugins"]}[installed]
    assert plugin["error"] is None and plugin["kinds"] == ["protocol_adapter"]
    adapter_options = {o["name"]: o for o in plugin["options"]["protocol_adapter"]["valid-ready"]}
    assert adapter_options["data_width"] == {"name": "data_width", "type": "int",
                                             "required": False, "default": 8,
                                             "description": "payload bits"}
    check_options = plugin["options"]["validator"]["behaviour-check"]
    assert [o["name"] for o in check_options] == ["marker"]

    text = CliRunner().invoke(cli, ["plugins", "--options"])  # the options only when asked
    assert text.exit_code == 0
    assert "protocol_adapter" in text.stdout.splitlines()[0]  # "kinds: ..."
    assert "valid-ready.data_width: int (default 8)  payload bits" in text.stdout
    short = CliRunner().invoke(cli, ["plugins", "--kind", "protocol_adapter"]).stdout
    assert short.splitlines()[0] == "kinds: protocol_adapter" and "data_width" not in short
    assert f"{installed} (" in short and "  protocol_adapter: valid-ready" in short


@pytest.mark.tools
def test_cli_validate_runs_the_extra_check_in_order(installed: str, tmp_path: Path) -> None:
    tb = tmp_path / "adder_tb.v"
    tb.write_text(ADDER_TB)
    for name, text, code, stages in (
        ("adder.v", ADDER, 0, ["security", "iverilog-lint", "behaviour-check", "iverilog-sim"]),
        ("marked.v", MARKED_WRONG, 1, ["security", "iverilog-lint", "behaviour-check"]),
    ):
        design = tmp_path / name
        design.write_text(text)
        result = CliRunner().invoke(cli, ["validate", str(design), "--testbench", str(tb),
                                          "--top", "adder", "--extra", "behaviour-check",
                                          "--json"])
        assert result.exit_code == code, result.output
        assert [s["name"] for s in json.loads(result.stdout)["stages"]] == stages


def test_cli_unknown_extra_is_a_usage_error(installed: str, tmp_path: Path) -> None:
    design = tmp_path / "adder.v"
    design.write_text(ADDER)
    result = CliRunner().invoke(cli, ["validate", str(design), "--extra", "no-such-check"])
    assert result.exit_code == 2
    assert "no validator named 'no-such-check'" in result.output


# ------------------------------------------------------------------------------ isolation


class _Adapter(Plugin):
    pass


class _DeclaresWithoutSpec:
    @hookimpl
    def register_plugin_kinds(self, register: Any) -> None:
        register(PluginKind("ghost", _Adapter, "register_ghosts"))


class _RedeclaresValidator:
    @hookimpl
    def register_plugin_kinds(self, register: Any) -> None:
        register(PluginKind("validator", _Adapter, "register_validators"))


class _GadgetSpecs:
    @hookspec
    def register_gadgets(self, register: Any) -> None:
        """Register gadgets."""


class _Gadget(_Adapter):
    name: ClassVar[str] = "gadget"


class _DeclaresGadgets:
    @hookimpl
    def register_hookspecs(self, register: Any) -> None:
        register(_GadgetSpecs)

    @hookimpl
    def register_plugin_kinds(self, register: Any) -> None:
        register(PluginKind("gadget", _Adapter, "register_gadgets"))


class _UsesGadgets:
    @hookimpl
    def register_gadgets(self, register: Any) -> None:
        register(_Gadget)


class _Echo(Validator):
    name: ClassVar[str] = "echo"

    def validate(self, ctx: ValidationContext) -> StageResult:
        return StageResult(name=self.name, verdict=Verdict.PASS)


class _Good:
    @hookimpl
    def register_validators(self, register: Any) -> None:
        register(_Echo)


def test_broken_kind_declarations_are_isolated() -> None:
    host = PluginHost(load_entrypoints=False, plugins=[
        ("ghost", _DeclaresWithoutSpec()), ("again", _RedeclaresValidator()), ("good", _Good())])
    assert "register_ghosts" in host.failures["ghost"]
    assert "already declared" in host.failures["again"]
    assert set(host.failures) == {"ghost", "again"}
    assert host.names("validator") == ["echo"]
    assert "ghost" not in {k.name for k in host.kinds()}


def test_a_hook_declared_by_another_plugin_works_in_any_load_order() -> None:
    host = PluginHost(load_entrypoints=False,
                      plugins=[("user", _UsesGadgets()), ("declarer", _DeclaresGadgets())])
    assert host.failures == {}
    assert host.get("gadget", "gadget") is _Gadget
    # Added later, an implementation of an undeclared hook is refused at once (check_pending)
    late = PluginHost(load_entrypoints=False)
    assert late.add_plugin(_UsesGadgets(), name="user") is False
    assert "unknown hook 'register_gadgets'" in late.failures["user"]
    assert late.add_plugin(_DeclaresGadgets(), name="declarer") is True
    assert late.names("gadget") == []


# ------------------------------------------------------------------------------ contracts


class _MySim(Validator):
    name: ClassVar[str] = "mysim-lint"
    stage: ClassVar[str] = "lint"
    order: ClassVar[int] = 100
    toolchain: ClassVar[str] = "mysim"

    def validate(self, ctx: ValidationContext) -> StageResult:
        return StageResult(name=self.name, verdict=Verdict.PASS)


class _MySimRun(_MySim):
    name: ClassVar[str] = "mysim-sim"
    stage: ClassVar[str] = "simulate"
    order: ClassVar[int] = 200


class _SimPlugin:
    @hookimpl
    def register_validators(self, register: Any) -> None:
        register(_MySimRun)
        register(_MySim)


def test_pipeline_build_selects_by_stage_and_toolchain() -> None:
    host = PluginHost(load_entrypoints=False, plugins=[("mysim", _SimPlugin())])
    pipeline = Pipeline.build(host, simulator="mysim")
    assert [v.name for v in pipeline.validators] == ["mysim-lint", "mysim-sim"]
    with pytest.raises(ValueError, match=r"simulator must be one of \['mysim'\]"):
        Pipeline.build(host, simulator="icarus")


class _Constant(Reward):
    name: ClassVar[str] = "constant"

    def score(self, prompts: Any, completions: Any, **columns: Any) -> list[float | None]:
        return [0.5 for _ in completions]


class _Minimal(Trainer):
    name: ClassVar[str] = "minimal"

    def __init__(self, config: Any, *, host: Any) -> None:
        self.config, self.host = config, host

    def train(self) -> dict[str, Any]:
        return {}

    def evaluate(self) -> dict[str, Any]:
        return {}

    def save(self, path: Path) -> None:
        pass

    def resume(self, path: Path) -> None:
        pass


def test_declared_defaults_of_the_interfaces() -> None:
    reward = _Constant()
    assert reward.needs_ppa is False
    assert reward.score_detailed(["p"], ["a", "b"]) == [Score(0.5), Score(0.5)]
    host = PluginHost(load_entrypoints=False)
    trainer = _Minimal.from_config({"steps": 1}, host=host, progress=print)
    assert (trainer.config, trainer.host) == ({"steps": 1}, host)
    assert _Minimal.config_class is None
    assert Validator.order == 400 and Validator.toolchain is None


def test_cli_generator_options_are_typed_not_guessed(tmp_path: Path) -> None:
    spec = tmp_path / "and2.txt"
    spec.write_text("module and2(input a, input b, output y);\n")
    base = ["generate", "--generator", "symbolic", "--spec", str(spec), "--json"]
    mistyped = CliRunner().invoke(cli, [*base, "--generator-option", "replicate=maybe"])
    assert mistyped.exit_code == 2
    assert "option 'replicate'" in mistyped.output and "bool" in mistyped.output
    unknown = CliRunner().invoke(cli, [*base, "--generator-option", "replicat=true"])
    assert unknown.exit_code == 2
    assert "unknown option 'replicat' (options: replicate)" in unknown.output
    typed = CliRunner().invoke(cli, [*base, "--generator-option", "replicate=false"])
    assert typed.exit_code == 0, typed.output
