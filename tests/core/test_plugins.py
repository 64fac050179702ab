"""PluginHost: registration, isolation of broken plugins, allow/block lists, entry points.

The example contrib plugin carries its own tests: plugins-contrib/rtlforge-portcheck/tests.
"""

from __future__ import annotations

import importlib
import importlib.util
import textwrap
import uuid
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rtlforge import hookimpl
from rtlforge.core import plugins as plugins_module
from rtlforge.core.errors import PluginError
from rtlforge.core.interfaces import (
    Archive,
    Generator,
    PPAEstimator,
    PPAResult,
    Reward,
    Trainer,
    ValidationContext,
    Validator,
)
from rtlforge.core.models import StageResult, Verdict
from rtlforge.core.plugins import PluginHost

BUILTINS = {
    "iverilog": "rtlforge.plugins.validators.iverilog",
    "verilator": "rtlforge.plugins.validators.verilator",
    "yosys": "rtlforge.plugins.validators.yosys",
    "cocotb": "rtlforge.plugins.validators.cocotb",
}


@pytest.fixture(autouse=True)
def _no_env_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's shell must not change what these tests see."""
    monkeypatch.delenv("RTLFORGE_PLUGINS_ALLOW", raising=False)
    monkeypatch.delenv("RTLFORGE_PLUGINS_BLOCK", raising=False)


# ------------------------------------------------------------------------------------------
# Minimal implementations of every interface
# ------------------------------------------------------------------------------------------


class EchoValidator(Validator):
    name = "echo"
    stage = "lint"

    def validate(self, ctx: ValidationContext) -> StageResult:
        return StageResult(name=self.name, verdict=Verdict.PASS)


class EchoGenerator(Generator):
    name = "echo-gen"

    def generate(self, requests, params):  # type: ignore[override]
        return [[] for _ in requests]


class EchoPPA(PPAEstimator):
    name = "echo-ppa"

    def estimate(self, candidate, top, runner) -> PPAResult:  # type: ignore[override]
        return PPAResult(area_um2=1.0, delay_ns=1.0, power_mw=1.0, cells=1, liberty="none")


class EchoReward(Reward):
    name = "echo-reward"

    def score(self, prompts, completions, **columns):  # type: ignore[override]
        return [1.0 for _ in completions]


class EchoArchive(Archive):
    name = "echo-archive"

    def add(self, entries) -> None:  # type: ignore[override]
        pass

    def entries(self, task_id=None):  # type: ignore[override]
        return iter(())

    def front(self, task_id):  # type: ignore[override]
        return []


class EchoTrainer(Trainer):
    name = "echo-trainer"

    def train(self) -> dict[str, Any]:
        return {}

    def evaluate(self) -> dict[str, Any]:
        return {}

    def save(self, path: Path) -> None:
        pass

    def resume(self, path: Path) -> None:
        pass


class AllKinds:
    """A plugin object contributing one of each kind."""

    @hookimpl
    def register_validators(self, register):
        register(EchoValidator)

    @hookimpl
    def register_generators(self, register):
        register(EchoGenerator)

    @hookimpl
    def register_ppa_estimators(self, register):
        register(EchoPPA)

    @hookimpl
    def register_rewards(self, register):
        register(EchoReward)

    @hookimpl
    def register_archives(self, register):
        register(EchoArchive)

    @hookimpl
    def register_trainers(self, register):
        register(EchoTrainer)


def validator_plugin(cls: type) -> object:
    """A plugin object registering one validator class."""

    class Plugin:
        @hookimpl
        def register_validators(self, register):
            register(cls)

    return Plugin()


def named_validator(name: str) -> type[Validator]:
    return type(f"V_{name.replace('-', '_')}", (EchoValidator,), {"name": name})


class Misspelled:
    @hookimpl
    def register_validator(self, register):  # missing the trailing "s"
        register(named_validator("never"))


class Raises:
    @hookimpl
    def register_validators(self, register):
        register(named_validator("before-the-crash"))
        raise RuntimeError("plugin bug")


class NotAValidator:
    name = "impostor"

    def validate(self, ctx):
        return None


