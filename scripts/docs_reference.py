"""The reference pages of the documentation site, generated from the code on every build.

``mkdocs.yml`` names this file under ``hooks:``, so ``mkdocs build`` calls :func:`on_config`
and :func:`on_files`; the pages it adds (``reference/hooks.md``, ``reference/options.md``,
``reference/cli.md`` and ``reference/api/*.md``) exist only in the build, never in ``docs/``,
so they cannot drift from the code. What they list comes from one ``PluginHost`` built from the
installed entry points, exactly what ``rtlforge plugins`` sees: every hook specification (the
core's and those plugins add through ``register_hookspecs``), every plugin kind, every built-in
plugin's options model, and the ``rtlforge`` click group with the commands plugins add through
``register_commands``.

``tests/docs/test_docs_reference.py`` loads this module by path and fails when a hook
specification has no docstring or a built-in plugin's option has no description, using the same
enumeration (:func:`hook_specs`, :func:`builtin_options`), so the test and the site agree.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import click

    from rtlforge.core.options import OptionInfo
    from rtlforge.core.plugins import PluginHost

#: The distribution whose entry points are the built-in plugins.
BUILTIN_DISTRIBUTION = "rtlforge"

#: Modules with a page in the API reference besides the facade's (``rtlforge._MODULES``): what a
#: plugin author or an embedding application imports.
EXTRA_API_MODULES = (
    "rtlforge.core.hookspecs",
    "rtlforge.core.options",
    "rtlforge.core.executor",
    "rtlforge.rewards.base",
    "rtlforge.rewards.columns",
    "rtlforge.rewards.ppa",
    "rtlforge.rewards.adapters",
    "rtlforge.trainers.errors",
    "rtlforge.trainers.config",
    "rtlforge.trainers.metrics",
    "rtlforge.trainers.rng",
    "rtlforge.trainers.checkpoints",
    "rtlforge.trainers.loop",
    "rtlforge.trainers.models",
    "rtlforge.trainers.scoring",
    "rtlforge.agents.base",
    "rtlforge.agents.knowledge.base",
    "rtlforge.agents.guidance.base",
    "rtlforge.testing",
    "rtlforge.cmdline",
)


# ------------------------------------------------------------------------------ enumeration


@dataclass(frozen=True)
class HookSpecDoc:
    """One hook specification as the reference shows it."""

    name: str
    module: str  # where the spec is declared
    signature: str
    doc: str
    firstresult: bool


@dataclass(frozen=True)
class PluginOptionsDoc:
    """The options of one registered built-in plugin."""

    kind: str
    name: str
    plugin: str  # the entry point that registers it
    factory: str  # module.qualname of the registered class or factory
    options: list[OptionInfo]


def reference_host() -> PluginHost:
    """The host the reference describes: every installed entry point, no allow/block list."""
    from rtlforge.core.plugins import PluginHost

    return PluginHost(allow=None, block=())


def hook_specs(host: PluginHost) -> list[HookSpecDoc]:
    """Every hook specification the host knows, the core's first, then by declaring module."""
    out = []
    for name, caller in vars(host.pm.hook).items():
        if name.startswith("_") or not caller.has_spec():
            continue
        spec = caller.spec
        function = spec.function
        module = getattr(spec.namespace, "__name__", None) or function.__module__
        out.append(HookSpecDoc(
            name=name,
            module=module,
            signature=_signature(name, function),
            doc=inspect.cleandoc(function.__doc__ or ""),
            firstresult=bool(spec.opts.get("firstresult")),
        ))
    return sorted(out, key=lambda h: (h.module != "rtlforge.core.hookspecs", h.module, h.name))


def _signature(name: str, function: Any) -> str:
    """``name(param: Type) -> Return`` with annotations as written (they are strings under
    ``from __future__ import annotations``, which ``inspect`` would show quoted)."""
    sig = inspect.signature(function)

    def text(annotation: Any) -> str:
        return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)

    params = [p.name if p.annotation is p.empty else f"{p.name}: {text(p.annotation)}"
              for p in sig.parameters.values()]
    returns = "" if sig.return_annotation is sig.empty else f" -> {text(sig.return_annotation)}"
    return f"{name}({', '.join(params)}){returns}"


def builtin_plugins(host: PluginHost) -> set[str]:
    """Entry-point names of the plugins rtlforge itself ships."""
    return {info.name for info in host.describe() if info.distribution == BUILTIN_DISTRIBUTION}


