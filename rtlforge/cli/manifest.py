"""The plugin manifest: what the installed plugins provide, read without importing them.

Listing the plugins means importing them (numpy, pyslang, ... behind them), which cost every
``rtlforge`` call a second whatever it ran. The manifest records, once, what a host made from
the installed entry points knows: for each plugin the entry point, its distribution, the hooks
it implements, the hook specifications and kinds it adds (:class:`~rtlforge.core.plugins.
KnownPlugin`); every command with its help text and the plugin that adds it; and what
``rtlforge plugins`` prints. With it ``rtlforge --help`` and ``rtlforge plugins`` import no
plugin, and a command's host imports a plugin only when it is used.

It is kept per interpreter, ``sys.path`` and allow/block lists in ``$RTLFORGE_PLUGIN_CACHE``
(a folder; ``off`` keeps none), else ``$RTLFORGE_CACHE_DIR/plugins``, else
``$XDG_CACHE_HOME/rtlforge/plugins``, else ``~/.cache/rtlforge/plugins``, and used only while
what it was made from is unchanged:

- every distribution's metadata folder (``*.dist-info``, ``*.egg-info``) and ``.pth`` file on
  ``sys.path``, by name and modification time: installing, upgrading, reinstalling or removing
  anything (a plugin, or a library a plugin registers only when present) changes it;
- for a plugin package imported from outside the folder its distribution is installed in (an
  editable install, a checkout on ``PYTHONPATH``, a plugin without a distribution), every file
  and folder of the package, by modification time, and where each plugin's top-level package is
  found now;

otherwise it is made again, by importing every plugin once (the run that notices pays that). A
manifest that cannot be read, or does not have the expected shape, counts as missing. Nothing is
kept when a plugin failed to load, a name clashed or a plugin's ``register_commands`` raised:
then every run imports every plugin and reports the problem, as without a manifest.

A plugin's registrations, options and commands must therefore follow from its installed code,
not from environment variables or the working directory (a plugin that breaks this shows stale
entries until something installed changes). With ``RTLFORGE_PLUGIN_CACHE=off`` no manifest is
read or kept and the CLI's host is :meth:`PluginHost.default` (every plugin imported), as before.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from rtlforge.core.cachedir import cache_dir

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from rtlforge.core.plugins import KnownPlugin, PluginHost, PluginInfo

#: Bumped whenever what a manifest holds changes meaning.
FORMAT = 2
CACHE_ENV = "RTLFORGE_PLUGIN_CACHE"
_METADATA_SUFFIXES = (".dist-info", ".egg-info", ".egg-link", ".pth")
_STALE_AFTER_S = 30 * 86400  # other manifests untouched this long are removed on a write


def cache_file() -> str | None:
    """This interpreter's manifest file, or None when ``RTLFORGE_PLUGIN_CACHE`` is ``off``."""
    import hashlib

    folder = os.environ.get(CACHE_ENV)
    if folder is not None and folder.strip().lower() in ("", "off", "0", "no", "false"):
        return None
    if folder is None:
        folder = cache_dir("plugins")
    key = hashlib.sha256(json.dumps(_environment(), sort_keys=True).encode()).hexdigest()[:16]
    return os.path.join(folder, f"manifest-{key}.json")


def _environment() -> dict[str, Any]:
    """What selects a manifest: the interpreter, its import path, the allow/block lists."""
    return {"format": FORMAT, "python": sys.version, "executable": sys.executable,
            "path": list(sys.path), "allow": os.environ.get("RTLFORGE_PLUGINS_ALLOW", ""),
            "block": os.environ.get("RTLFORGE_PLUGINS_BLOCK", "")}


def _installed() -> list[list[Any]]:
    """Every distribution's metadata folder and ``.pth`` file on ``sys.path``, with its mtime."""
    found = []
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as listing:
                found += [[entry, item.name, item.stat().st_mtime_ns] for item in listing
                          if item.name.endswith(_METADATA_SUFFIXES)]
        except OSError:  # missing, a zip file, unreadable: nothing installed there to see
            continue
    return sorted(found)


