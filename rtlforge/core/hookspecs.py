"""Hook specifications: the only contract between rtlforge and its plugins.

Every ``register_*`` hook receives a ``register`` callable. A plugin calls it once per thing it
contributes, with the class (or a factory) that implements the matching interface::

    from rtlforge import hookimpl

    @hookimpl
    def register_validators(register):
        register(MyValidator)

The contract is open, like pytest's ``pytest_addhooks``: a plugin may add hook specifications of
its own (:func:`register_hookspecs`) and declare new plugin kinds (:func:`register_plugin_kinds`),
each a name, an interface ABC and the ``register_*`` hook that collects it. An orchestration
package can so add ``register_agent_roles`` without touching the core. The built-in kinds are
declared through the same hook (see ``rtlforge.core.interfaces.BUILTIN_KINDS`` and
``rtlforge.core.executor.EXECUTOR_KIND``), and built-in
plugins are discovered through the same ``rtlforge`` entry-point group as third-party ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pluggy

PROJECT = "rtlforge"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

#: ``register(factory, *, name=None, aliases=())`` in every ``register_*`` hook of a plugin
#: kind: ``name`` overrides the factory's own, ``aliases`` are old names that still resolve.
Register = Callable[..., None]


@dataclass(frozen=True)
class PluginKind:
    """One kind of plugin: what ``PluginHost.get(kind, name)`` hands out.

    ``hook`` names the ``register_*`` hook (a spec with one ``register`` argument) through which
    plugins contribute ``interface`` implementations; it may be a spec the declaring plugin adds
    itself with :func:`register_hookspecs`. ``facts`` name class attributes (text or None) that
    describe a registered class, so that a caller can choose among them before importing any:
    the CLI's plugin manifest records them (``PluginHost.declared``).
    """

    name: str
    interface: type
    hook: str
    description: str = ""
    facts: tuple[str, ...] = ()


@hookspec
def register_hookspecs(register: Register) -> None:
    """Add hook specifications: ``register(module_or_class)`` holding ``@hookspec`` functions.

    Called when the plugin is added, before its own hooks are checked, so a plugin may implement
    the hooks it declares. Plugins that implement hooks another plugin declares work whatever the
    order the two are loaded in, as long as both are loaded when the host is created.
    """


@hookspec
def register_plugin_kinds(register: Register) -> None:
    """Declare new plugin kinds: ``register(PluginKind(name, interface, hook))``."""


@hookspec
def register_validators(register: Register) -> None:
    """Register :class:`~rtlforge.core.interfaces.Validator` classes."""


@hookspec
def register_generators(register: Register) -> None:
    """Register :class:`~rtlforge.core.interfaces.Generator` classes."""


@hookspec
def register_ppa_estimators(register: Register) -> None:
    """Register :class:`~rtlforge.core.interfaces.PPAEstimator` classes."""


@hookspec
def register_rewards(register: Register) -> None:
    """Register :class:`~rtlforge.core.interfaces.Reward` classes."""


@hookspec
def register_archives(register: Register) -> None:
    """Register :class:`~rtlforge.core.interfaces.Archive` classes."""


@hookspec
def register_trainers(register: Register) -> None:
    """Register :class:`~rtlforge.core.interfaces.Trainer` classes."""


@hookspec
def register_executors(register: Register) -> None:
    """Register :class:`~rtlforge.core.executor.Executor` classes (thread pools, clusters)."""


@hookspec
def register_commands(cli: Any, host: Any) -> None:
    """Add click commands to the ``rtlforge`` CLI group. ``host`` is the invocation's
    :class:`~rtlforge.core.plugins.PluginHost` (an implementation may leave it out). Shared
    helpers and exit codes are in :mod:`rtlforge.cmdline`; never import the CLI itself."""
