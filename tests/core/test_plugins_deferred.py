"""A host given ``known`` entry points imports each plugin only when it is used, and then
answers exactly as a host that imported every plugin at once."""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from rtlforge.core.errors import PluginError
from rtlforge.core.plugins import KnownPlugin, PluginHost

#: Declares the ``widget`` kind: its interface, its hook specification.
DECLARER = '''
    from rtlforge import hookimpl
    from rtlforge.core.hookspecs import PluginKind, hookspec
    from rtlforge.core.interfaces import Plugin


    class Widget(Plugin):
        """A thing with a name."""


    class Specs:
        @hookspec
        def register_widgets(self, register):
            """Register Widget classes."""


    @hookimpl
    def register_hookspecs(register):
        register(Specs)


    @hookimpl
    def register_plugin_kinds(register):
        register(PluginKind("widget", Widget, "register_widgets", "a widget"))
'''

#: Registers a widget through the hook the declarer adds (it needs the declarer loaded).
USER = '''
    from rtlforge import hookimpl
    from {declarer} import Widget


    class Knob(Widget):
        name = "knob"


    @hookimpl
    def register_widgets(register):
        register(Knob)
'''

#: A validator ``{name}`` and a reward: two kinds from one plugin.
CHECKS = '''
    from dataclasses import dataclass
    from typing import ClassVar

    from rtlforge import hookimpl
    from rtlforge.core.interfaces import Reward, Validator
    from rtlforge.core.models import StageResult, Verdict


    @dataclass(frozen=True)
    class Check(Validator):
        name: ClassVar[str] = "{name}"
        origin: ClassVar[str] = "{origin}"

        def validate(self, ctx):
            return StageResult(name=self.name, verdict=Verdict.PASS)


    class Length(Reward):
        name: ClassVar[str] = "length-{origin}"

        def score(self, prompts, completions, **columns):
            return [float(len(c)) for c in completions]


    @hookimpl
    def register_validators(register):
        register(Check)


    @hookimpl
    def register_rewards(register):
        register(Length)
'''


