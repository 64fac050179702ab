"""Building blocks every ``rtlforge`` command shares, built-in or added by a plugin.

The CLI (:mod:`rtlforge.cli`) sits above every technique; plugins add commands through the
``register_commands(cli, host)`` hook and take what they share with the built-ins from here, so
nothing below the CLI imports it.

Exit codes (stable, used by tooling): 0 pass / success, 1 the design did not pass (fail, error,
timeout), 2 usage or input error, 3 infrastructure error (tool missing, sandbox failure, a plugin
that failed to load: ``rtlforge plugins``).
"""

from __future__ import annotations

import contextlib
import gc
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Literal

import click

from rtlforge.core.errors import PluginOptionsError, RtlforgeError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from rtlforge.core.interfaces import Generator, PPAEstimator
    from rtlforge.core.models import SourceFile, Task, Verdict
    from rtlforge.core.options import PluginSpec
    from rtlforge.core.plugins import PluginHost

# Only what every command needs is imported here (click, the error classes): the ``rtlforge``
# group imports this module for --help too, so pydantic and the models load inside the helpers.

#: Exit codes of every command, plugin commands included (see the module docstring).
EXIT_OK, EXIT_NOT_PASSED, EXIT_USAGE, EXIT_INFRA = 0, 1, 2, 3


class Finished(SystemExit):
    """A command's end whose process needs no interpreter teardown after it.

    ``rtlforge``'s entry point then runs the exit handlers (run directories, jails, logging),
    flushes the output and ends the process without tearing the interpreter down, ~35 ms
    sooner (a one-shot ``validate`` spends that much freeing pydantic's and the plugins'
    objects). Raise it only when everything the command wrote is closed. Anywhere else (click's
    test runner, a host calling the command) it is the ``SystemExit`` it derives from.
    """


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection in a command's set-up: importing pydantic, the models and
    the plugins allocates much and frees next to nothing, so the collections it triggers only
    cost time (~14 ms of a ``validate``). On the way out, whatever ends the block, what it
    allocated is moved to the oldest generation unexamined (``gc.freeze()`` then
    ``gc.unfreeze()``; otherwise the next allocation would examine all of it at once, ~15 ms)
    and the collector's state is restored: cycles it left are found by the next full
    collection. A process that froze objects itself keeps them frozen: the move is skipped."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()


_HOST_FACTORY = "rtlforge.host_factory"


def command_host(ctx: click.Context | None = None) -> PluginHost:
    """The plugin host of this command line invocation: the root context's ``obj``.

    Made when a command first asks, once per invocation (its allow/block lists then hold for
    every command, and plugins load once), by the factory the ``rtlforge`` group set with
    :func:`set_host_factory` (one that imports each plugin when it is used, from the plugin
    manifest; :meth:`PluginHost.default` when ``RTLFORGE_PLUGIN_CACHE=off``), else
    :meth:`PluginHost.default`; ``CliRunner().invoke(cli, args, obj=host)`` passes one in. A
    plugin's command also gets it as ``register_commands``'s ``host``. Outside any click context
    it is a fresh :meth:`PluginHost.default`.
    """
    from rtlforge.core.plugins import PluginHost

    ctx = ctx or click.get_current_context(silent=True)
    if ctx is None:
        return PluginHost.default()
    root = ctx.find_root()
    if not isinstance(root.obj, PluginHost):
        make: Callable[[], PluginHost] = root.meta.get(_HOST_FACTORY, PluginHost.default)
        root.obj = make()
    return root.obj


def set_host_factory(ctx: click.Context, make: Callable[[], PluginHost]) -> None:
    """How :func:`command_host` makes this invocation's host, unless one was passed in."""
    ctx.find_root().meta[_HOST_FACTORY] = make


#: How every command selects plugins (documented in docs/plugins.md).
PLUGIN_OPTION_HELP = ("[NAME.]KEY=VALUE: an option of the selected {kind} NAME, typed by its "
                      "options model (repeatable; the NAME. prefix may be left out when one "
                      "{kind} is selected; see `rtlforge plugins`).")

#: ``--simulator``: the toolchains a pipeline can be built for.
SIMULATOR_HELP = ("Toolchain whose lint and simulate validators run: icarus, verilator, or one "
                   "a plugin declares (see `rtlforge plugins`).")