# ------------------------------------------------------------------------------------------
# PluginHost with in-process plugins
# ------------------------------------------------------------------------------------------


def test_registers_each_kind() -> None:
    host = PluginHost(load_entrypoints=False, plugins=[("all", AllKinds())])
    expected = {
        "validator": EchoValidator,
        "generator": EchoGenerator,
        "ppa_estimator": EchoPPA,
        "reward": EchoReward,
        "archive": EchoArchive,
        "trainer": EchoTrainer,
    }
    for kind, cls in expected.items():
        assert host.names(kind) == [cls.name]
        assert host.get(kind, cls.name) is cls
    assert isinstance(host.create("validator", "echo"), EchoValidator)
    assert host.create("reward", "echo-reward").score(["p"], ["c"]) == [1.0]
    assert host.failures == {}
    (info,) = host.describe()
    assert info.name == "all"
    assert info.error is None
    assert info.registers == {kind: [cls.name] for kind, cls in expected.items()}


def test_register_accepts_factory_with_explicit_name() -> None:
    class Plugin:
        @hookimpl
        def register_validators(self, register):
            register(lambda: EchoValidator(), name="by-factory")

    host = PluginHost(load_entrypoints=False, plugins=[("factory", Plugin())])
    assert host.names("validator") == ["by-factory"]
    assert isinstance(host.create("validator", "by-factory"), EchoValidator)


def test_an_old_name_kept_as_an_alias_resolves_but_is_not_listed() -> None:
    class Renamed:
        @hookimpl
        def register_validators(self, register):
            register(EchoValidator, aliases=("echo_v1",))

    host = PluginHost(load_entrypoints=False, plugins=[("renamed", Renamed())])
    assert host.names("validator") == ["echo"]
    assert host.get("validator", "echo_v1") is EchoValidator
    assert isinstance(host.create("validator", "echo_v1"), EchoValidator)
    (info,) = host.describe()
    assert info.registers == {"validator": ["echo"]}
    assert info.aliases == {"validator": {"echo_v1": "echo"}}

    class Bad:
        @hookimpl
        def register_validators(self, register):
            register(EchoValidator, aliases="echo2")  # a string, not a sequence of names

    assert "aliases must be other names" in PluginHost(
        load_entrypoints=False, plugins=[("bad", Bad())]).failures["bad"]


def test_misspelled_hook_is_rejected_and_others_keep_working() -> None:
    host = PluginHost(
        load_entrypoints=False,
        plugins=[("typo", Misspelled()), ("good", validator_plugin(EchoValidator))],
    )
    assert "typo" in host.failures
    assert "register_validator" in host.failures["typo"]
    assert host.pm.get_plugin("typo") is None  # unregistered again, not half-loaded
    assert host.names("validator") == ["echo"]
    info = {i.name: i for i in host.describe()}
    assert info["typo"].error == host.failures["typo"]
    assert info["good"].error is None
    assert info["good"].registers == {"validator": ["echo"]}


def test_add_plugin_reports_rejection() -> None:
    host = PluginHost(load_entrypoints=False)
    assert host.add_plugin(Misspelled(), name="typo") is False
    assert host.add_plugin(validator_plugin(EchoValidator), name="good") is True
    assert set(host.failures) == {"typo"}
    assert host.names("validator") == ["echo"]


def test_hook_that_raises_is_isolated() -> None:
    host = PluginHost(
        load_entrypoints=False,
        plugins=[("crashy", Raises()), ("good", validator_plugin(EchoValidator))],
    )
    names = host.names("validator")
    assert names == ["echo"]  # nothing from the crashing hook, not even what it did register
    assert "RuntimeError" in host.failures["crashy"]
    assert "plugin bug" in host.failures["crashy"]
    assert {i.name: i.error is not None for i in host.describe()} == {
        "crashy": True, "good": False,
    }


def test_registering_a_non_implementation_is_an_error() -> None:
    host = PluginHost(
        load_entrypoints=False,
        plugins=[("bad", validator_plugin(NotAValidator)),
                 ("good", validator_plugin(EchoValidator))],
    )
    assert host.names("validator") == ["echo"]
    assert "does not implement Validator" in host.failures["bad"]
    with pytest.raises(PluginError):
        host.get("validator", "impostor")


