"""HostSpec: a plugin host described as plain data, rebuilt in another process."""

from __future__ import annotations

import pickle
import sys
import types

import pytest

from rtlforge.core.errors import ConfigError
from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.plugins import HostSpec, PluginHost
from rtlforge.plugins.executors import local


def test_a_module_plugin_travels_by_name_with_the_allow_and_block_lists() -> None:
    host = PluginHost(load_entrypoints=False, block=["nothing-here"],
                      plugins=[("local-executors", local)])
    spec = host.spec()
    assert spec == HostSpec(load_entrypoints=False, allow=None, block=("nothing-here",),
                            modules=(("local-executors", "rtlforge.plugins.executors.local"),))
    rebuilt = pickle.loads(pickle.dumps(spec)).build()
    assert rebuilt.names("executor") == ["serial", "thread"] == host.names("executor")
    assert rebuilt.block == {"nothing-here"}


def test_the_allow_list_is_the_hosts_not_the_workers_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RTLFORGE_PLUGINS_ALLOW", "iverilog")
    spec = PluginHost(load_entrypoints=False).spec()
    assert spec.allow == ("iverilog",)
    monkeypatch.delenv("RTLFORGE_PLUGINS_ALLOW")
    assert spec.build().allow == {"iverilog"}


def test_an_object_plugin_cannot_travel() -> None:
    class Inline:
        @hookimpl
        def register_executors(self, register: Register) -> None:
            return None

    host = PluginHost(load_entrypoints=False, plugins=[("inline", Inline())])
    with pytest.raises(ConfigError, match="only a plugin module can be rebuilt"):
        host.spec()


def test_a_module_that_is_not_importable_elsewhere_fails_where_it_is_rebuilt() -> None:
    module = types.ModuleType("rtlforge_test_nowhere")
    host = PluginHost(load_entrypoints=False, plugins=[("nowhere", module)])
    spec = host.spec()  # the name is all the spec can carry...
    assert spec.modules == (("nowhere", "rtlforge_test_nowhere"),)
    assert "rtlforge_test_nowhere" not in sys.modules
    with pytest.raises(ModuleNotFoundError):  # ...and the rebuilding side says it is missing
        spec.build()
