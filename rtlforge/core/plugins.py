"""A plugin host: one pluggy manager per embedding application, never a module global.

Plugins are discovered through the ``rtlforge`` entry-point group (built-ins included). Each entry
point is loaded and checked in isolation: a plugin that fails to import, misspells a hook or
raises while registering is recorded in :attr:`PluginHost.failures` and the rest keep working.

Environment controls (read when the host is created):

- ``RTLFORGE_PLUGINS_ALLOW``: comma-separated entry-point names; only these are loaded.
- ``RTLFORGE_PLUGINS_BLOCK``: comma-separated entry-point names that are never loaded.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import pluggy

from rtlforge.core import hookspecs
from rtlforge.core.errors import PluginError
from rtlforge.core.interfaces import PLUGIN_KINDS
from rtlforge.core.log import get_logger

log = get_logger("rtlforge.plugins")

ENTRY_POINT_GROUP = "rtlforge"


@dataclass
class PluginInfo:
    """What ``rtlforge plugins`` shows about one plugin."""

    name: str
    version: str | None = None
    distribution: str | None = None
    registers: dict[str, list[str]] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class Registration:
    kind: str
    name: str
    factory: Callable[..., Any]
    plugin: str


def _env_list(var: str) -> set[str] | None:
    """A comma-separated list from the environment; unset or blank means "no restriction"."""
    names = {part.strip() for part in os.environ.get(var, "").split(",") if part.strip()}
    return names or None


class PluginHost:
    """Discovers plugins and hands out the validators, generators, ... they register."""

    def __init__(
        self,
        *,
        load_entrypoints: bool = True,
        allow: Iterable[str] | None = None,
        block: Iterable[str] | None = None,
        plugins: Iterable[tuple[str, object]] = (),
    ) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.allow = set(allow) if allow is not None else _env_list("RTLFORGE_PLUGINS_ALLOW")
        if block is None:
            block = _env_list("RTLFORGE_PLUGINS_BLOCK") or set()
        self.block = set(block)
        self._failures: dict[str, str] = {}
        self.clashes: list[str] = []
        self._info: dict[str, PluginInfo] = {}
        self._registry: dict[str, dict[str, Registration]] | None = None
        if load_entrypoints:
            self._load_entrypoints()
        for name, plugin in plugins:
            self.add_plugin(plugin, name=name)

    # ---------------------------------------------------------------- loading

    def _wanted(self, name: str) -> bool:
        if name in self.block:
            return False
        return self.allow is None or name in self.allow

    def _load_entrypoints(self) -> None:
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            if not self._wanted(ep.name):
                log.debug("plugin_skipped", plugin=ep.name, reason="allow/block list")
                continue
            if ep.name in self._info:
                self._clash(ep.name, getattr(ep, "value", "?"))
                continue
            dist = getattr(ep, "dist", None)
            info = PluginInfo(
                name=ep.name,
                distribution=dist.metadata["Name"] if dist is not None else None,
                version=dist.version if dist is not None else None,
            )
            self._info[ep.name] = info
            try:
                module = ep.load()
            except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the host
                self._fail(ep.name, f"import failed: {type(exc).__name__}: {exc}")
                continue
            self.add_plugin(module, name=ep.name, _info=info)

    def add_plugin(self, plugin: object, *, name: str, _info: PluginInfo | None = None) -> bool:
        """Register an in-process plugin (a module or object with hookimpls).

        Returns False (and records the failure) when it uses unknown hooks or cannot register.
        """
        if not self._wanted(name):
            return False
        if _info is None and name in self._info:
            self._clash(name, repr(plugin))
            return False
        self._info.setdefault(name, _info or PluginInfo(name=name))
        try:
            self.pm.register(plugin, name=name)
            self.pm.check_pending()
        except Exception as exc:  # noqa: BLE001 - pluggy raises several types here
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            self._fail(name, f"invalid plugin: {exc}")
            return False
        self._registry = None
        log.debug("plugin_loaded", plugin=name)
        return True

    def _clash(self, name: str, what: str) -> None:
        """A second plugin under a taken name is refused; the first keeps working."""
        message = f"plugin name {name!r} is already taken; {what} was not loaded"
        self.clashes.append(message)
        log.warning("plugin_name_clash", plugin=name, ignored=what)

    def _fail(self, name: str, message: str) -> None:
        self._failures[name] = message
        self._info.setdefault(name, PluginInfo(name=name)).error = message
        log.warning("plugin_failed", plugin=name, error=message)

    # ---------------------------------------------------------------- registry

    def _collect(self, plugin_name: str) -> list[Registration]:
        """Everything one plugin registers, or an exception: a plugin counts whole or not at all."""
        collected: list[Registration] = []
        for hook_name, kind in hookspecs.REGISTER_HOOKS.items():
            impls = getattr(self.pm.hook, hook_name).get_hookimpls()
            for impl in (i for i in impls if i.plugin_name == plugin_name):

                def register(factory: Any, *, name: str | None = None,
                             _kind: str = kind) -> None:
                    reg_name = name or getattr(factory, "name", None)
                    if not isinstance(reg_name, str) or not reg_name:
                        raise PluginError(f"{_kind} {factory!r} has no 'name'")
                    base = PLUGIN_KINDS[_kind]
                    if isinstance(factory, type) and not issubclass(factory, base):
                        raise PluginError(f"{factory!r} does not implement {base.__name__}")
                    collected.append(Registration(_kind, reg_name, factory, plugin_name))

                try:
                    impl.function(register=register)
                except Exception as exc:  # isolate each plugin: re-raised typed
                    raise PluginError(f"{hook_name} raised {type(exc).__name__}: {exc}") from exc
        return collected

    def _build_registry(self) -> dict[str, dict[str, Registration]]:
        registry: dict[str, dict[str, Registration]] = {kind: {} for kind in PLUGIN_KINDS}
        for plugin_name, _plugin in self.pm.list_name_plugin():
            if plugin_name is None or plugin_name in self._failures:
                continue
            try:
                regs = self._collect(plugin_name)
            except PluginError as exc:
                self._fail(plugin_name, str(exc))
                continue
            for reg in regs:
                existing = registry[reg.kind].get(reg.name)
                if existing is not None and existing.plugin != reg.plugin:
                    log.warning("plugin_name_clash", kind=reg.kind, name=reg.name,
                                kept=existing.plugin, ignored=reg.plugin)
                    continue
                registry[reg.kind][reg.name] = reg
                self._info[plugin_name].registers.setdefault(reg.kind, []).append(reg.name)
        return registry

    @property
    def failures(self) -> dict[str, str]:
        """Plugins that failed to import, validate or register (name -> reason)."""
        self.registry  # noqa: B018 - registration errors surface when the registry is built
        return dict(self._failures)

    @property
    def registry(self) -> dict[str, dict[str, Registration]]:
        if self._registry is None:
            for info in self._info.values():
                info.registers.clear()
            self._registry = self._build_registry()
        return self._registry

    def names(self, kind: str) -> list[str]:
        self._check_kind(kind)
        return sorted(self.registry[kind])

    def get(self, kind: str, name: str) -> Callable[..., Any]:
        """The registered class/factory, or a PluginError that lists what is available."""
        self._check_kind(kind)
        try:
            return self.registry[kind][name].factory
        except KeyError:
            available = ", ".join(self.names(kind)) or "none"
            raise PluginError(
                f"no {kind} named {name!r} is registered (available: {available})"
            ) from None

    def create(self, kind: str, name: str, **config: Any) -> Any:
        return self.get(kind, name)(**config)

    def describe(self) -> list[PluginInfo]:
        self.registry  # noqa: B018 - populate 'registers'
        return sorted(self._info.values(), key=lambda info: info.name)

    @staticmethod
    def _check_kind(kind: str) -> None:
        if kind not in PLUGIN_KINDS:
            raise PluginError(f"unknown plugin kind {kind!r}; one of {sorted(PLUGIN_KINDS)}")
