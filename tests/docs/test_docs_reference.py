"""The generated reference: every hook and every built-in plugin option is documented.

The site's reference pages (``scripts/docs_reference.py``, run by ``mkdocs build``) list what a
``PluginHost`` sees; these tests use the same enumeration, so a hook specification without a
docstring or a built-in option without a description fails here before it reaches the site as
an empty cell.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


def _load_reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_docs_reference",
                                                  REPO / "scripts" / "docs_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ref() -> ModuleType:
    return _load_reference()


@pytest.fixture(scope="module")
def host(ref: ModuleType):
    return ref.reference_host()


def test_the_reference_host_loads_every_builtin_plugin(host) -> None:
    # A plugin that failed to load would be missing from the reference without a word.
    assert host.failures == {}


def test_every_hook_specification_has_a_docstring(ref: ModuleType, host) -> None:
    specs = ref.hook_specs(host)
    names = {s.name for s in specs}
    # The core's hooks and those the agents packages add through register_hookspecs.
    assert {"register_validators", "register_commands", "register_hookspecs",
            "register_agent_roles", "register_routers", "register_retrievers",
            "register_guidance_detectors"} <= names
    assert ref.undocumented_hooks(specs) == []


def test_every_builtin_plugin_option_has_a_description(ref: ModuleType, host) -> None:
    docs = ref.builtin_options(host)
    kinds = {d.kind for d in docs}
    assert {"validator", "generator", "ppa_estimator", "reward", "archive", "trainer",
            "agent_role", "router", "retriever"} <= kinds
    assert sum(len(d.options) for d in docs) > 100  # the enumeration really found them
    missing = ref.undocumented_options(docs)
    assert missing == [], "options without a description:\n" + "\n".join(missing)


def test_every_plugin_kind_has_a_description(host) -> None:
    assert [k.name for k in host.kinds() if not k.description.strip()] == []


def test_the_check_catches_an_undocumented_option(ref: ModuleType, host) -> None:
    # The oracle for the check itself: a plugin added with one documented and one bare option.
    from rtlforge import hookimpl
    from rtlforge.core.interfaces import Archive

    class Half(Archive):
        name = "half-documented"

        def __init__(self, *, kept: int = 1, bare: int = 2) -> None:
            """Args:
                kept: an option with a description.
            """

        def add(self, entries):  # pragma: no cover - never called
            raise NotImplementedError

        def entries(self, task_id=None):  # pragma: no cover
            raise NotImplementedError

        def front(self, task_id):  # pragma: no cover
            raise NotImplementedError

    class Plugin:
        @hookimpl
        def register_archives(self, register):
            register(Half)

    from rtlforge.core.plugins import PluginHost

    local = PluginHost(load_entrypoints=False, plugins=[("half", Plugin())])
    info = next(i for i in local.describe() if i.name == "half")
    info.distribution = ref.BUILTIN_DISTRIBUTION  # judged like a built-in
    missing = ref.undocumented_options(ref.builtin_options(local))
    assert len(missing) == 1 and "half-documented.bare" in missing[0]


def test_the_generated_pages_name_every_hook_option_and_command(ref: ModuleType, host) -> None:
    pages = ref.pages()
    hooks, options, cli = (pages[f"reference/{p}.md"] for p in ("hooks", "options", "cli"))
    for spec in ref.hook_specs(host):
        assert f"### `{spec.name}`" in hooks
    for doc in ref.builtin_options(host):
        for opt in doc.options:
            assert f"| `{opt.name}` |" in options
    # Built-in commands and the ones plugins add through register_commands.
    for command in ("rtlforge validate", "rtlforge eval", "rtlforge explore", "rtlforge refine",
                    "rtlforge behave check", "rtlforge train"):
        assert f"`{command}`" in cli
    assert "::: rtlforge.core.interfaces" in pages["reference/api/rtlforge.core.interfaces.md"]