def plugin_specs(host: PluginHost, kind: str, names: tuple[str, ...], items: tuple[str, ...],
                 flag: str, *, supplied: tuple[str, ...] = ()) -> list[PluginSpec]:
    """``--KIND NAME`` (repeatable) with ``--KIND-option [NAME.]KEY=VALUE``, checked now.

    An unknown name (with a "did you mean"), an option naming no selected plugin, an unknown
    option or a value of the wrong type is a usage error before any work starts. ``supplied``
    names options the command adds itself (a reward's ``tasks``).
    """
    from rtlforge.core.options import PluginSpec

    try:
        for name in names:
            host.get(kind, name)
        grouped = group_option_strings(list(dict.fromkeys(names)), items, flag=flag)
        return [PluginSpec(name=name, options=coerce_option_strings(
                    host.options_model(kind, name), split_option_strings(raw, flag=flag),
                    what=f"{kind} {name!r} ({flag})", supplied=supplied))
                for name, raw in grouped.items()]
    except RtlforgeError as exc:
        raise click.UsageError(str(exc)) from exc


def option_pairs(items: tuple[str, ...], flag: str) -> dict[str, Any]:
    """``k=v`` pairs as text; the generator's options model types them."""
    try:
        return split_option_strings(items, flag=flag)
    except PluginOptionsError as exc:
        raise click.UsageError(str(exc)) from exc


def create_generator(host: PluginHost, name: str, options: dict[str, Any]) -> Generator:
    """Generator ``name`` with ``--generator-option`` text typed by its options model; an
    unknown generator or option is a usage error before any work starts."""
    try:
        typed = coerce_option_strings(host.options_model("generator", name), options,
                                      what=f"generator {name!r} (--generator-option)")
        return host.create("generator", name, **typed)
    except (RtlforgeError, TypeError, ValueError) as exc:
        raise click.UsageError(f"generator {name!r}: {exc}") from exc


def prepare_estimator(estimator: PPAEstimator) -> None:
    """Read what a PPA estimator is configured with (its liberty) now: a bad ``--liberty`` is
    then a usage error before any work, not one failure per design after all of it."""
    estimator.cache_key()


#: ``--tasks``: what ``load_task_map`` reads (``--format`` picks one of TASK_FORMATS).
TASKS_HELP = ("A task suite (task.toml folders), an RTLLM-layout folder, or a VerilogEval v2 "
              "checkout / dataset folder (ProbNNN_name_{prompt.txt,ref.sv,test.sv}).")


def load_task_map(root: Path, fmt: str) -> dict[str, Task]:
    """Tasks under ``root`` by id (:func:`rtlforge.tasks.loader.find_tasks`); a VerilogEval
    problem that cannot be loaded is skipped with a warning on stderr rather than failing the
    whole run. Finding none is a usage error that says which layouts were looked for."""
    from rtlforge.tasks.loader import NoTasksError, find_tasks

    try:
        found = find_tasks(root, fmt)
    except NoTasksError as exc:
        raise click.UsageError(str(exc)) from exc
    for reason in found.skipped:
        click.secho(f"warning: skipped {reason}", fg="yellow", err=True)
    return {t.id: t for t in found.tasks}


def design_top(files: Sequence[SourceFile], top: str | None) -> str:
    """The top module of a command's design files: ``top`` when it names a declared module,
    else the one module no other file instantiates. A typo, no module or an ambiguous design
    is a usage error (exit 2) naming what the files declare."""
    from rtlforge.eda.modules import scan_modules, top_modules

    scans = [scan_modules(f.content) for f in files]
    declared = [name for scan in scans for name in scan.declared]
    names = ", ".join(f.name for f in files)
    if not declared:
        if top is not None and not all(scan.ok for scan in scans):
            return top  # a text the scanner cannot read: the tool has the last word
        raise click.UsageError(f"no module declaration found in {names}"
                               + ("" if top else "; pass --top NAME"))
    if top is not None:
        if top not in declared and all(scan.ok for scan in scans):
            raise click.UsageError(f"--top {top!r}: no such module in {names} "
                                   f"(declared: {', '.join(declared)})")
        return top
    roots = top_modules([f.content for f in files])
    if len(roots) != 1:
        raise click.UsageError(f"cannot tell the top module among {', '.join(declared)}; "
                               "pass --top NAME")
    return roots[0]


