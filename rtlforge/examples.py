"""The examples the README and the docs use, shipped inside the package.

A wheel carries the repository's ``examples/`` as ``rtlforge/_examples`` (pyproject's
``force-include``), so every snippet that names ``examples/...`` runs after ``pip install``
once ``rtlforge examples DIR`` (or :func:`copy_examples`) has copied them; a source checkout
uses its own ``examples/``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["copy_examples", "examples_dir"]

_PACKAGE = Path(__file__).resolve().parent


def examples_dir() -> Path:
    """The bundled examples: the installed copy, else a source checkout's ``examples/``."""
    for candidate in (_PACKAGE / "_examples", _PACKAGE.parent / "examples"):
        if (candidate / "tasks").is_dir():
            return candidate
    raise FileNotFoundError("rtlforge's examples are not installed (a wheel ships them as "
                            "rtlforge/_examples; a checkout has examples/)")


def copy_examples(dest: str | Path) -> Path:
    """Copy the examples to ``dest/examples`` and return that path; an existing
    ``dest/examples`` is left alone (a ``FileExistsError``), never overwritten."""
    target = Path(dest) / "examples"
    if target.exists():
        raise FileExistsError(f"{target} exists; remove it or choose another directory")
    shutil.copytree(examples_dir(), target,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return target