def _where(top: str) -> list[Any] | None:
    """Where a top-level module is found now (its origin and package folders), not importing
    it; None when it is not found."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    return [spec.origin, list(spec.submodule_search_locations or ())]


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _tree(folder: str) -> list[list[Any]]:
    """Every folder and file under ``folder`` (bytecode caches left out), with its mtime."""
    found = []
    for path, folders, files in os.walk(folder):
        folders[:] = [f for f in folders if f != "__pycache__" and not f.startswith(".")]
        found.append([path, _mtime(path)])
        found += [[os.path.join(path, f), _mtime(os.path.join(path, f))] for f in files]
    return found


def _snapshot(eps: list[EntryPoint]) -> dict[str, Any]:
    """What a manifest made now depends on; taken before any plugin is imported, so that a
    change made while the plugins load shows as a difference on the next run."""
    tops: dict[str, list[Any] | None] = {}
    watched: list[list[Any]] = []
    for ep in eps:
        top = ep.value.split(":")[0].split("[")[0].strip().split(".")[0]
        if top in tops:
            continue
        tops[top] = where = _where(top)
        if where is None:
            continue
        origin, folders = where
        paths = [p for p in (*folders, origin) if p] if folders else [origin] if origin else []
        dist = getattr(ep, "dist", None)
        site = str(dist.locate_file("")) if dist is not None else None
        if site is None or not all(os.path.abspath(p).startswith(os.path.join(
                os.path.abspath(site), "")) for p in paths):
            for folder in folders:
                watched += _tree(folder)
            if not folders and origin:
                watched.append([origin, _mtime(origin)])
    return {"format": FORMAT, "environment": _environment(), "installed": _installed(),
            "tops": tops, "watched": watched}


def _current(data: Mapping[str, Any]) -> bool:
    """Whether a manifest's snapshot still describes what is installed."""
    return (data.get("format") == FORMAT and data.get("environment") == _environment()
            and data.get("installed") == _installed()
            and all(_mtime(path) == mtime for path, mtime in data["watched"])
            and all(_where(top) == where for top, where in data["tops"].items()))


@dataclass(frozen=True)
class Manifest:
    """A read manifest: plain data, checked when read, so that using it cannot fail."""

    plugins: tuple[dict[str, Any], ...]  # KnownPlugin fields, in entry-point order
    commands: dict[str, dict[str, Any]]  # plugin command name -> its plugin and help fields
    builtins: dict[str, dict[str, Any]]  # built-in command ``module:attr`` -> help fields
    report: dict[str, list[str]]  # "text" / "json": what `rtlforge plugins` prints

    def known(self) -> list[KnownPlugin]:
        from rtlforge.core.plugins import KnownPlugin

        return [KnownPlugin(name=p["name"], value=p["value"], distribution=p["distribution"],
                            version=p["version"], hooks=frozenset(p["hooks"]),
                            specs=frozenset(p["specs"]),
                            kinds=tuple((k, h) for k, h in p["kinds"]),
                            registers=tuple(
                                (k, n, a, None if f is None else tuple((x, v) for x, v in f))
                                for k, n, a, f in p["registers"]))
                for p in self.plugins]

    def stub(self, name: str, target: str | None = None) -> click.Command | None:
        """A command that knows only the help of plugin command ``name`` (of the built-in
        ``module:attr`` ``target`` when given), for listings; None when not recorded."""
        info = self.builtins.get(target) if target is not None else self.commands.get(name)
        if info is None:
            return None
        return click.Command(name, help=info["help"], short_help=info["short_help"],
                             hidden=info["hidden"], deprecated=info["deprecated"])


