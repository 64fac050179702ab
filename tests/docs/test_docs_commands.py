"""The ``rtlforge`` commands the tutorials and guides show exist, with the flags they use.

``scripts/run_tutorials.py`` runs the tutorials for real (minutes, not part of the suite); this
check is the cheap half that runs every time: each shown ``rtlforge ...`` line must parse
against the click commands, plugin commands included, so a renamed command or flag breaks the
test rather than the reader. Arguments naming files a tutorial makes earlier are not required
to exist here.
"""

from __future__ import annotations

import importlib.util
import shlex
import sys
from pathlib import Path
from types import ModuleType

import click
import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted([*(REPO / "docs" / "tutorials").glob("*.md"),
                *(REPO / "docs" / "concepts").glob("*.md"),
                *(REPO / "docs" / "guides").glob("*.md")])
#: Commands the guides show for plugins their examples add (not installed in this repo).
PLUGIN_EXAMPLE_COMMANDS = {"task-ports"}


def _runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_run_tutorials",
                                                  REPO / "scripts" / "run_tutorials.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _shown_commands() -> list[tuple[str, str]]:
    runner = _runner()
    return [(cmd.page, cmd.text) for page in PAGES for cmd in runner.commands(page)
            if cmd.text.startswith("rtlforge ")]


def _parse(args: list[str]) -> None:
    """Parse like click does before invoking, down to the leaf command."""
    from rtlforge.cli import cli

    command: click.Command = cli
    ctx = command.make_context("rtlforge", list(args), resilient_parsing=False)
    while isinstance(command, click.Group):
        # click 8.2+ keeps the subcommand's tokens privately (``protected_args`` is deprecated)
        protected = getattr(ctx, "_protected_args", None)
        rest = [*(protected if protected is not None else ctx.protected_args), *ctx.args]
        name, sub, rest = command.resolve_command(ctx, rest)
        assert sub is not None and name is not None
        command = sub
        try:
            ctx = command.make_context(name, rest, parent=ctx)
        except click.BadParameter as exc:
            if "does not exist" not in str(exc):  # a file an earlier step makes
                raise


def test_the_pages_show_rtlforge_commands() -> None:
    pages = {page for page, _ in _shown_commands()}
    assert {"evaluate-samples.md", "explore-served-model.md", "train-grpo-hvc.md",
            "refine-with-agents.md", "behaviour-model.md"} <= pages


@pytest.mark.parametrize(("page", "text"), _shown_commands())
def test_a_shown_command_parses(page: str, text: str) -> None:
    args = shlex.split(text)[1:]
    if args and args[0] in PLUGIN_EXAMPLE_COMMANDS:
        pytest.skip(f"{args[0]} comes from a guide's example plugin")
    if "--help" in args:
        pytest.skip("help output")
    _parse(args)


def test_the_check_rejects_a_misspelt_flag_and_command() -> None:
    with pytest.raises(click.UsageError):
        _parse(["eval", "samples.jsonl", "--tasks", "examples/tasks", "--no-such-flag"])
    with pytest.raises(click.UsageError):
        _parse(["behave", "chek", "design.v"])