def positive_ints(text: str, flag: str) -> list[int]:
    """``1,5,10`` as sorted distinct positive integers; anything else is a usage error that
    names the flag (not Python's ``int()`` message)."""
    values = set()
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if not item.isdigit() or int(item) < 1:
            raise click.UsageError(f"{flag}: {item!r} is not a positive integer "
                                   f"(expected a comma-separated list such as 1,5,10)")
        values.add(int(item))
    if not values:
        raise click.UsageError(f"{flag}: give at least one positive integer, such as 1,5,10")
    return sorted(values)


def exit_code(verdict: Verdict) -> int:
    from rtlforge.core.models import Verdict

    if verdict is Verdict.PASS:
        return EXIT_OK
    if verdict is Verdict.INFRA_ERROR:
        return EXIT_INFRA
    return EXIT_NOT_PASSED


def stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


# ------------------------------------------------------------------ KEY=VALUE option text


def _accepts_text(annotation: Any) -> bool:
    """Whether a raw CLI string is already a value of this type (no JSON decoding wanted)."""
    if annotation is str or (isinstance(annotation, type) and issubclass(annotation, PurePath)):
        return True
    if typing.get_origin(annotation) is Literal:
        return any(isinstance(a, str) for a in typing.get_args(annotation))
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_accepts_text(a) for a in typing.get_args(annotation))
    return False


def parse_option_strings(model: type[BaseModel], items: Iterable[str], *,
                         flag: str, what: str) -> dict[str, Any]:
    """``KEY=VALUE`` strings typed by ``model`` (:func:`split_option_strings`, then
    :func:`coerce_option_strings`)."""
    return coerce_option_strings(model, split_option_strings(items, flag=flag),
                                 what=f"{what} ({flag})")


def split_option_strings(items: Iterable[str], *, flag: str) -> dict[str, Any]:
    """``KEY=VALUE`` strings as text (``-`` in a key reads as ``_``; a repeated key collects a
    list, so ``path=a path=b`` gives two paths), still untyped."""
    raw: dict[str, Any] = {}
    repeated: set[str] = set()
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise PluginOptionsError(f"{flag} {item!r}: expected KEY=VALUE")
        key = key.replace("-", "_")
        if key not in raw:
            raw[key] = value
        elif key in repeated:
            raw[key].append(value)
        else:
            raw[key] = [raw[key], value]
            repeated.add(key)
    return raw


def group_option_strings(names: Sequence[str], items: Iterable[str], *,
                         flag: str) -> dict[str, list[str]]:
    """``[NAME.]KEY=VALUE`` strings per selected plugin, as ``KEY=VALUE`` for
    :func:`parse_option_strings`. The ``NAME.`` prefix may be left out when one plugin is
    selected; naming one that is not selected is an error (nothing is silently dropped)."""
    grouped: dict[str, list[str]] = {name: [] for name in names}
    for item in items:
        key, sep, value = item.partition("=")
        owner, dot, key = key.rpartition(".")
        if not dot:
            if len(grouped) != 1:
                chosen = ", ".join(grouped) or "none"
                raise PluginOptionsError(f"{flag} {item!r}: expected NAME.KEY=VALUE naming one "
                                         f"of the selected plugins ({chosen})")
            owner = next(iter(grouped))
        if owner not in grouped:
            raise PluginOptionsError(f"{flag} {item!r}: {owner!r} is not selected (selected: "
                                     f"{', '.join(grouped) or 'none'})")
        grouped[owner].append(f"{key}{sep}{value}")
    return grouped


def coerce_option_strings(model: type[BaseModel], raw: dict[str, Any], *,
                          what: str, supplied: Iterable[str] = ()) -> dict[str, Any]:
    """Option values given as text (or lists of text) typed the way ``model`` says.

    "3" becomes 3 for an int and "true" True for a bool; JSON is decoded only for options
    whose type does not take text (``extra_body={"a": 1}``) and for untyped ones. Unknown
    options and values that do not fit are a :class:`PluginOptionsError` naming them.
    """
    from rtlforge.core.options import public_options, validate_options
    from rtlforge.core.untrusted import load_json

    public = public_options(model)
    decoded: dict[str, Any] = {}
    for name, value in raw.items():
        field = public.get(name)
        if field is not None and isinstance(value, str) and not _accepts_text(
                field[1].annotation) and (field[1].annotation is Any
                                          or value.lstrip()[:1] in ("{", "[")):
            with contextlib.suppress(ValueError):  # not JSON after all: the model judges it
                value = load_json(value)
        decoded[name] = value
    return validate_options(model, decoded, what=what, supplied=supplied)
