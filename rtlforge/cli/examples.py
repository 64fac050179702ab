"""``rtlforge examples DIR``: copy the bundled examples, so the README runs after pip install."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path), default=".")
def examples(directory: Path) -> None:
    """Copy the bundled examples (tasks, samples, recorded explorations, training configs) to
    DIRECTORY/examples, where the README's and the docs' snippets expect them."""
    from rtlforge.examples import copy_examples

    try:
        target = copy_examples(directory)
    except (FileExistsError, FileNotFoundError) as exc:
        raise click.UsageError(str(exc)) from exc
    count = sum(1 for p in target.rglob("*") if p.is_file())
    click.echo(f"{count} files in {target}; run the README's snippets from {directory}")
