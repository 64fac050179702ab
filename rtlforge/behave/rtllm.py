"""RTLLM v2 designs as BEHAVE tasks: our behaviour models joined with RTLLM's own files.

``examples/behave/rtllm/<design>/`` holds only what rtlforge wrote: ``behave.toml`` naming the
design (``rtllm = "<design>"``) with its interface and protocol, and the golden behaviour model
written from the design's ``design_description.txt``. RTLLM's files (the description, the
verified reference, the testbench) stay where RTLLM is distributed and are found when the task
loads, in this order:

1. the root passed explicitly (``--rtllm DIR`` on the command line);
2. the ``RTLFORGE_RTLLM`` environment variable (a root);
3. the task directory itself, when RTLLM's files were copied next to ``behave.toml``;
4. an ``rtllm`` or ``shared/benchmarks/rtllm`` folder in one of the task directory's ancestors
   (a checkout beside the ``shared/`` data, or a task tree inside an RTLLM copy).

A root is searched for a folder named after the design holding ``design_description.txt``
(RTLLM nests designs by category; folders starting with ``_`` or ``.`` hold model outputs and
are skipped).
"""

from __future__ import annotations

import os
from pathlib import Path

from rtlforge.behave.sim.task import BehaveTask, BehaveTaskError
from rtlforge.core.models import Candidate, Task

__all__ = ["DESCRIPTION", "ENV_ROOT", "find_design", "reference_candidate", "rtllm_task"]

DESCRIPTION = "design_description.txt"
ENV_ROOT = "RTLFORGE_RTLLM"
_MAX_DEPTH = 4  # RTLLM nests designs as <group>/<category>/<design>


def _design_in(root: Path, name: str) -> Path | None:
    """The folder ``name`` holding a description under ``root`` (breadth-first, bounded)."""
    level = [root]
    for _ in range(_MAX_DEPTH):
        following: list[Path] = []
        for folder in level:
            candidate = folder / name
            if (candidate / DESCRIPTION).is_file() and not candidate.is_symlink():
                return candidate
            try:
                following.extend(sorted(p for p in folder.iterdir() if p.is_dir()
                                        and not p.is_symlink()
                                        and not p.name.startswith(("_", "."))))
            except OSError:
                continue
        level = following
    return None


def _ancestor_roots(task_dir: Path) -> list[Path]:
    roots = []
    for ancestor in task_dir.parents:
        roots += [ancestor / "rtllm", ancestor / "shared" / "benchmarks" / "rtllm"]
    return [r for r in roots if r.is_dir()]


def find_design(name: str, task_dir: Path, root: str | Path | None = None) -> Path:
    """RTLLM's folder for design ``name``; :class:`BehaveTaskError` (field ``rtllm``) if absent.

    An explicit ``root`` is the only place looked at, so a wrong option is an error rather
    than a silent fall-back to another copy.
    """
    if root is not None:
        roots = [Path(root)]
    elif os.environ.get(ENV_ROOT):
        roots = [Path(os.environ[ENV_ROOT])]
    elif (task_dir / DESCRIPTION).is_file():
        return task_dir
    else:
        roots = _ancestor_roots(task_dir)
    for candidate_root in roots:
        if candidate_root.is_dir():
            found = _design_in(candidate_root.resolve(), name)
            if found is not None:
                return found
    where = ", ".join(str(r) for r in roots) or "no RTLLM root found beside the task"
    raise BehaveTaskError(
        f"RTLLM design {name!r} not found ({where}); pass the RTLLM v2 root (--rtllm DIR or "
        f"{ENV_ROOT}) or copy the design's files next to behave.toml",
        field="rtllm", file=str(task_dir))


def rtllm_task(task: BehaveTask) -> Task:
    """The RTLLM design folder of ``task`` loaded as an ordinary Task (testbench, reference)."""
    from rtlforge.core.errors import TaskFormatError
    from rtlforge.tasks.rtllm import load_rtllm_task

    if task.rtllm_dir is None:
        raise BehaveTaskError(f"task {task.id!r} is not joined with an RTLLM design",
                              field="rtllm")
    try:
        loaded = load_rtllm_task(task.rtllm_dir)
    except TaskFormatError as exc:
        raise BehaveTaskError(str(exc), field="rtllm", file=str(task.rtllm_dir)) from exc
    if loaded.top != task.top:
        raise BehaveTaskError(f"top {task.top!r} is not the module RTLLM's testbench "
                              f"instantiates ({loaded.top!r})", field="top")
    return loaded


def reference_candidate(task: BehaveTask) -> Candidate:
    """RTLLM's verified design for ``task``, its module renamed to what the testbench expects."""
    loaded = rtllm_task(task)
    return Candidate(files=loaded.golden, top=loaded.top, task_id=task.id)