def builtin_options(host: PluginHost) -> list[PluginOptionsDoc]:
    """The options model of every plugin the built-in entry points register, by kind and name."""
    builtin = builtin_plugins(host)
    out = []
    for kind in host.kinds():
        for name, reg in sorted(host.registry[kind.name].items()):
            if reg.plugin not in builtin:
                continue
            factory = reg.factory
            qualname = getattr(factory, "__qualname__", type(factory).__qualname__)
            options = host.options(kind.name, name)
            # A plugin class that presets its options model (an agent role's ``defaults``)
            # shows its own defaults, not the model's.
            preset = getattr(factory, "defaults", None)
            if isinstance(preset, host.options_model(kind.name, name)):
                options = [replace(o, default=getattr(preset, o.name, o.default))
                           for o in options]
            out.append(PluginOptionsDoc(
                kind=kind.name, name=name, plugin=reg.plugin,
                factory=f"{getattr(factory, '__module__', '?')}.{qualname}",
                options=options,
            ))
    return out


def undocumented_options(docs: list[PluginOptionsDoc]) -> list[str]:
    """``kind name.option`` for every option without a description."""
    return [f"{d.kind} {d.name}.{o.name} ({d.factory})"
            for d in docs for o in d.options if not o.description.strip()]


def undocumented_hooks(specs: list[HookSpecDoc]) -> list[str]:
    """``module.hook`` for every hook specification without a docstring."""
    return [f"{s.module}.{s.name}" for s in specs if not s.doc.strip()]


# ------------------------------------------------------------------------------ rendering