def test_registering_without_a_name_is_an_error() -> None:
    nameless = type("Nameless", (Validator,), {"validate": EchoValidator.validate})
    host = PluginHost(load_entrypoints=False, plugins=[("nameless", validator_plugin(nameless))])
    assert host.names("validator") == []  # registration errors surface when the registry builds
    assert "has no 'name'" in host.failures["nameless"]


def test_name_clash_keeps_the_first() -> None:
    first = named_validator("dup")
    second = named_validator("dup")
    host = PluginHost(
        load_entrypoints=False,
        plugins=[("first", validator_plugin(first)), ("second", validator_plugin(second))],
    )
    assert host.get("validator", "dup") is first
    info = {i.name: i for i in host.describe()}
    assert info["first"].registers == {"validator": ["dup"]}
    assert info["second"].registers == {}
    assert host.failures == {}  # a clash is a warning, not a broken plugin


def test_get_unknown_name_lists_available() -> None:
    host = PluginHost(
        load_entrypoints=False,
        plugins=[("a", validator_plugin(named_validator("alpha"))),
                 ("b", validator_plugin(named_validator("beta")))],
    )
    with pytest.raises(PluginError, match=r"'gamma'.*available: alpha, beta"):
        host.get("validator", "gamma")
    with pytest.raises(PluginError, match="available: none"):
        host.get("generator", "anything")
    with pytest.raises(PluginError, match="unknown plugin kind"):
        host.names("validators")


def _three_plugins() -> list[tuple[str, object]]:
    return [(n, validator_plugin(named_validator(f"v-{n}"))) for n in ("a", "b", "c")]


def test_allow_and_block_constructor_arguments() -> None:
    allowed = PluginHost(load_entrypoints=False, allow=["a", "c"], plugins=_three_plugins())
    assert allowed.names("validator") == ["v-a", "v-c"]
    blocked = PluginHost(load_entrypoints=False, block=["b"], plugins=_three_plugins())
    assert blocked.names("validator") == ["v-a", "v-c"]
    both = PluginHost(load_entrypoints=False, allow=["a", "b"], block=["b"],
                      plugins=_three_plugins())
    assert both.names("validator") == ["v-a"]  # block wins over allow
    for host in (allowed, blocked, both):
        assert host.failures == {}  # skipped plugins are not failures
    assert blocked.add_plugin(validator_plugin(EchoValidator), name="b") is False


def test_allow_and_block_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RTLFORGE_PLUGINS_ALLOW", " a , b,")
    assert PluginHost(load_entrypoints=False, plugins=_three_plugins()).names("validator") == [
        "v-a", "v-b",
    ]
    monkeypatch.setenv("RTLFORGE_PLUGINS_BLOCK", "b")
    assert PluginHost(load_entrypoints=False, plugins=_three_plugins()).names("validator") == [
        "v-a",
    ]
    monkeypatch.delenv("RTLFORGE_PLUGINS_ALLOW")
    assert PluginHost(load_entrypoints=False, plugins=_three_plugins()).names("validator") == [
        "v-a", "v-c",
    ]
    # Explicit arguments take precedence over the environment.
    host = PluginHost(load_entrypoints=False, allow=["b"], block=[], plugins=_three_plugins())
    assert host.names("validator") == ["v-b"]


def test_hosts_do_not_share_state() -> None:
    one = PluginHost(load_entrypoints=False, plugins=[("a", validator_plugin(EchoValidator))])
    two = PluginHost(load_entrypoints=False, plugins=[("typo", Misspelled())])
    three = PluginHost(load_entrypoints=False)
    assert one.pm is not two.pm
    assert one.names("validator") == ["echo"]
    assert two.names("validator") == []
    assert three.names("validator") == []
    assert set(two.failures) == {"typo"} and one.failures == {} and three.failures == {}
    three.add_plugin(validator_plugin(named_validator("late")), name="late")
    assert three.names("validator") == ["late"]
    assert one.names("validator") == ["echo"]  # unchanged by another host's additions


