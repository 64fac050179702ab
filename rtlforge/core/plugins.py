"""A plugin host: one pluggy manager per embedding application, never a module global.

Plugins are discovered through the ``rtlforge`` entry-point group (built-ins included). Each entry
point is loaded and checked in isolation: a plugin that fails to import, misspells a hook, adds
broken hook specifications or plugin kinds, or raises while registering is recorded in
:attr:`PluginHost.failures` and the rest keep working.

Plugin kinds are per-host state: the built-in kinds (the six interfaces and executors) are
declared to each new host through ``register_plugin_kinds``, the same hook a plugin uses to add
its own (see :mod:`rtlforge.core.hookspecs`). While the host is created, every plugin's hook
specifications are added before any plugin's hooks are checked, so a plugin may implement hooks
another declares whatever order they load in; one added later with :meth:`PluginHost.add_plugin`
is checked at once. :meth:`PluginHost.spec` describes a host as plain data (:class:`HostSpec`),
so a cluster worker can build an equivalent one.

Pass the host explicitly to whatever builds plugins. Scripts that have none use
:meth:`PluginHost.default`, a fresh host from the installed entry points on each call (there is
no cached global host); the CLI shares one per invocation (``rtlforge.cmdline.command_host``).

A host given ``known`` entry points (:class:`KnownPlugin`: the hooks each implements, the
specifications and kinds it adds, what it registers, as the CLI's manifest records them,
``rtlforge.cli.manifest``) imports a plugin only when it is used: a name it recorded is asked for
(only that plugin), a kind it declares or registers into is listed, another plugin needs its hook
specifications, or everything is (``registry``, ``describe``, ``failures``). ``declared(kind)``
answers a kind's classes and their facts from the records, importing nothing.

Environment controls (read when the host is created):

- ``RTLFORGE_PLUGINS_ALLOW``: comma-separated entry-point names; only these are loaded.
- ``RTLFORGE_PLUGINS_BLOCK``: comma-separated entry-point names that are never loaded.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Literal, overload

import pluggy
from pydantic import BaseModel, ConfigDict

from rtlforge.core import hookspecs
from rtlforge.core.errors import ConfigError, PluginError
from rtlforge.core.executor import EXECUTOR_KIND, Executor
from rtlforge.core.hookspecs import PluginKind, hookimpl
from rtlforge.core.interfaces import (
    BUILTIN_KINDS,
    Archive,
    Generator,
    PPAEstimator,
    Reward,
    Trainer,
    Validator,
)
from rtlforge.core.log import get_logger
from rtlforge.core.options import OptionInfo, describe_options, options_model, validate_options

log = get_logger("rtlforge.plugins")

ENTRY_POINT_GROUP = "rtlforge"
#: The name the built-in kinds are declared under (not a plugin ``rtlforge plugins`` lists).
CORE = "rtlforge.core"


@dataclass
class PluginInfo:
    """What ``rtlforge plugins`` shows about one plugin."""

    name: str
    version: str | None = None
    distribution: str | None = None
    registers: dict[str, list[str]] = field(default_factory=dict)
    error: str | None = None
    kinds: list[str] = field(default_factory=list)  # plugin kinds this plugin declares
    #: kind -> {old name: its name now}: names kept so configs written with them still work
    aliases: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class KnownPlugin:
    """An entry point's plugin as a manifest recorded it, so that a host need not import it.

    ``hooks`` are the hooks its module implements (None: not known, import it at once),
    ``specs`` the hooks it adds specifications for (``register_hookspecs``), ``kinds`` the
    plugin kinds it declares, as ``(kind, hook)``. ``registers`` (None: not known) holds what
    it registers, as ``(kind, name, alias_of, facts)``: ``alias_of`` names the registration an
    old name stands for, ``facts`` are the kind's facts of a registered class as
    ``(attribute, value)`` pairs (None for a factory that is not a class of the kind).
    """

    name: str
    value: str  # the entry point's value, ``module`` or ``module:attr``
    distribution: str | None = None
    version: str | None = None
    hooks: frozenset[str] | None = None
    specs: frozenset[str] = frozenset()
    kinds: tuple[tuple[str, str], ...] = ()
    registers: tuple[tuple[str, str, str | None,
                           tuple[tuple[str, str | None], ...] | None], ...] | None = None

    def load(self) -> object:
        """What the entry point names, imported (as ``EntryPoint.load`` does)."""
        module, _, attrs = self.value.split("[")[0].partition(":")  # [extras] are pip's
        found: object = importlib.import_module(module.strip())
        for attr in filter(None, attrs.strip().split(".")):
            found = getattr(found, attr)
        return found


@dataclass(frozen=True)
class Registration:
    kind: str
    name: str
    factory: Callable[..., Any]
    plugin: str
    alias_of: str | None = None  # an old name of the plugin registered as ``alias_of``


class _BuiltinKinds:
    """Declares the built-in kinds through the hook every plugin uses."""

    @hookimpl
    def register_plugin_kinds(self, register: hookspecs.Register) -> None:
        for kind in (*BUILTIN_KINDS, EXECUTOR_KIND):
            register(kind)


def _env_list(var: str) -> set[str] | None:
    """A comma-separated list from the environment; unset or blank means "no restriction"."""
    names = {part.strip() for part in os.environ.get(var, "").split(",") if part.strip()}
    return names or None


class HostSpec(BaseModel):
    """How to build an equivalent host in another process (a cluster worker).

    A live host holds imported modules and a pluggy manager and never travels; this does. Plugins
    added in-process travel as the names of importable modules (``modules``: plugin name ->
    module), so a worker imports them itself; the allow/block lists are the ones the host was
    created with, not the worker's environment.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    load_entrypoints: bool = True
    allow: tuple[str, ...] | None = None
    block: tuple[str, ...] = ()
    modules: tuple[tuple[str, str], ...] = ()

    def build(self) -> PluginHost:
        import importlib

        plugins = [(name, importlib.import_module(module)) for name, module in self.modules]
        return PluginHost(load_entrypoints=self.load_entrypoints, allow=self.allow,
                          block=self.block, plugins=plugins)


