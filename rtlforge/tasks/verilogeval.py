"""VerilogEval v2, as the benchmark is distributed: flat folders of ``ProbNNN_name_*`` files.

A checkout of NVlabs/verilog-eval holds one folder per task style, ``dataset_spec-to-rtl/``
and ``dataset_code-complete-iccad2023/``; each problem is a group of files named after it:

- ``ProbNNN_name_prompt.txt``: what the model reads (the Task's spec);
- ``ProbNNN_name_ref.sv``: the reference, declaring ``module RefModule``;
- ``ProbNNN_name_test.sv``: ``module tb``, which drives both ``TopModule`` (the design under
  test) and ``RefModule`` with the same stimulus and prints ``Mismatches: N in M samples``;
- ``ProbNNN_name_ifc.txt`` (code-complete only): the module header the completion continues.

Each problem becomes a Task with id ``ProbNNN_name`` and top ``TopModule``. The reference is
compiled with the testbench, as a testbench file after ``test.sv`` (the official compile order)
rather than a support file: the design may then not instantiate ``RefModule`` itself (the
containment gate refuses it; the official flow would pass such a wrapper). The golden design
(for PPA and AST rewards) is the same reference with its ``RefModule`` declaration renamed to
``TopModule``, so it has the interface a candidate must have. The pass rule is the official analysis
(``scripts/sv-iv-analyze``): a testbench line ``Mismatches: 0 in M samples`` passes; a
non-zero count, the testbench's ``TIMEOUT`` line or a testbench line containing ``error``
fails. ``docs/verilogeval.md`` lists what differs from the official Makefile flow.

A problem with a missing or unreadable file, or a reference without ``RefModule``, is not a
crash: :func:`scan_verilogeval` returns it among the skipped problems with the reason, and
:func:`load_verilogeval` raises one :class:`~rtlforge.core.errors.TaskFormatError` naming
every such problem unless asked to skip them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from rtlforge.core.errors import TaskFormatError
from rtlforge.core.models import PassRule, SourceFile, Task
from rtlforge.eda.modules import declared_modules, instantiated_modules, rename_module
from rtlforge.tasks.loader import _task_file

__all__ = [
    "DATASETS",
    "PASS_RULE",
    "REFERENCE_MODULE",
    "TOP_MODULE",
    "SkippedProblem",
    "VerilogEvalLoad",
    "find_dataset",
    "is_verilogeval",
    "load_verilogeval",
    "scan_verilogeval",
]

#: Dataset folders of a checkout, the first being what the official configure runs by default.
DATASETS = ("spec-to-rtl", "code-complete-iccad2023")
#: The module the testbench expects from the design, and the one the reference declares.
TOP_MODULE = "TopModule"
REFERENCE_MODULE = "RefModule"
TESTBENCH_TOP = "tb"
#: The official verdict: sv-iv-analyze matches ``^Mismatches: (\d+) in \d+ samples$`` and fails
#: a log with a ``TIMEOUT`` or ``error`` line before it looks at the count.
PASS_RULE = PassRule(
    kind="regex",
    pass_regex=r"^Mismatches: 0 in \d+ samples$",
    fail_regex=r"^Mismatches: [1-9]\d* in \d+ samples$|TIMEOUT|error",
)

_PART = re.compile(r"^(Prob\d+_[A-Za-z0-9_]+?)_(prompt\.txt|ref\.sv|test\.sv|ifc\.txt)$")
_REQUIRED = ("prompt.txt", "ref.sv", "test.sv")
_PROBLEM_LIST = "problems.txt"


class SkippedProblem(BaseModel):
    """A problem that could not become a Task, and why (kept so a report can say so)."""

    model_config = ConfigDict(frozen=True)

    problem: str
    reason: str


class VerilogEvalLoad(BaseModel):
    """What a dataset folder yielded: the tasks, sorted by id, and the problems left out."""

    model_config = ConfigDict(frozen=True)

    root: str
    dataset: str
    tasks: tuple[Task, ...]
    skipped: tuple[SkippedProblem, ...] = ()


def _has_problem_files(folder: Path) -> bool:
    """True when ``folder`` directly holds at least one prompt, testbench and reference."""
    try:
        names = [p.name for p in folder.iterdir()]
    except OSError:
        return False
    kinds = {m.group(2) for n in names if (m := _PART.match(n))}
    return set(_REQUIRED) <= kinds


def find_dataset(path: str | Path, dataset: str | None = None) -> Path:
    """The folder holding the ``ProbNNN_*`` files, given a checkout, a dataset folder or any
    folder of such files. A checkout gives ``dataset_<dataset>/`` (spec-to-rtl by default)."""
    root = Path(path)
    if not root.is_dir():
        raise TaskFormatError(f"VerilogEval path {root} does not exist or is not a directory")
    wanted = [dataset] if dataset else list(DATASETS)
    for name in wanted:
        sub = root / f"dataset_{name}"
        if sub.is_dir():
            return sub
    if dataset is None and _has_problem_files(root):
        return root
    if dataset is not None and _has_problem_files(root) and _dataset_name(root) == dataset:
        return root
    raise TaskFormatError(
        f"{root} is not a VerilogEval v2 checkout or dataset folder: no "
        f"{' or '.join('dataset_' + n + '/' for n in wanted)} and no ProbNNN_name_prompt.txt / "
        "_ref.sv / _test.sv files in it")


def is_verilogeval(path: str | Path) -> bool:
    """Whether ``path`` looks like a VerilogEval v2 checkout or dataset folder (format sniffing)."""
    try:
        find_dataset(path)
    except TaskFormatError:
        return False
    return True


def _dataset_name(folder: Path) -> str:
    """``spec-to-rtl`` for ``dataset_spec-to-rtl/``; a folder of loose files is named by its
    content (an ``_ifc.txt`` file is what only code-complete ships)."""
    if folder.name.startswith("dataset_"):
        return folder.name.removeprefix("dataset_")
    if any(folder.glob("Prob*_ifc.txt")):
        return "code-complete-iccad2023"
    return "spec-to-rtl"


def _problem_groups(folder: Path) -> dict[str, dict[str, str]]:
    """problem -> {part: file name}, from the names in ``folder``."""
    groups: dict[str, dict[str, str]] = {}
    for child in sorted(folder.iterdir()):
        match = _PART.match(child.name)
        if match:
            groups.setdefault(match.group(1), {})[match.group(2)] = child.name
    return groups


def _listed_problems(folder: Path) -> list[str] | None:
    """The names in ``problems.txt`` (the official flow runs only those), or None without it."""
    listing = folder / _PROBLEM_LIST
    if not listing.is_file():
        return None
    text = _task_file(folder, str(folder), "problems", _PROBLEM_LIST).content
    return [line.strip() for line in text.splitlines() if line.strip()]


def _problem_task(folder: Path, problem: str, parts: dict[str, str], dataset: str) -> Task:
    label = repr(problem)
    missing = [f"{problem}_{part}" for part in _REQUIRED if part not in parts]
    if missing:
        raise TaskFormatError(f"VerilogEval problem {label}: missing {', '.join(missing)}")
    prompt = _task_file(folder, label, "prompt", parts["prompt.txt"])
    reference = _task_file(folder, label, "reference", parts["ref.sv"])
    testbench = _task_file(folder, label, "testbench", parts["test.sv"])
    interface = (_task_file(folder, label, "interface", parts["ifc.txt"]).content
                 if "ifc.txt" in parts else None)

    declared = declared_modules(reference.content)
    if REFERENCE_MODULE not in declared:
        raise TaskFormatError(
            f"VerilogEval problem {label}: {reference.name} does not declare module "
            f"{REFERENCE_MODULE} (it declares {declared or 'nothing readable'})")
    if TOP_MODULE in declared:
        raise TaskFormatError(
            f"VerilogEval problem {label}: {reference.name} already declares {TOP_MODULE}, so "
            "it cannot serve as the reference next to a candidate")
    used = instantiated_modules(testbench.content)
    absent = [m for m in (TOP_MODULE, REFERENCE_MODULE) if m not in used]
    if absent or TESTBENCH_TOP not in declared_modules(testbench.content):
        raise TaskFormatError(
            f"VerilogEval problem {label}: {testbench.name} should declare module "
            f"{TESTBENCH_TOP} instantiating {TOP_MODULE} and {REFERENCE_MODULE}"
            + (f"; it does not instantiate {', '.join(absent)}" if absent else ""))
    golden_text = rename_module(reference.content, REFERENCE_MODULE, TOP_MODULE)
    assert golden_text is not None  # declared above
    metadata: dict[str, object] = {
        "source": "verilogeval-v2",
        "dataset": dataset,
        "problem_number": int(problem[4:problem.index("_")]),
        "reference_file": reference.name,
        "reference_module": REFERENCE_MODULE,
    }
    if interface is not None:
        metadata["interface"] = interface
    return Task(
        id=problem,
        spec=prompt.content,
        top=TOP_MODULE,
        # the reference is part of the checking harness, not a module the design may use:
        # as a testbench file, the containment gate refuses a TopModule that instantiates it
        testbench=(testbench, reference),
        testbench_top=TESTBENCH_TOP,
        golden=(SourceFile(name=f"{problem}_golden.sv", content=golden_text),),
        pass_rule=PASS_RULE,
        category=dataset,
        metadata=metadata,
    )


def scan_verilogeval(path: str | Path, *, dataset: str | None = None,
                     problems: Iterable[str] | None = None) -> VerilogEvalLoad:
    """Every problem of a VerilogEval v2 dataset folder as a Task, plus the ones left out.

    ``path`` is a checkout (``dataset`` picks ``dataset_<dataset>/``, spec-to-rtl by default),
    a dataset folder, or any folder of ``ProbNNN_name_*`` files. Problems come from
    ``problems.txt`` when the folder has one (as in the official flow), else from the file
    names; ``problems`` narrows that to the given ids.
    """
    if dataset is not None and dataset not in DATASETS:
        raise TaskFormatError(f"unknown VerilogEval dataset {dataset!r}; one of {DATASETS}")
    folder = find_dataset(path, dataset).resolve()
    name = _dataset_name(folder)
    groups = _problem_groups(folder)
    listed = _listed_problems(folder)
    wanted = listed if listed is not None else sorted(groups)
    if problems is not None:
        keep = set(problems)
        wanted = [p for p in wanted if p in keep]
    tasks: dict[str, Task] = {}
    skipped: list[SkippedProblem] = []
    for problem in wanted:
        if problem in tasks:
            continue  # listed twice in problems.txt
        try:
            tasks[problem] = _problem_task(folder, problem, groups.get(problem, {}), name)
        except TaskFormatError as exc:
            skipped.append(SkippedProblem(problem=problem, reason=str(exc)))
    return VerilogEvalLoad(root=str(folder), dataset=name,
                           tasks=tuple(tasks[k] for k in sorted(tasks)),
                           skipped=tuple(skipped))


def load_verilogeval(path: str | Path, *, dataset: str | None = None,
                     skip_incomplete: bool = False) -> list[Task]:
    """The Tasks of a VerilogEval v2 dataset folder, sorted by id (see :func:`scan_verilogeval`).

    Raises :class:`TaskFormatError` naming every problem that could not be loaded, unless
    ``skip_incomplete`` (then they are left out; use :func:`scan_verilogeval` to list them).
    """
    loaded = scan_verilogeval(path, dataset=dataset)
    if loaded.skipped and not skip_incomplete:
        reasons = "\n".join(f"  {s.reason}" for s in loaded.skipped)
        raise TaskFormatError(
            f"{len(loaded.skipped)} VerilogEval problem(s) under {loaded.root} cannot be "
            f"loaded:\n{reasons}")
    return list(loaded.tasks)