def test_registry_is_rebuilt_after_add_plugin() -> None:
    host = PluginHost(load_entrypoints=False, plugins=[("a", validator_plugin(EchoValidator))])
    assert host.names("validator") == ["echo"]
    host.add_plugin(validator_plugin(named_validator("later")), name="b")
    assert host.names("validator") == ["echo", "later"]
    assert {i.name: i.registers for i in host.describe()} == {
        "a": {"validator": ["echo"]}, "b": {"validator": ["later"]},
    }


# ------------------------------------------------------------------------------------------
# Entry points
# ------------------------------------------------------------------------------------------


def _write_module(directory: Path, body: str) -> str:
    name = f"rtlforge_testplugin_{uuid.uuid4().hex[:10]}"
    (directory / f"{name}.py").write_text(textwrap.dedent(body))
    return name


GOOD_MODULE = """
    from rtlforge import hookimpl
    from rtlforge.core.interfaces import Validator
    from rtlforge.core.models import StageResult, Verdict

    class Good(Validator):
        name = "from-entry-point"

        def validate(self, ctx):
            return StageResult(name=self.name, verdict=Verdict.PASS)

    @hookimpl
    def register_validators(register):
        register(Good)
"""

MISSPELLED_MODULE = """
    from rtlforge import hookimpl

    @hookimpl
    def register_validator(register):
        raise AssertionError("must never be called")
"""


def _fake_entry_points(monkeypatch: pytest.MonkeyPatch, eps: list[metadata.EntryPoint]) -> None:
    def entry_points(*, group: str) -> list[metadata.EntryPoint]:
        assert group == "rtlforge"
        return [ep for ep in eps if ep.group == group]

    monkeypatch.setattr(plugins_module, "metadata", SimpleNamespace(entry_points=entry_points))


def test_broken_entry_point_is_isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    good = _write_module(tmp_path, GOOD_MODULE)
    typo = _write_module(tmp_path, MISSPELLED_MODULE)
    _fake_entry_points(monkeypatch, [
        metadata.EntryPoint("missing", "rtlforge_no_such_module_4711", "rtlforge"),
        metadata.EntryPoint("good", good, "rtlforge"),
        metadata.EntryPoint("typo", typo, "rtlforge"),
        metadata.EntryPoint("other-group", "rtlforge_no_such_module_4712", "not-rtlforge"),
    ])
    host = PluginHost()
    assert set(host.failures) == {"missing", "typo"}
    assert "import failed: ModuleNotFoundError" in host.failures["missing"]
    assert "rtlforge_no_such_module_4711" in host.failures["missing"]
    assert "register_validator" in host.failures["typo"]
    assert host.names("validator") == ["from-entry-point"]
    assert host.create("validator", "from-entry-point").name == "from-entry-point"
    info = {i.name: i for i in host.describe()}
    assert set(info) == {"missing", "good", "typo"}
    assert info["good"].error is None
    assert info["good"].registers == {"validator": ["from-entry-point"]}
    assert info["missing"].error == host.failures["missing"]