class PluginHost:
    """Discovers plugins and hands out the validators, generators, ... they register."""

    def __init__(
        self,
        *,
        load_entrypoints: bool = True,
        allow: Iterable[str] | None = None,
        block: Iterable[str] | None = None,
        plugins: Iterable[tuple[str, object]] = (),
        known: Iterable[KnownPlugin] | None = None,
    ) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.allow = set(allow) if allow is not None else _env_list("RTLFORGE_PLUGINS_ALLOW")
        if block is None:
            block = _env_list("RTLFORGE_PLUGINS_BLOCK") or set()
        self.block = set(block)
        self._failures: dict[str, str] = {}
        self._load_entrypoints_flag = load_entrypoints
        self._in_process: dict[str, object] = {}  # add_plugin's plugins, for spec()
        self.clashes: list[str] = []
        self._info: dict[str, PluginInfo] = {}
        self._kinds: dict[str, PluginKind] = {}
        self._options: dict[int, tuple[Any, type[BaseModel]]] = {}
        self._registry: dict[str, dict[str, Registration]] | None = None
        self._deferred: dict[str, KnownPlugin] = {}  # entry points not imported yet
        self._loading = threading.RLock()  # threads that use a host import a plugin once
        self._unsettled: list[str] | None = []  # None outside a batch of additions
        self.pm.register(_BuiltinKinds(), name=CORE)
        self._settle(CORE)
        if load_entrypoints:
            self._load_entrypoints(known)
        for name, plugin in plugins:
            self.add_plugin(plugin, name=name)
        self._settle_batch()

    @classmethod
    def default(cls) -> PluginHost:
        """A fresh host from the installed entry points (and the allow/block environment).

        The one documented default for scripts and for library functions called without a
        host; each call builds a new host, so nothing is shared behind the caller's back.
        """
        return cls()

    def spec(self) -> HostSpec:
        """A :class:`HostSpec` that rebuilds this host elsewhere.

        Raises :class:`ConfigError` when a plugin added in-process is not a module (an object
        or a class cannot be imported by name in another process).
        """
        import types

        modules: list[tuple[str, str]] = []
        for name, plugin in self._in_process.items():
            if name in self._failures:
                continue
            if not isinstance(plugin, types.ModuleType):
                raise ConfigError(
                    f"plugin {name!r} was added as {type(plugin).__name__} object: only a "
                    "plugin module can be rebuilt in another process (register it through an "
                    "entry point, or add the module itself)")
            modules.append((name, plugin.__name__))
        return HostSpec(load_entrypoints=self._load_entrypoints_flag,
                        allow=tuple(sorted(self.allow)) if self.allow is not None else None,
                        block=tuple(sorted(self.block)), modules=tuple(modules))

    # ---------------------------------------------------------------- loading

    def _wanted(self, name: str) -> bool:
        if name in self.block:
            return False
        return self.allow is None or name in self.allow

    def _load_entrypoints(self, known: Iterable[KnownPlugin] | None) -> None:
        found: list[tuple[KnownPlugin, Callable[[], object]]] = []
        if known is not None:
            found = [(plugin, plugin.load) for plugin in known]
        else:
            for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
                dist = getattr(ep, "dist", None)
                found.append((KnownPlugin(ep.name, getattr(ep, "value", "?"),
                                          dist.metadata["Name"] if dist is not None else None,
                                          dist.version if dist is not None else None), ep.load))
        for plugin, load in found:
            if not self._wanted(plugin.name):
                log.debug("plugin_skipped", plugin=plugin.name, reason="allow/block list")
                continue
            if plugin.name in self._info:
                self._clash(plugin.name, plugin.value)
                continue
            self._info[plugin.name] = PluginInfo(name=plugin.name, version=plugin.version,
                                                 distribution=plugin.distribution)
            if plugin.hooks is None:
                self._import(plugin.name, load)
            else:
                self._deferred[plugin.name] = plugin

    def _import(self, name: str, load: Callable[[], object]) -> None:
        try:
            module = load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the host
            self._fail(name, f"import failed: {type(exc).__name__}: {exc}")
            return
        self.add_plugin(module, name=name, _info=self._info[name])

    def _settle_batch(self) -> None:
        unsettled, self._unsettled = self._unsettled or [], None
        for name in unsettled:
            self._settle(name)

    def load(self, names: Iterable[str] | None = None) -> None:
        """Import these deferred entry-point plugins now (None: all of them), with every
        deferred plugin that adds a hook specification or kind they use."""
        with self._loading:
            wanted = [n for n in (list(self._deferred) if names is None else names)
                      if n in self._deferred]
            batch: set[str] = set()
            while wanted:
                name = wanted.pop()
                if name not in batch:
                    batch.add(name)
                    plugin = self._deferred[name]
                    uses = {*(plugin.hooks or ()), *(hook for _, hook in plugin.kinds)}
                    wanted += [n for n, p in self._deferred.items() if p.specs & uses]
            if not batch:
                return
            opened = self._unsettled is None
            if opened:
                self._unsettled = []
            for name in [n for n in self._deferred if n in batch]:  # in entry-point order
                if name in self._deferred:  # not imported meanwhile as another's dependency
                    self._import(name, self._deferred.pop(name).load)
            if opened:
                self._settle_batch()

    def _kind_users(self, kind: str) -> list[KnownPlugin]:
        """The deferred plugins that declare ``kind`` or register into it."""
        hooks = {h for p in self._deferred.values() for k, h in p.kinds if k == kind}
        hooks |= {self._kinds[kind].hook} if kind in self._kinds else set()
        return [p for p in self._deferred.values()
                if hooks & {*(p.hooks or ()), *(h for _, h in p.kinds)}]

    def _load_kind(self, kind: str) -> None:
        """Import the deferred plugins that declare ``kind`` or register into it."""
        with self._loading:
            self.load([p.name for p in self._kind_users(kind)])

    def add_plugin(self, plugin: object, *, name: str, _info: PluginInfo | None = None) -> bool:
        """Register an in-process plugin (a module or object with hookimpls).

        Returns False (and records the failure) when it uses unknown hooks, adds broken hook
        specifications or kinds, or cannot register. While the host is being created the
        hook check waits until every plugin's specifications are in (and failures then show in
        :attr:`failures`).
        """
        if not self._wanted(name):
            return False
        if (_info is None and name in self._info) or name == CORE:
            self._clash(name, repr(plugin))
            return False
        self._info.setdefault(name, _info or PluginInfo(name=name))
        if _info is None:
            self._in_process[name] = plugin
        try:
            self.pm.register(plugin, name=name)
            if self._deferred:  # hook specifications it needs from a plugin not imported yet
                mine = {h for h, c in vars(self.pm.hook).items() if not h.startswith("_")
                        and any(i.plugin_name == name for i in c.get_hookimpls())}
                self.load([n for n, p in self._deferred.items() if p.specs & mine])
            for impl in self._impls("register_hookspecs", name):
                specs: list[object] = []
                impl.function(register=specs.append)
                for spec in specs:
                    self.pm.add_hookspecs(spec)
        except Exception as exc:  # noqa: BLE001 - pluggy and plugins raise several types here
            self._drop(plugin, name, f"invalid plugin: {exc}")
            return False
        if self._unsettled is not None:
            self._unsettled.append(name)
            return True
        return self._settle(name)

    def _impls(self, hook: str, plugin_name: str) -> list[Any]:
        caller = getattr(self.pm.hook, hook)
        return [i for i in caller.get_hookimpls() if i.plugin_name == plugin_name]

    def _settle(self, name: str) -> bool:
        """Adopt the kinds a plugin declares and check its hooks (pluggy's ``check_pending``
        strictness, for this plugin alone); on any problem the plugin is dropped whole."""
        plugin = self.pm.get_plugin(name)
        try:
            kinds = self._declared_kinds(name)
            for hook_name, caller in vars(self.pm.hook).items():
                if hook_name.startswith("_") or caller.has_spec():
                    continue
                for impl in caller.get_hookimpls():
                    if impl.plugin_name == name and not impl.optionalhook:
                        raise PluginError(f"unknown hook {hook_name!r} in plugin {name!r}"
                                          + self._did_you_mean(hook_name))
        except Exception as exc:  # noqa: BLE001 - isolate each plugin
            self._drop(plugin, name, f"invalid plugin: {exc}")
            return False
        for kind in kinds:
            self._kinds[kind.name] = kind
            if name in self._info:
                self._info[name].kinds.append(kind.name)
        self._registry = None
        log.debug("plugin_loaded", plugin=name)
        return True

    def _did_you_mean(self, hook_name: str) -> str:
        """``; did you mean 'register_validators'?`` for a misspelt hook, else nothing."""
        known = [n for n, c in vars(self.pm.hook).items() if not n.startswith("_") and
                 c.has_spec()]
        from difflib import get_close_matches

        close = get_close_matches(hook_name, known, n=1)
        return f"; did you mean {close[0]!r}?" if close else ""

    def _declared_kinds(self, name: str) -> list[PluginKind]:
        declared: list[PluginKind] = []
        for impl in self._impls("register_plugin_kinds", name):
            impl.function(register=declared.append)
        seen = set(self._kinds)
        for kind in declared:
            if not isinstance(kind, PluginKind):
                raise PluginError(f"register_plugin_kinds expects PluginKind, not {kind!r}")
            if not kind.name or kind.name in seen:
                raise PluginError(f"plugin kind {kind.name!r} is already declared")
            if not isinstance(kind.interface, type):
                raise PluginError(f"plugin kind {kind.name!r}: interface must be a class")
            caller = getattr(self.pm.hook, kind.hook, None)
            if caller is None or not caller.has_spec():
                raise PluginError(f"plugin kind {kind.name!r}: hook {kind.hook!r} has no "
                                  "specification (add one with register_hookspecs)")
            if tuple(caller.spec.argnames) != ("register",):
                raise PluginError(f"plugin kind {kind.name!r}: hook {kind.hook!r} must take "
                                  "exactly one argument, 'register'")
            seen.add(kind.name)
        return declared

    def _drop(self, plugin: object, name: str, message: str) -> None:
        if plugin is not None and self.pm.is_registered(plugin):
            self.pm.unregister(plugin)
        self._fail(name, message)

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
        for kind in self._kinds.values():
            for impl in self._impls(kind.hook, plugin_name):

                def register(factory: Any, *, name: str | None = None,
                             aliases: Sequence[str] = (), _kind: PluginKind = kind) -> None:
                    reg_name = name or getattr(factory, "name", None)
                    if not isinstance(reg_name, str) or not reg_name:
                        raise PluginError(f"{_kind.name} {factory!r} has no 'name'")
                    base = _kind.interface
                    if isinstance(factory, type) and not issubclass(factory, base):
                        raise PluginError(f"{factory!r} does not implement {base.__name__}")
                    if isinstance(aliases, str) or not all(
                            isinstance(a, str) and a and a != reg_name for a in aliases):
                        raise PluginError(f"{_kind.name} {reg_name!r}: aliases must be other "
                                          f"names, not {aliases!r}")
                    collected.append(Registration(_kind.name, reg_name, factory, plugin_name))
                    collected.extend(Registration(_kind.name, alias, factory, plugin_name,
                                                  alias_of=reg_name) for alias in aliases)

                try:
                    impl.function(register=register)
                except Exception as exc:  # isolate each plugin: re-raised typed
                    raise PluginError(f"{kind.hook} raised {type(exc).__name__}: {exc}") from exc
        return collected

    def _build_registry(self) -> dict[str, dict[str, Registration]]:
        registry: dict[str, dict[str, Registration]] = {kind: {} for kind in self._kinds}
        for plugin_name in self._info:  # discovery order, however late a plugin was imported
            if plugin_name in self._failures or not self.pm.has_plugin(plugin_name):
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
                info = self._info[plugin_name]
                if reg.alias_of is None:
                    info.registers.setdefault(reg.kind, []).append(reg.name)
                else:
                    info.aliases.setdefault(reg.kind, {})[reg.name] = reg.alias_of
        return registry

    @property
    def failures(self) -> dict[str, str]:
        """Plugins that failed to import, validate or register (name -> reason)."""
        self.registry  # noqa: B018 - registration errors surface when the registry is built
        return dict(self._failures)

    @property
    def registry(self) -> dict[str, dict[str, Registration]]:
        """Every registration by kind and name (imports every deferred plugin)."""
        self.load()
        return self._loaded_registry()

    def _loaded_registry(self) -> dict[str, dict[str, Registration]]:
        if self._registry is None:
            for info in self._info.values():
                info.registers.clear()
                info.aliases.clear()
            self._registry = self._build_registry()
        return self._registry

    def kinds(self) -> list[PluginKind]:
        """The plugin kinds this host knows: the built-ins and those plugins declared."""
        with self._loading:
            self.load([n for n, p in self._deferred.items() if p.kinds])
        return sorted(self._kinds.values(), key=lambda kind: kind.name)

    def names(self, kind: str) -> list[str]:
        """The registered names of ``kind`` (old names kept as aliases are not listed; ``get``
        and ``create`` still take them)."""
        self._check_kind(kind)
        return sorted(n for n, r in self._loaded_registry()[kind].items() if r.alias_of is None)

    def declared(self, kind: str) -> dict[str, dict[str, str | None]]:
        """The registered classes of ``kind`` by name (aliases left out), each with the kind's
        :attr:`~rtlforge.core.hookspecs.PluginKind.facts`; a factory that is not a class of the
        kind's interface declares nothing and is left out. A plugin not imported yet answers
        from what the manifest recorded, so choosing (a pipeline's validators by stage and
        toolchain) imports nothing; one with nothing recorded is imported."""
        with self._loading:
            if kind not in self._kinds:  # declared by a plugin: import it (or say it is unknown)
                self._check_kind(kind)
            recorded = self._recorded(kind)
            if recorded is None:  # a plugin to import first: everything as before
                self._check_kind(kind)
                recorded = {}
            spec = self._kinds[kind]
            found = {name: {fact: getattr(reg.factory, fact, None) for fact in spec.facts}
                     for name, reg in self._loaded_registry()[kind].items()
                     if reg.alias_of is None and isinstance(reg.factory, type)
                     and issubclass(reg.factory, spec.interface)}
            found.update({name: facts for name, (_, facts) in recorded.items()
                          if facts is not None})
            return dict(sorted(found.items()))

    def _recorded(self, kind: str) -> dict[str, tuple[str, dict[str, str | None] | None]] | None:
        """What the plugins not imported yet register into ``kind`` (a known kind), as
        recorded: name -> (plugin, facts; None for a factory or an alias). None when one of
        them recorded nothing or a name would clash with an imported plugin's (then they are
        imported, as ``names`` does)."""
        loaded = self._loaded_registry()[kind]
        out: dict[str, tuple[str, dict[str, str | None] | None]] = {}
        for plugin in self._kind_users(kind):
            if plugin.registers is None:
                return None
            for reg_kind, name, alias_of, facts in plugin.registers:
                if reg_kind != kind:
                    continue
                if name in loaded or name in out:
                    return None
                out[name] = (plugin.name, dict(facts) if facts is not None and alias_of is None
                             else None)
        return out

    def get(self, kind: str, name: str) -> Callable[..., Any]:
        """The registered class/factory, or a PluginError that lists what is available.

        Where the manifest recorded which plugin registers ``name``, only that plugin (and
        those whose hook specifications it needs) is imported."""
        with self._loading:
            recorded = self._recorded(kind) if kind in self._kinds else None
            if recorded is not None:
                if name in recorded:
                    self.load([recorded[name][0]])
                found = self._loaded_registry()[kind].get(name)
                if found is not None:
                    return found.factory
        self._check_kind(kind)
        try:
            return self._loaded_registry()[kind][name].factory
        except KeyError:
            from difflib import get_close_matches

            available = ", ".join(self.names(kind)) or "none"
            close = get_close_matches(name, self.names(kind), n=1, cutoff=0.6)
            guess = f"; did you mean {close[0]!r}?" if close else ""
            raise PluginError(
                f"no {kind} named {name!r} is registered{guess} (available: {available})"
            ) from None

    def options_model(self, kind: str, name: str) -> type[BaseModel]:
        """The pydantic model of a plugin's options (see :mod:`rtlforge.core.options`)."""
        factory = self.get(kind, name)
        cached = self._options.get(id(factory))
        if cached is None or cached[0] is not factory:
            cached = self._options[id(factory)] = (factory, options_model(factory))
        return cached[1]

    def options(self, kind: str, name: str) -> list[OptionInfo]:
        """A plugin's options (name, type, default, description) for listings."""
        return describe_options(self.options_model(kind, name))

    @overload
    def create(self, kind: Literal["validator"], name: str, **options: Any) -> Validator: ...
    @overload
    def create(self, kind: Literal["generator"], name: str, **options: Any) -> Generator: ...
    @overload
    def create(self, kind: Literal["ppa_estimator"], name: str,
               **options: Any) -> PPAEstimator: ...
    @overload
    def create(self, kind: Literal["reward"], name: str, **options: Any) -> Reward: ...
    @overload
    def create(self, kind: Literal["archive"], name: str, **options: Any) -> Archive: ...
    @overload
    def create(self, kind: Literal["trainer"], name: str, **options: Any) -> Trainer: ...
    @overload
    def create(self, kind: Literal["executor"], name: str, **options: Any) -> Executor: ...
    @overload
    def create(self, kind: str, name: str, **options: Any) -> Any: ...

    def create(self, kind: str, name: str, **options: Any) -> Any:
        """An instance of the kind's interface (a :class:`Validator` for ``"validator"``),
        built from options checked against the plugin's options model.

        Raises :class:`~rtlforge.core.errors.PluginOptionsError` (a PluginError) for unknown,
        missing or mistyped options rather than the constructor's ``TypeError``, and a
        PluginError when a registered factory builds something that is not the kind's
        interface, so callers need not check again.
        """
        factory = self.get(kind, name)
        checked = validate_options(self.options_model(kind, name), options,
                                   what=f"{kind} {name!r}")
        made = factory(**checked)
        interface = self._kinds[kind].interface
        try:
            fits = isinstance(made, interface)
        except TypeError:  # a Protocol that is not runtime-checkable: nothing to check
            fits = True
        if not fits:
            raise PluginError(f"{kind} {name!r} built a {type(made).__name__}, which is not a "
                              f"{interface.__name__}")
        return made

    def describe(self) -> list[PluginInfo]:
        self.registry  # noqa: B018 - populate 'registers'
        return sorted(self._info.values(), key=lambda info: info.name)

    def _check_kind(self, kind: str) -> None:
        self._load_kind(kind)
        if kind not in self._kinds:
            raise PluginError(f"unknown plugin kind {kind!r}; one of {sorted(self._kinds)}")