@pytest.fixture(autouse=True)
def _no_env_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RTLFORGE_PLUGINS_ALLOW", raising=False)
    monkeypatch.delenv("RTLFORGE_PLUGINS_BLOCK", raising=False)


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """Four plugin modules on the path, none imported yet: role -> module name."""
    tag = uuid.uuid4().hex[:8]
    names = {role: f"rtlforge_deferred_{role}_{tag}" for role in ("declarer", "user", "a", "b")}
    sources = {"declarer": DECLARER, "user": USER.format(declarer=names["declarer"]),
               "a": CHECKS.format(name="dup", origin="a"),
               "b": CHECKS.format(name="dup", origin="b")}
    for role, source in sources.items():
        (tmp_path / f"{names[role]}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield names
    for name in names.values():
        sys.modules.pop(name, None)


def _known(names: dict[str, str]) -> list[KnownPlugin]:
    """What a manifest records about the four, in entry-point order (a before b)."""
    checks = frozenset({"register_validators", "register_rewards"})
    return [
        KnownPlugin("a", names["a"], "dist-a", "1.0", hooks=checks),
        KnownPlugin("b", names["b"], "dist-b", "2.0", hooks=checks),
        KnownPlugin("declarer", names["declarer"], hooks=frozenset(
            {"register_hookspecs", "register_plugin_kinds"}),
            specs=frozenset({"register_widgets"}), kinds=(("widget", "register_widgets"),)),
        KnownPlugin("user", names["user"], hooks=frozenset({"register_widgets"})),
    ]


def _imported(names: dict[str, str]) -> set[str]:
    return {role for role, module in names.items() if module in sys.modules}


def test_a_plugin_is_imported_when_its_kind_is_used(modules: dict[str, str]) -> None:
    host = PluginHost(known=_known(modules))
    assert _imported(modules) == set()
    assert host.names("validator") == ["dup"]
    assert _imported(modules) == {"a", "b"}  # every plugin that registers validators
    # the kind a plugin declares, and the plugin that registers through its hook
    assert host.names("widget") == ["knob"]
    assert _imported(modules) == {"a", "b", "declarer", "user"}
    assert host.create("widget", "knob").name == "knob"
    assert host.failures == {}
    info = {i.name: i for i in host.describe()}
    assert (info["b"].distribution, info["b"].version) == ("dist-b", "2.0")
    assert info["declarer"].kinds == ["widget"]


def test_a_plugin_brings_the_plugin_whose_hook_it_implements(modules: dict[str, str]) -> None:
    host = PluginHost(known=_known(modules))
    host.load(["user"])
    assert _imported(modules) == {"declarer", "user"}
    assert host.failures == {}  # register_widgets had its specification when it was checked


def test_an_in_process_plugin_brings_the_specifications_it_needs(
        modules: dict[str, str]) -> None:
    from rtlforge import hookimpl

    declarer = _known(modules)[2]
    host = PluginHost(known=[declarer])

    class Local:
        @hookimpl
        def register_widgets(self, register):  # type: ignore[no-untyped-def]
            widget = sys.modules[declarer.value].Widget
            register(type("Dial", (widget,), {"name": "dial"}))

    assert host.add_plugin(Local(), name="local")
    assert _imported(modules) == {"declarer"}
    assert host.names("widget") == ["dial"]


def test_the_first_plugin_in_entry_point_order_keeps_a_name_whatever_loads_first(
        modules: dict[str, str]) -> None:
    """a and b both register validator "dup"; b is imported first (for its reward), yet a
    keeps the name, as in a host that imports every entry point in order."""
    lazy = PluginHost(known=_known(modules))
    lazy.load(["b"])
    assert _imported(modules) == {"b"}
    eager = PluginHost(known=[KnownPlugin(p.name, p.value, p.distribution, p.version)
                              for p in _known(modules)])  # hooks unknown: imported at once
    assert lazy.get("validator", "dup").origin == "a"
    assert eager.get("validator", "dup").origin == "a"
    assert {k: sorted(v) for k, v in lazy.registry.items()} == {
        k: sorted(v) for k, v in eager.registry.items()}
    assert [(i.name, i.registers, i.kinds) for i in lazy.describe()] == [
        (i.name, i.registers, i.kinds) for i in eager.describe()]


def test_a_plugin_that_fails_to_import_is_a_failure_when_it_is_used() -> None:
    missing = KnownPlugin("gone", "rtlforge_no_such_module_4713",
                          hooks=frozenset({"register_validators"}))
    host = PluginHost(known=[missing])
    assert host.names("validator") == []
    assert "import failed: ModuleNotFoundError" in host.failures["gone"]


def test_allow_and_block_lists_hold_for_known_plugins(modules: dict[str, str]) -> None:
    host = PluginHost(known=_known(modules), block=["b"])
    assert host.names("validator") == ["dup"] and "b" not in _imported(modules)
    assert [i.name for i in host.describe()] == ["a", "declarer", "user"]


#: Validators with a stage and a toolchain, the facts a manifest records for the kind.
STAGED = '''
    from dataclasses import dataclass
    from typing import ClassVar

    from rtlforge import hookimpl
    from rtlforge.core.interfaces import Validator
    from rtlforge.core.models import StageResult, Verdict


    def _made(name, stage, toolchain):
        @dataclass(frozen=True)
        class Made(Validator):
            def validate(self, ctx):
                return StageResult(name=self.name, verdict=Verdict.PASS)

        Made.name, Made.stage, Made.toolchain = name, stage, toolchain
        return Made


    @hookimpl
    def register_validators(register):
        for name, stage, toolchain in {made}:
            register(_made(name, stage, toolchain))
        register(lambda: None, name="{prefix}-factory")
'''


@pytest.fixture
def staged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """Two validator plugins on the path, none imported yet: role -> module name."""
    tag = uuid.uuid4().hex[:8]
    made = {"x": [("x-lint", "lint", "x"), ("x-sim", "simulate", "x")],
            "y": [("y-sim", "simulate", "y")]}
    names = {role: f"rtlforge_staged_{role}_{tag}" for role in made}
    for role, module in names.items():
        (tmp_path / f"{module}.py").write_text(
            textwrap.dedent(STAGED.format(made=made[role], prefix=role)))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield names
    for module in names.values():
        sys.modules.pop(module, None)


def _recorded(names: dict[str, str], *, records: bool = True) -> list[KnownPlugin]:
    """What a manifest records about the two staged plugins (``records=False``: what an older
    manifest did, no registrations)."""
    def facts(stage: str, toolchain: str) -> tuple[tuple[str, str | None], ...]:
        return (("stage", stage), ("toolchain", toolchain))

    registers = {
        "x": (("validator", "x-lint", None, facts("lint", "x")),
              ("validator", "x-sim", None, facts("simulate", "x")),
              ("validator", "x-factory", None, None)),
        "y": (("validator", "y-sim", None, facts("simulate", "y")),
              ("validator", "y-factory", None, None)),
    }
    return [KnownPlugin(role, module, hooks=frozenset({"register_validators"}),
                        registers=registers[role] if records else None)
            for role, module in names.items()]


def _staged_imported(names: dict[str, str]) -> set[str]:
    return {role for role, module in names.items() if module in sys.modules}


def test_recorded_registrations_answer_declared_without_importing(
        staged: dict[str, str]) -> None:
    lazy = PluginHost(known=_recorded(staged))
    answer = lazy.declared("validator")
    assert _staged_imported(staged) == set()
    assert answer == {"x-lint": {"stage": "lint", "toolchain": "x"},
                      "x-sim": {"stage": "simulate", "toolchain": "x"},
                      "y-sim": {"stage": "simulate", "toolchain": "y"}}  # factories left out
    eager = PluginHost(known=_recorded(staged, records=False))  # imports to answer
    assert eager.declared("validator") == answer
    assert _staged_imported(staged) == {"x", "y"}


def test_get_imports_only_the_plugin_that_recorded_the_name(staged: dict[str, str]) -> None:
    host = PluginHost(known=_recorded(staged))
    assert host.get("validator", "y-sim").toolchain == "y"
    assert _staged_imported(staged) == {"y"}
    assert host.create("validator", "y-sim").name == "y-sim"
    assert host.declared("validator")["y-sim"] == {"stage": "simulate", "toolchain": "y"}
    assert _staged_imported(staged) == {"y"}  # an imported plugin answers from its classes
    with pytest.raises(PluginError, match="did you mean 'x-sim'"):
        host.get("validator", "x-simm")  # unknown: every plugin of the kind, as before
    assert _staged_imported(staged) == {"x", "y"}


def test_a_name_an_in_process_plugin_also_registers_is_answered_by_importing(
        staged: dict[str, str]) -> None:
    """The entry point comes first in discovery order and keeps the name, as when every
    plugin is imported: a record that would hide the clash is not trusted."""
    from rtlforge import hookimpl
    from rtlforge.core.interfaces import Validator

    class Local:
        @hookimpl
        def register_validators(self, register):  # type: ignore[no-untyped-def]
            register(type("Other", (Validator,), {"name": "y-sim", "stage": "lint",
                                                  "toolchain": "local",
                                                  "validate": lambda self, ctx: None}))

    host = PluginHost(known=_recorded(staged), plugins=[("local", Local())])
    assert host.declared("validator")["y-sim"] == {"stage": "simulate", "toolchain": "y"}
    assert _staged_imported(staged) == {"x", "y"}


def test_a_pipeline_imports_only_the_validators_it_selects(staged: dict[str, str]) -> None:
    from rtlforge.validate.pipeline import Pipeline

    pipeline = Pipeline.build(PluginHost(known=_recorded(staged)), simulator="x")
    assert [v.name for v in pipeline.validators] == ["x-lint", "x-sim"]
    assert _staged_imported(staged) == {"x"}
    with pytest.raises(ValueError, match=r"simulator must be one of \['x'\]"):
        Pipeline.build(PluginHost(known=_recorded(staged)), simulator="y")  # y has no lint