def test_blocked_entry_point_is_never_imported(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    good = _write_module(tmp_path, GOOD_MODULE)
    _fake_entry_points(monkeypatch, [
        metadata.EntryPoint("missing", "rtlforge_no_such_module_4711", "rtlforge"),
        metadata.EntryPoint("good", good, "rtlforge"),
    ])
    monkeypatch.setenv("RTLFORGE_PLUGINS_BLOCK", "missing")
    host = PluginHost()
    assert host.failures == {}  # not imported, so it could not fail
    assert [i.name for i in host.describe()] == ["good"]
    assert "rtlforge_no_such_module_4711" not in host.failures.get("missing", "")
    assert host.names("validator") == ["from-entry-point"]
    monkeypatch.delenv("RTLFORGE_PLUGINS_BLOCK")
    only_missing = PluginHost(allow=["missing"])
    assert set(only_missing.failures) == {"missing"}
    assert only_missing.names("validator") == []


def test_entry_points_and_in_process_plugins_combine(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    good = _write_module(tmp_path, GOOD_MODULE)
    _fake_entry_points(monkeypatch, [metadata.EntryPoint("good", good, "rtlforge")])
    host = PluginHost(plugins=[("local", validator_plugin(EchoValidator))])
    assert host.names("validator") == ["echo", "from-entry-point"]


def _imports(module: str) -> bool:
    try:
        importlib.import_module(module)
    except Exception:  # noqa: BLE001 - any import failure counts
        return False
    return True


def test_builtins_come_through_entry_points() -> None:
    eps = {ep.name: ep for ep in metadata.entry_points(group="rtlforge")}
    for name, module in BUILTINS.items():
        assert name in eps, f"built-in {name!r} is not declared as an rtlforge entry point"
        assert eps[name].value == module
        assert eps[name].dist is not None and eps[name].dist.metadata["Name"] == "rtlforge"

    host = PluginHost()
    info = {i.name: i for i in host.describe()}
    for name, module in BUILTINS.items():
        assert name in info
        assert info[name].distribution == "rtlforge"
        assert info[name].version == metadata.version("rtlforge")
        if _imports(module):
            assert name not in host.failures, host.failures.get(name)
            validators = info[name].registers.get("validator", [])
            assert validators, f"built-in plugin {name!r} registers no validator"
            for validator in validators:
                assert isinstance(host.create("validator", validator), Validator)
        else:
            # Not importable (yet, or a missing optional dependency): reported, not raised.
            assert host.failures[name].startswith("import failed")
            assert info[name].error == host.failures[name]


def test_builtins_respect_the_block_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RTLFORGE_PLUGINS_BLOCK", ",".join(BUILTINS))
    host = PluginHost()
    assert not set(BUILTINS) & {i.name for i in host.describe()}
    assert not set(BUILTINS) & set(host.failures)


# ------------------------------------------------------------------------------------------
# Regressions found in review of plugins.py
# ------------------------------------------------------------------------------------------


def test_second_plugin_with_a_taken_name_does_not_break_the_first() -> None:
    host = PluginHost(load_entrypoints=False, plugins=[
        ("same", validator_plugin(EchoValidator)),
        ("same", validator_plugin(named_validator("intruder"))),
    ])
    assert host.names("validator") == ["echo"]
    assert host.failures == {}
    assert len(host.clashes) == 1 and "'same'" in host.clashes[0]


class HalfBroken:
    @hookimpl
    def register_validators(self, register):
        register(named_validator("half"))

    @hookimpl
    def register_generators(self, register):
        raise RuntimeError("generator side broken")


def test_a_plugin_that_fails_in_one_hook_contributes_nothing() -> None:
    host = PluginHost(load_entrypoints=False, plugins=[("half", HalfBroken())])
    assert "half" in host.failures
    assert host.names("validator") == []
    host.add_plugin(validator_plugin(EchoValidator), name="other")  # forces a rebuild
    assert host.names("validator") == ["echo"]


def test_registration_failures_are_visible_without_touching_the_registry() -> None:
    host = PluginHost(load_entrypoints=False, plugins=[("boom", Raises())])
    assert "boom" in host.failures and "plugin bug" in host.failures["boom"]


def test_blank_allow_list_means_no_restriction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RTLFORGE_PLUGINS_ALLOW", " , ")
    host = PluginHost()
    assert host.allow is None
    assert "iverilog-lint" in host.names("validator")


def test_create_hands_out_the_kinds_interface_or_says_what_was_built() -> None:
    # PluginHost.create is typed by kind (a Validator for "validator"); a factory that builds
    # something else is the plugin's error, reported at creation, not a caller's isinstance.
    from rtlforge.core.interfaces import Validator
    from rtlforge.plugins.validators.iverilog import IverilogLint

    class Impostor:
        name = "impostor"

    def impostor() -> Impostor:
        return Impostor()

    impostor.name = "impostor"  # type: ignore[attr-defined]

    class Plugin:
        @hookimpl
        def register_validators(self, register: Any) -> None:
            register(IverilogLint)
            register(impostor, name="impostor")

    from rtlforge.testing.builders import make_plugin_host

    host = make_plugin_host(Plugin())
    made = host.create("validator", "iverilog-lint")
    assert isinstance(made, Validator)
    with pytest.raises(PluginError, match="'impostor' built a Impostor, which is not a Validator"):
        host.create("validator", "impostor")