def _checked(data: Any) -> Manifest:
    """The manifest in ``data`` or a ValueError: nothing of a wrong shape gets past here."""

    def need(ok: bool) -> None:
        if not ok:
            raise ValueError("not a manifest")

    def texts(value: Any, optional: bool = False) -> None:
        need((optional and value is None) or isinstance(value, str))

    need(isinstance(data, dict) and isinstance(data.get("watched"), list)
         and isinstance(data.get("tops"), dict))
    for item in data["watched"]:
        need(isinstance(item, list) and len(item) == 2 and isinstance(item[0], str))
    plugins, commands, report = data.get("plugins"), data.get("commands"), data.get("report")
    builtins = data.get("builtins")
    need(isinstance(plugins, list) and isinstance(commands, dict) and isinstance(report, dict)
         and isinstance(builtins, dict))
    for p in plugins:
        need(isinstance(p, dict) and set(p) == {"name", "value", "distribution", "version",
                                                 "hooks", "specs", "kinds", "registers"})
        for key in ("name", "value"):
            texts(p[key])
        for key in ("distribution", "version"):
            texts(p[key], optional=True)
        for key in ("hooks", "specs"):
            need(isinstance(p[key], list))
            for hook in p[key]:
                texts(hook)
        need(isinstance(p["kinds"], list))
        for pair in p["kinds"]:
            need(isinstance(pair, list) and len(pair) == 2)
            texts(pair[0])
            texts(pair[1])
        need(isinstance(p["registers"], list))
        for reg in p["registers"]:
            need(isinstance(reg, list) and len(reg) == 4)
            texts(reg[0])
            texts(reg[1])
            texts(reg[2], optional=True)
            need(reg[3] is None or isinstance(reg[3], list))
            for fact in reg[3] or ():
                need(isinstance(fact, list) and len(fact) == 2)
                texts(fact[0])
                texts(fact[1], optional=True)
    names = {p["name"] for p in plugins}
    for name, info in [*commands.items(), *((n, {**i, "plugin": None})
                                            for n, i in builtins.items())]:
        need(isinstance(info, dict) and set(info) == {"plugin", "help", "short_help", "hidden",
                                                      "deprecated"})
        need(info["plugin"] is None or info["plugin"] in names)
        texts(info["help"], optional=True)
        texts(info["short_help"], optional=True)
        need(isinstance(info["hidden"], bool) and isinstance(info["deprecated"], (bool, str)))
        need(isinstance(name, str))
    need(set(report) == {"text", "json"})
    for lines in report.values():
        need(isinstance(lines, list))
        for line in lines:
            texts(line)
    need(all(i["plugin"] is not None for i in commands.values()))
    return Manifest(plugins=tuple(plugins), commands=commands, builtins=builtins, report=report)


