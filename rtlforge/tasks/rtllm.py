"""RTLLM v2, as the benchmark is distributed: design folders, and the LLM outputs it ships.

Design folders (``design_description.txt``, ``testbench.v``, ``verified_<x>.v``) load as Tasks
whose top is read from the testbench (:func:`load_rtllm`).

The LLM outputs RTLLM ships (``_chatgpt35/t1..t5/<design>.v``) load as eval samples
(:func:`load_llm_outputs`). The RTLLM repository keeps, per model, one folder per trial and one
Verilog file per design of RTLLM v1.1 (29 designs). The file name is meant to be the design
name, but it was typed by hand (``calender.v`` for the ``calendar`` design), so a file is
matched to a task in three steps, each recorded: the file stem equals a task id, else the module
the file declares is a task's top module, else the stem is a close spelling of exactly one task
id. Whatever stays unmatched is returned, never silently dropped, so a report can say how many
outputs it could not score.
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
from rtlforge.core.models import SourceFile, Task
from rtlforge.eda.modules import declared_modules, rename_module, scan_modules, top_modules
from rtlforge.tasks.loader import MAX_FILE_BYTES, _task_file
from rtlforge.tasks.samples import Sample

__all__ = [
    "LLMOutputs",
    "MatchedFile",
    "load_llm_outputs",
    "load_rtllm",
    "load_rtllm_task",
    "match_design",
]

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


# --------------------------------------------------------------------------------------------
# Design folders
# --------------------------------------------------------------------------------------------

def _instantiated(text: str) -> set[str]:
    """Modules the text instantiates but does not declare (what it expects from elsewhere)."""
    scan = scan_modules(text)
    return set(scan.instantiated) - set(scan.declared)


def _rtllm_top(label: str, testbench: str, reference: str) -> tuple[str, str]:
    """(module the testbench expects, module the reference declares for it)."""
    declared = declared_modules(reference)
    used_in_tb = _instantiated(testbench)
    matches = {
        (bare, module)
        for module in declared
        for bare in {module, module.removeprefix("verified_")}
        if bare in used_in_tb
    }
    ref_roots = top_modules([reference])
    if len(matches) > 1:  # the testbench may also instantiate a submodule: keep the root
        matches = {pair for pair in matches if pair[1] in ref_roots}
    if len(matches) == 1:
        return next(iter(matches))
    unknown = sorted(used_in_tb - set(declared))
    if not matches and len(unknown) == 1 and len(ref_roots) == 1:
        # e.g. the testbench instantiates `multi_pipe_4bit` but the reference declares
        # `verified_multi_pipe`: the single unresolved instance is the design under test
        return unknown[0], ref_roots[0]
    raise TaskFormatError(
        f"RTLLM task {label}: cannot tell which module the testbench expects "
        f"(testbench instantiates {sorted(used_in_tb)}, reference declares {declared})"
    )


def _rename_module(source: str, old: str, new: str) -> str:
    """Rename the declaration of ``old`` only (comments, strings and other text untouched)."""
    renamed = rename_module(source, old, new)
    if renamed is None:
        raise TaskFormatError(f"module {old!r} is not declared")  # caller checked; defensive
    return renamed


def load_rtllm_task(design_dir: str | Path) -> Task:
    """Load one RTLLM v2 design folder as a Task (golden renamed to what the testbench expects).

    RTLLM references often declare ``verified_<x>`` while the testbench instantiates ``<x>``, and
    a few differ further (``verified_multi_pipe`` vs ``multi_pipe_4bit``), so the top is read
    from the testbench rather than guessed from the folder name.
    """
    directory = Path(design_dir)
    if not directory.is_dir():
        raise TaskFormatError(f"RTLLM design folder {directory} does not exist")
    directory = directory.resolve()
    label = repr(directory.name)
    refs = sorted(p.name for p in directory.glob("verified_*.v"))
    for required in ("design_description.txt", "testbench.v"):
        if not (directory / required).is_file():
            raise TaskFormatError(f"RTLLM task {label}: missing {required} in {directory}")
    if len(refs) != 1:
        raise TaskFormatError(
            f"RTLLM task {label}: expected exactly one verified_*.v reference, found {refs}"
        )
    spec = _task_file(directory, label, "spec", "design_description.txt").content
    testbench = _task_file(directory, label, "testbench", "testbench.v")
    reference = _task_file(directory, label, "golden", refs[0])
    support = tuple(
        _task_file(directory, label, "support", p.name)
        for p in sorted(directory.iterdir())
        if p.name not in {"design_description.txt", "testbench.v", refs[0]}
        and not p.name.startswith(".")
        and p.is_file()
    )

    top, ref_module = _rtllm_top(label, testbench.content, reference.content)
    golden_text = reference.content
    if ref_module != top:
        if top in declared_modules(golden_text):
            raise TaskFormatError(
                f"RTLLM task {label}: reference already declares {top!r} besides {ref_module!r}"
            )
        golden_text = _rename_module(golden_text, ref_module, top)
    tb_modules = declared_modules(testbench.content)
    return Task(
        id=directory.name,
        spec=spec,
        top=top,
        testbench=(testbench,),
        support=support,
        golden=(SourceFile(name=reference.name, content=golden_text),),
        testbench_top=tb_modules[0] if len(tb_modules) == 1 else None,
        category=directory.parent.name,
        metadata={
            "source": "rtllm-v2",
            "group": directory.parent.parent.name,
            "reference_file": reference.name,
            "reference_module": ref_module,
            "renamed": ref_module != top,
        },
    )


def load_rtllm(root: str | Path) -> list[Task]:
    """Load every RTLLM v2 design under ``root`` (folders with a testbench.v), sorted by id.

    Folders whose name starts with ``_`` or ``.`` (``_chatgpt4`` holds model outputs) are skipped.
    """
    root = Path(root)
    if not root.is_dir():
        raise TaskFormatError(f"RTLLM root {root} does not exist or is not a directory")
    tasks: dict[str, Task] = {}
    for tb in sorted(root.rglob("testbench.v")):
        if any(part.startswith(("_", ".")) for part in tb.relative_to(root).parts[:-1]):
            continue
        task = load_rtllm_task(tb.parent)
        if task.id in tasks:
            raise TaskFormatError(f"duplicate RTLLM task id {task.id!r} under {root}")
        tasks[task.id] = task
    return [tasks[key] for key in sorted(tasks)]