_RST_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):`(~?)([^`]+)`")
_RST_LITERAL = re.compile(r"``(.+?)``")


def rst_to_markdown(text: str) -> str:
    """The reST our docstrings use (``literal``, :class:`~a.B`) as Markdown code spans."""
    def role(match: re.Match[str]) -> str:
        target = match.group(2)
        return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"

    text = _RST_ROLE.sub(role, text)
    text = _RST_LITERAL.sub(lambda m: f"`{m.group(1)}`", text)
    # A reST "::" introducing an indented block reads as a colon; the block stays indented
    # (Markdown shows it as code).
    return re.sub(r"::\n", ":\n", text)


def _cell(value: object) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(str(value).split()).replace("|", "\\|")


def _code(value: object) -> str:
    """A code span for a table cell: Python-Markdown's tables do not split on a ``|`` inside
    one, and a backslash there would show, so only whitespace is normalised."""
    text = " ".join(str(value).split())
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _default_text(value: object) -> str:
    """A default as Python would spell it (an enum member by its value)."""
    return repr(value.value if isinstance(value, Enum) else value)


def render_hooks(host: PluginHost) -> str:
    lines = [
        "# Hooks and plugin kinds",
        "",
        "Generated from the code at build time (`scripts/docs_reference.py`): every hook "
        "specification a `PluginHost` knows after loading the installed plugins, the core's and "
        "those plugins add through `register_hookspecs`, and every plugin kind. How to use them: "
        "[the plugin-authoring guides](../guides/index.md).",
        "",
        "## Plugin kinds",
        "",
        "| kind | interface | collected by | what it is |",
        "|---|---|---|---|",
    ]
    for kind in host.kinds():
        interface = f"{kind.interface.__module__}.{kind.interface.__qualname__}"
        lines.append(f"| `{kind.name}` | {_code(interface)} | `{kind.hook}` | "
                     f"{_cell(kind.description)} |")
    module = None
    for spec in hook_specs(host):
        if spec.module != module:
            module = spec.module
            lines += ["", f"## `{module}`", ""]
        lines += [f"### `{spec.name}`", "", "```python", spec.signature, "```", ""]
        if spec.firstresult:
            lines += ["*firstresult*: the first non-`None` result is returned.", ""]
        lines += [rst_to_markdown(spec.doc), ""]
    return "\n".join(lines) + "\n"


def render_options(host: PluginHost) -> str:
    lines = [
        "# Plugin options",
        "",
        "Generated from the code at build time (`scripts/docs_reference.py`): the options model "
        "of every plugin rtlforge ships, as `host.create(kind, name, **options)`, "
        "`--KIND-option NAME.KEY=VALUE` and `rtlforge plugins` read it. Where the descriptions "
        "come from: [Options and their descriptions](../guides/index.md#options-and-their-"
        "descriptions).",
    ]
    kind = None
    for doc in builtin_options(host):
        if doc.kind != kind:
            kind = doc.kind
            lines += ["", f"## {kind}", ""]
        lines += [f"### `{doc.name}`", "",
                  f"Registered by the `{doc.plugin}` entry point; implemented by "
                  f"{_code(doc.factory)}.", ""]
        if not doc.options:
            lines += ["No options.", ""]
            continue
        lines += ["| option | type | default | description |", "|---|---|---|---|"]
        for opt in doc.options:
            default = "*required*" if opt.required else _code(_default_text(opt.default))
            lines.append(f"| `{opt.name}` | {_code(opt.type)} | {default} | "
                         f"{_cell(rst_to_markdown(opt.description))} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def _commands(command: click.Command, ctx: click.Context) -> Iterator[tuple[click.Command,
                                                                            click.Context]]:
    import click

    yield command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _commands(sub, click.Context(sub, info_name=name, parent=ctx))


def _param_rows(command: click.Command, ctx: click.Context) -> list[str]:
    import click

    rows = []
    for param in command.get_params(ctx):
        if isinstance(param, click.Argument):
            rows.append(f"| `{_cell(param.human_readable_name)}` | argument"
                        f"{' (required)' if param.required else ''} | |")
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        flags, text = record
        rows.append(f"| {_code(flags)} | option | {_cell(text)} |")
    return rows


def render_cli(root: click.Group | None = None) -> str:
    """Every command of the ``rtlforge`` group, built-in and plugin-added, with its options."""
    import click

    if root is None:
        from rtlforge.cli import cli as root
    lines = [
        "# Command line",
        "",
        "Generated from the click commands at build time (`scripts/docs_reference.py`), the "
        "commands plugins add through `register_commands` included. Exit codes: 0 pass or "
        "success, 1 the design did not pass, 2 usage or input error, 3 infrastructure error.",
    ]
    top = click.Context(root, info_name="rtlforge")
    for command, ctx in _commands(root, top):
        path = ctx.command_path
        depth = min(path.count(" ") + 1, 4)
        lines += ["", f"{'#' * (depth + 1)} `{path}`", ""]
        module = getattr(command.callback, "__module__", None)
        if module and ctx.parent is not None:
            lines += [f"Defined in `{module}`.", ""]
        lines += ["```text", command.get_usage(ctx), "```", ""]
        # Wrapped as click wraps it for --help, so the block needs no horizontal scrolling.
        help_text = click.formatting.wrap_text(inspect.cleandoc(command.help or ""), width=72,
                                               preserve_paragraphs=True)
        if help_text:
            lines += ["```text", help_text, "```", ""]
        rows = _param_rows(command, ctx)
        if rows:
            lines += ["| parameter | kind | help |", "|---|---|---|", *rows, ""]
    return "\n".join(lines) + "\n"


def api_modules() -> list[str]:
    """The modules with an API page: the facade's defining modules and :data:`EXTRA_API_MODULES`."""
    import rtlforge

    return sorted({*rtlforge._MODULES, *EXTRA_API_MODULES})


def render_api_index(modules: list[str]) -> str:
    lines = [
        "# API reference",
        "",
        "Generated with mkdocstrings from the docstrings of the public modules: those that "
        "define the names of the `rtlforge` facade (`from rtlforge import Pipeline, ...`) and "
        "those a plugin author imports.",
        "",
    ]
    lines += [f"- [`{m}`]({m}.md)" for m in modules]
    return "\n".join(lines) + "\n"


def render_api_page(module: str) -> str:
    return f"# `{module}`\n\n::: {module}\n"


def pages() -> dict[str, str]:
    """Every generated page: path under ``docs/`` -> Markdown."""
    host = reference_host()
    if host.failures:
        # A plugin that failed to load would be missing from the reference without a word.
        problems = "; ".join(f"{name}: {why}" for name, why in sorted(host.failures.items()))
        raise RuntimeError(f"the reference cannot be generated, plugins failed: {problems}")
    out = {
        "reference/hooks.md": render_hooks(host),
        "reference/options.md": render_options(host),
        "reference/cli.md": render_cli(),
    }
    modules = api_modules()
    out["reference/api/index.md"] = render_api_index(modules)
    for module in modules:
        out[f"reference/api/{module}.md"] = render_api_page(module)
    return out


# ------------------------------------------------------------------------------ mkdocs hooks


def on_config(config: Any) -> Any:
    """Put the generated API pages in the navigation, under the API reference's index."""
    pages = ["reference/api/index.md", *(f"reference/api/{m}.md" for m in api_modules())]

    def replace(items: list[Any]) -> list[Any]:
        out: list[Any] = []
        for item in items:
            if item == "reference/api/index.md":
                out.append({"API": pages})
            elif isinstance(item, dict):
                out.append({key: replace(value) if isinstance(value, list) else value
                            for key, value in item.items()})
            else:
                out.append(item)
        return out

    if config.nav:
        config.nav = replace(config.nav)
    return config


_RENDERED_ROLE = re.compile(
    r":(?:class|func|meth|mod|attr|data|exc|obj):<code>(~?)([^<]+)</code>")


def on_page_content(html: str, **kwargs: Any) -> str:
    """Drop the reST role prefixes mkdocstrings leaves in rendered docstrings
    (``:class:<code>~a.B</code>`` reads as ``<code>B</code>``)."""
    return _RENDERED_ROLE.sub(
        lambda m: f"<code>{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}</code>",
        html)


def on_files(files: Any, config: Any) -> Any:
    """Add the generated pages to the build (they replace nothing: docs/ has no such files)."""
    from mkdocs.structure.files import File

    for path, content in pages().items():
        if files.get_file_from_path(path) is not None:
            raise RuntimeError(f"docs/{path} exists but is generated; remove it from docs/")
        files.append(File.generated(config, path, content=content))
    return files
