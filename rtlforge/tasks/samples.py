"""Loading the LLM outputs RTLLM ships (``_chatgpt35/t1..t5/<design>.v``) as eval samples.

The RTLLM repository keeps, per model, one folder per trial and one Verilog file per design of
RTLLM v1.1 (29 designs). The file name is meant to be the design name, but it was typed by hand
(``calender.v`` for the ``calendar`` design), so a file is matched to a task in three steps,
each recorded: the file stem equals a task id, else the module the file declares is a task's top
module, else the stem is a close spelling of exactly one task id. Whatever stays unmatched is
returned, never silently dropped, so a report can say how many outputs it could not score.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.core.errors import TaskFormatError
from rtlforge.core.models import Task
from rtlforge.eda.modules import declared_modules
from rtlforge.tasks.loader import MAX_FILE_BYTES, Sample

__all__ = ["LLMOutputs", "MatchedFile", "load_llm_outputs", "match_design"]

_TRIAL_DIR = re.compile(r"t(\d+)")
_VERILOG_SUFFIXES = (".v", ".sv")

MatchKind = Literal["name", "module", "spelling"]


class MatchedFile(BaseModel):
    """How one output file was tied to a task (kept so a reviewer can audit every alias)."""

    model_config = ConfigDict(frozen=True)

    path: str  # relative to the method folder, e.g. "t1/calender.v"
    task_id: str | None
    how: MatchKind | None = None  # None when unmatched
    reason: str | None = None  # why it is unmatched


class LLMOutputs(BaseModel):
    """Samples of one method plus the bookkeeping a report needs about what was left out."""

    model_config = ConfigDict(frozen=True)

    method: str
    root: str
    samples: tuple[Sample, ...]
    files: tuple[MatchedFile, ...]
    per_trial: dict[int, int] = Field(default_factory=dict)  # matched files per trial

    @property
    def unmatched(self) -> tuple[MatchedFile, ...]:
        return tuple(f for f in self.files if f.task_id is None)

    @property
    def aliased(self) -> tuple[MatchedFile, ...]:
        """Matched files whose name is not the task id (worth a line in a report)."""
        return tuple(f for f in self.files if f.task_id is not None and f.how != "name")


def match_design(stem: str, source: str, tasks: Mapping[str, Task]) -> tuple[str | None, str]:
    """``(task_id, how)`` for one output file, or ``(None, reason)`` when nothing fits."""
    if stem in tasks:
        return stem, "name"
    by_top: dict[str, set[str]] = {}
    for task in tasks.values():
        by_top.setdefault(task.top, set()).add(task.id)
        by_top.setdefault(task.id, set()).add(task.id)
    declared = declared_modules(source)
    hits = {tid for module in declared for tid in by_top.get(module, ())}
    if len(hits) == 1:
        return next(iter(hits)), "module"
    close = difflib.get_close_matches(stem, list(tasks), n=2, cutoff=0.8)
    if len(close) == 1 and not hits:
        return close[0], "spelling"
    if hits:
        return None, f"declares modules of several tasks: {sorted(hits)}"
    if close:
        return None, f"name is close to several tasks: {close}"
    return None, f"no task named {stem!r} and no known module among {declared[:5]}"


def _read(path: Path) -> str:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise TaskFormatError(f"{path}: {size} bytes, over the {MAX_FILE_BYTES}-byte limit")
    data = path.read_bytes()
    if b"\0" in data:
        raise TaskFormatError(f"{path}: binary file (contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TaskFormatError(f"{path}: not UTF-8 (bad byte at offset {exc.start})") from exc


def _trial_dirs(root: Path) -> list[tuple[int, Path]]:
    """``tN`` subfolders as (N, path); a folder of bare .v files is one trial (trial 1)."""
    trials = sorted(
        (int(m.group(1)), child)
        for child in root.iterdir()
        if child.is_dir() and (m := _TRIAL_DIR.fullmatch(child.name))
    )
    if trials:
        return trials
    if any(p.suffix in _VERILOG_SUFFIXES for p in root.iterdir() if p.is_file()):
        return [(1, root)]
    return []


def load_llm_outputs(root: str | Path, tasks: Mapping[str, Task] | Iterable[Task], *,
                     method: str | None = None) -> LLMOutputs:
    """Read ``root/tN/<design>.v`` as samples of ``method`` (trial N, iteration 1).

    ``method`` defaults to the folder name without its leading underscore (``_chatgpt4`` ->
    ``chatgpt4``). Each sample's completion is the file text; ``extra`` carries method, trial,
    iteration and the source path so results stay traceable to the file.
    """
    root = Path(root)
    if not root.is_dir():
        raise TaskFormatError(f"LLM output folder {root} does not exist or is not a directory")
    task_map = tasks if isinstance(tasks, Mapping) else {t.id: t for t in tasks}
    name = method or root.name.lstrip("_") or root.name
    trials = _trial_dirs(root)
    if not trials:
        raise TaskFormatError(f"{root}: no tN trial folders and no .v files")
    samples: list[Sample] = []
    files: list[MatchedFile] = []
    per_trial: Counter[int] = Counter()
    for trial, folder in trials:
        for path in sorted(folder.iterdir()):
            if not path.is_file() or path.suffix not in _VERILOG_SUFFIXES:
                continue
            rel = path.relative_to(root).as_posix()
            try:
                text = _read(path)
            except (OSError, TaskFormatError) as exc:
                files.append(MatchedFile(path=rel, task_id=None, reason=str(exc)))
                continue
            task_id, how = match_design(path.stem, text, task_map)
            if task_id is None:
                files.append(MatchedFile(path=rel, task_id=None, reason=how))
                continue
            files.append(MatchedFile(path=rel, task_id=task_id, how=how))  # type: ignore[arg-type]
            per_trial[trial] += 1
            samples.append(Sample(
                task_id=task_id, completion=text,
                extra={"method": name, "trial": trial, "iteration": 1, "source": rel},
            ))
    return LLMOutputs(method=name, root=str(root), samples=tuple(samples), files=tuple(files),
                      per_trial=dict(sorted(per_trial.items())))