def read(path: str) -> Manifest | None:
    """The manifest at ``path`` if it is readable, well formed and current, else None."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        manifest = _checked(data)
        return manifest if _current(data) else None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None


def write(path: str, data: dict[str, Any]) -> None:
    """Write atomically (a reader sees the old file or the new one); a cache that cannot be
    written is no error, and manifests nobody has used for a month are removed."""
    folder = os.path.dirname(path)
    temp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(folder, exist_ok=True)
        with open(temp, "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(temp, path)
        now = time.time()
        for name in os.listdir(folder):
            old = os.path.join(folder, name)
            if name.startswith("manifest-") and old != path and \
                    now - os.stat(old).st_mtime > _STALE_AFTER_S:
                os.unlink(old)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp)


def _hooks(host: PluginHost, name: str) -> list[str]:
    return sorted(hook for hook, caller in vars(host.pm.hook).items() if not hook.startswith("_")
                  and any(impl.plugin_name == name for impl in caller.get_hookimpls()))


def _specs(host: PluginHost, name: str) -> list[str]:
    """The hooks plugin ``name`` adds specifications for (its ``register_hookspecs``)."""
    found: set[str] = set()
    for impl in host.pm.hook.register_hookspecs.get_hookimpls():
        if impl.plugin_name == name:
            namespaces: list[object] = []
            impl.function(register=namespaces.append)
            found |= {attr for ns in namespaces for attr in dir(ns)
                      if host.pm.parse_hookspec_opts(ns, attr) is not None}
    return sorted(found)


def load_command(target: str) -> click.Command:
    """The command a ``module:attr`` names, imported."""
    import importlib

    module, _, attr = target.partition(":")
    command: click.Command = getattr(importlib.import_module(module), attr)
    return command


def _registers(host: PluginHost, info: PluginInfo) -> list[list[Any]] | None:
    """What a plugin registers, as ``[kind, name, alias_of, facts]`` (``KnownPlugin``); None
    when a fact is neither text nor None (a manifest could not answer as the classes do)."""
    out: list[list[Any]] = []
    for kind in host.kinds():
        names = info.registers.get(kind.name, [])
        aliases = info.aliases.get(kind.name, {})
        for name in [*names, *aliases]:
            factory = host.get(kind.name, name)
            facts = None
            if name in names and isinstance(factory, type) and issubclass(
                    factory, kind.interface):
                facts = [[fact, getattr(factory, fact, None)] for fact in kind.facts]
                if not all(value is None or isinstance(value, str) for _, value in facts):
                    return None
            out.append([kind.name, name, aliases.get(name), facts])
    return out


def _help(cmd: click.Command) -> dict[str, Any]:
    return {"help": cmd.help, "short_help": cmd.short_help, "hidden": cmd.hidden,
            "deprecated": cmd.deprecated}


def describe(host: PluginHost, eps: list[EntryPoint],
             builtins: Mapping[str, str]) -> dict[str, Any] | None:
    """The manifest of an eagerly loaded host, or None when it has a problem to report (a
    plugin failed, a name clashed, a ``register_commands`` raised). ``builtins`` are the
    built-in commands, ``module:attr`` by name."""
    from rtlforge.cli.plugins import report

    infos = {info.name: info for info in host.describe()}
    if host.failures or host.clashes or set(infos) - {ep.name for ep in eps}:
        return None  # a problem to report, or a plugin that is no entry point
    hooks = {kind.name: kind.hook for kind in host.kinds()}
    plugins, seen = [], set()
    for ep in eps:
        if ep.name not in infos or ep.name in seen:
            continue
        seen.add(ep.name)
        info = infos[ep.name]
        registers = _registers(host, info)
        if registers is None:
            return None
        plugins.append({"name": ep.name, "value": ep.value, "distribution": info.distribution,
                        "version": info.version, "hooks": _hooks(host, ep.name),
                        "specs": _specs(host, ep.name),
                        "kinds": [[kind, hooks[kind]] for kind in info.kinds],
                        "registers": registers})
    added = click.Group()
    owners: dict[str, str | None] = {}
    for impl in host.pm.hook.register_commands.get_hookimpls():  # as RootGroup collects them
        before = dict(added.commands)
        given: dict[str, Any] = {"cli": added, "host": host}
        try:
            impl.function(**{k: given[k] for k in impl.argnames})
        except Exception:  # noqa: BLE001 - not kept: every run then reports it
            return None
        owners.update({n: impl.plugin_name for n, c in added.commands.items()
                       if before.get(n) is not c})
    listing = {}
    for as_json in (False, True):
        out, err, code = report(host, as_json=as_json)
        if err or code:
            return None
        listing["json" if as_json else "text"] = out
    return {"plugins": plugins, "report": listing,
            "commands": {name: {"plugin": owners[name], **_help(cmd)}
                         for name, cmd in added.commands.items()},
            "builtins": {target: _help(load_command(target)) for target in builtins.values()}}


class Installed:
    """The installed plugins of one ``rtlforge`` invocation that makes its own host: the
    manifest when it is current, else every plugin imported once (and the manifest kept)."""

    def __init__(self, builtins: Mapping[str, str]) -> None:
        self._builtins = builtins
        self._manifest: Manifest | None = None
        self._read = False
        self._host: PluginHost | None = None

    def manifest(self) -> Manifest | None:
        """The current manifest; None when there is none to keep (cache off, a problem)."""
        if not self._read:
            self._read = True
            path = cache_file()
            if path is not None:
                self._manifest = read(path) or self._make(path)
        return self._manifest

    def _make(self, path: str) -> Manifest | None:
        from importlib import metadata

        from rtlforge.core.plugins import ENTRY_POINT_GROUP, PluginHost

        eps = list(metadata.entry_points(group=ENTRY_POINT_GROUP))
        snapshot = _snapshot(eps)
        self._host = PluginHost()  # the installed entry points, nothing else
        described = describe(self._host, eps, self._builtins)
        if described is None:
            return None
        data = {**snapshot, **described}
        manifest = _checked(data)
        write(path, data)
        return manifest

    def host(self) -> PluginHost:
        """This invocation's host: deferred imports from the manifest, else every plugin."""
        if self._host is None:
            from rtlforge.core.plugins import PluginHost

            manifest = self.manifest()
            if self._host is None:  # not made while the manifest was
                self._host = (PluginHost(known=manifest.known()) if manifest is not None
                              else PluginHost.default())
        return self._host
