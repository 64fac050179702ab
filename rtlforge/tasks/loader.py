"""Loading and saving tasks in rtlforge's own on-disk format.

The public benchmark layouts have modules of their own: :mod:`rtlforge.tasks.rtllm` (RTLLM v2
designs and the LLM outputs RTLLM ships) and :mod:`rtlforge.tasks.samples` (VerilogEval-style
JSONL samples).

A task directory holds ``task.toml`` plus the files it names (see ``docs/task-format.md``)::

    id = "mux4"
    top = "mux4"
    spec_file = "spec.md"            # or: spec = "inline text"
    testbench = ["tb.sv"]
    testbench_top = "tb"             # optional
    support = []                     # data files / shared modules the testbench reads
    golden = ["golden.v"]
    category = "combinational"
    cocotb_module = "test_mux4.py"   # optional

    [[ports]]
    name = "sel"
    direction = "input"
    width = 2

    [pass_rule]
    kind = "regex"
    pass_regex = '^Mismatches: 0 in [1-9]\\d* samples$'

    [metadata]
    source = "rtlforge"

Task directories come from people and from downloaded benchmarks, so loading is strict: every
problem (bad TOML, unknown key, wrong type, a file name that is not a plain name inside the
directory, a symlink leading out of it, an oversized or binary file) raises
:class:`~rtlforge.core.errors.TaskFormatError` naming the task and the field, never a bare
``KeyError`` or ``UnicodeDecodeError`` from deep inside.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rtlforge.core.errors import TaskFormatError
from rtlforge.core.models import PassRule, Port, SourceFile, Task
from rtlforge.core.untrusted import load_toml
from rtlforge.tasks.formats import TASK_FORMATS, TASK_LAYOUTS

__all__ = ["MAX_FILE_BYTES", "TASK_FILE", "load_task", "load_tasks", "save_task"]

#: Name of the manifest inside a task directory.
TASK_FILE = "task.toml"
#: Largest file a task may carry. Tasks are copied into every run directory and cached, so a
#: stray waveform dump or netlist must not ride along silently.
MAX_FILE_BYTES = 2 * 1024 * 1024

_TOP_KEYS = frozenset(
    {
        "id", "top", "spec", "spec_file", "testbench", "testbench_top", "support", "golden",
        "category", "ports", "pass_rule", "cocotb_module", "metadata",
    }
)
_PORT_KEYS = frozenset({"name", "direction", "width", "signed"})
_RULE_KEYS = frozenset({"kind", "pass_regex", "fail_regex"})
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.\-]+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


# --------------------------------------------------------------------------------------------
# Reading files safely
# --------------------------------------------------------------------------------------------


def _check_plain_name(label: str, field: str, name: object) -> str:
    if not isinstance(name, str):
        raise TaskFormatError(
            f"task {label}: field {field!r}: expected a file name string, got "
            f"{type(name).__name__}"
        )
    if not name or name.startswith(".") or len(name) > 200 or not _PLAIN_NAME.fullmatch(name):
        raise TaskFormatError(
            f"task {label}: field {field!r}: {name!r} is not a plain file name inside the task "
            "directory (letters, digits, '_', '.', '-'; no '/', no absolute paths, no leading '.')"
        )
    return name


def _read_text(path: Path, where: str) -> str:
    """Read a size-capped UTF-8 text file; ``where`` prefixes every error message."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise TaskFormatError(f"{where}: cannot read {path}: {exc.strerror or exc}") from exc
    if size > MAX_FILE_BYTES:
        raise TaskFormatError(
            f"{where}: {path.name} is {size} bytes, over the {MAX_FILE_BYTES}-byte limit"
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TaskFormatError(f"{where}: cannot read {path}: {exc.strerror or exc}") from exc
    if b"\0" in data:
        raise TaskFormatError(f"{where}: {path.name} is a binary file (contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TaskFormatError(
            f"{where}: {path.name} is not UTF-8 text (bad byte at offset {exc.start})"
        ) from exc


def _task_file(directory: Path, label: str, field: str, name: object) -> SourceFile:
    """Load one file a manifest names, refusing anything that resolves outside ``directory``."""
    plain = _check_plain_name(label, field, name)
    path = directory / plain
    where = f"task {label}: field {field!r}"
    if not path.exists() and not path.is_symlink():
        raise TaskFormatError(f"{where}: file {plain!r} does not exist in {directory}")
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:  # dangling or looping symlink
        raise TaskFormatError(f"{where}: file {plain!r} cannot be resolved: {exc}") from exc
    if not resolved.is_relative_to(directory):
        raise TaskFormatError(
            f"{where}: file {plain!r} is a symlink leading outside the task directory "
            f"(to {resolved})"
        )
    if not resolved.is_file():
        raise TaskFormatError(f"{where}: {plain!r} is not a regular file")
    return SourceFile(name=plain, content=_read_text(resolved, where))


# --------------------------------------------------------------------------------------------
# Manifest validation
# --------------------------------------------------------------------------------------------


def _type_name(value: object) -> str:
    return {dict: "table", list: "array", str: "string", bool: "boolean"}.get(
        type(value), type(value).__name__
    )


def _opt_str(label: str, raw: dict[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise TaskFormatError(
            f"task {label}: field {key!r} must be a string, got {_type_name(value)}"
        )
    return value


def _name_list(label: str, raw: dict[str, Any], key: str) -> list[object]:
    value = raw.get(key, [])
    if not isinstance(value, list):
        raise TaskFormatError(
            f"task {label}: field {key!r} must be an array of file names, got {_type_name(value)}"
        )
    return value


def _check_id(label: str, task_id: str) -> None:
    # ids are data (report keys, cache keys), not paths, so only unprintable ones are refused
    if not task_id or len(task_id) > 200 or not task_id.isprintable() or task_id != task_id.strip():
        raise TaskFormatError(
            f"task {label}: field 'id': {task_id!r} must be 1-200 printable characters "
            "without leading or trailing spaces"
        )


def _check_identifier(label: str, key: str, value: str | None) -> None:
    if value is not None and not _IDENTIFIER.fullmatch(value):
        raise TaskFormatError(f"task {label}: field {key!r}: {value!r} is not a Verilog identifier")


def _parse_ports(label: str, raw: object) -> tuple[Port, ...]:
    if not isinstance(raw, list):
        raise TaskFormatError(
            f"task {label}: field 'ports' must be an array of tables ([[ports]]), "
            f"got {_type_name(raw)}"
        )
    ports = []
    for index, entry in enumerate(raw):
        where = f"task {label}: ports[{index}]"
        if not isinstance(entry, dict):
            raise TaskFormatError(f"{where}: expected a table, got {_type_name(entry)}")
        unknown = sorted(set(entry) - _PORT_KEYS)
        if unknown:
            raise TaskFormatError(
                f"{where}: unknown key(s) {unknown}; allowed: {sorted(_PORT_KEYS)}"
            )
        width = entry.get("width", 1)
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise TaskFormatError(f"{where}: 'width' must be a positive integer, got {width!r}")
        try:
            # strict: TOML already types values, so "8" for a width is a mistake, not a string.
            port = Port.model_validate(entry, strict=True)
        except ValidationError as exc:
            raise TaskFormatError(f"{where}: {_pydantic_message(exc)}") from exc
        _check_identifier(label, f"ports[{index}].name", port.name)
        ports.append(port)
    names = [p.name for p in ports]
    if len(set(names)) != len(names):
        raise TaskFormatError(f"task {label}: field 'ports': duplicate port names in {names}")
    return tuple(ports)


def _parse_pass_rule(label: str, raw: object) -> PassRule:
    where = f"task {label}: field 'pass_rule'"
    if not isinstance(raw, dict):
        raise TaskFormatError(f"{where} must be a table, got {_type_name(raw)}")
    unknown = sorted(set(raw) - _RULE_KEYS)
    if unknown:
        raise TaskFormatError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(_RULE_KEYS)}")
    try:  # a pattern RE2 (linear time) cannot run is refused here, by PassRule's validator
        rule = PassRule.model_validate(raw, strict=True)
    except ValidationError as exc:
        raise TaskFormatError(f"{where}: {_pydantic_message(exc)}") from exc
    if rule.kind == "regex" and rule.pass_regex is None:
        raise TaskFormatError(f"{where}: kind = 'regex' needs a pass_regex")
    return rule


def _check_json_value(where: str, value: object) -> None:
    """Metadata travels through JSON caches and reports, so TOML dates are refused up front."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_json_value(f"{where}.{key}", item)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_json_value(f"{where}[{index}]", item)
    elif isinstance(value, datetime | date | time):
        raise TaskFormatError(
            f"{where}: TOML dates/times are not allowed in metadata (use a string)"
        )


def _pydantic_message(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'value'}: {err['msg']}" for err in exc.errors()
    )


def _task_from_manifest(directory: Path, raw: dict[str, Any]) -> Task:
    label = repr(raw["id"]) if isinstance(raw.get("id"), str) else str(directory)
    unknown = sorted(set(raw) - _TOP_KEYS)
    if unknown:
        raise TaskFormatError(
            f"task {label}: unknown key(s) {unknown} in {TASK_FILE}; allowed: {sorted(_TOP_KEYS)}"
        )
    for key in ("id", "top"):
        if key not in raw:
            raise TaskFormatError(f"task {label}: missing required field {key!r}")
    task_id = _opt_str(label, raw, "id")
    assert task_id is not None
    _check_id(label, task_id)
    top = _opt_str(label, raw, "top")
    _check_identifier(label, "top", top)
    testbench_top = _opt_str(label, raw, "testbench_top")
    _check_identifier(label, "testbench_top", testbench_top)
    category = _opt_str(label, raw, "category")

    inline, spec_name = _opt_str(label, raw, "spec"), raw.get("spec_file")
    if (inline is None) == (spec_name is None):
        raise TaskFormatError(f"task {label}: give exactly one of 'spec' or 'spec_file'")
    spec = inline if inline is not None else _task_file(directory, label, "spec_file",
                                                        spec_name).content

    seen: dict[str, str] = {}

    def files(key: str, names: Iterable[object]) -> tuple[SourceFile, ...]:
        loaded = []
        for name in names:
            source = _task_file(directory, label, key, name)
            if source.name in seen:
                # all of these land in one run directory, so a name may be used only once
                raise TaskFormatError(
                    f"task {label}: field {key!r}: file {source.name!r} is already listed "
                    f"in {seen[source.name]!r}"
                )
            seen[source.name] = key
            loaded.append(source)
        return tuple(loaded)

    testbench = files("testbench", _name_list(label, raw, "testbench"))
    support = files("support", _name_list(label, raw, "support"))
    golden = files("golden", _name_list(label, raw, "golden"))
    cocotb_name = raw.get("cocotb_module")
    cocotb = files("cocotb_module", [cocotb_name])[0] if cocotb_name is not None else None

    ports = _parse_ports(label, raw.get("ports", []))
    rule = _parse_pass_rule(label, raw.get("pass_rule", {}))
    metadata = raw.get("metadata", {})
    if not isinstance(metadata, dict):
        raise TaskFormatError(
            f"task {label}: field 'metadata' must be a table, got {_type_name(metadata)}"
        )
    _check_json_value(f"task {label}: field 'metadata'", metadata)
    try:
        return Task(
            id=task_id, spec=spec, top=top, ports=ports, testbench=testbench, support=support,
            golden=golden, testbench_top=testbench_top, cocotb_module=cocotb, pass_rule=rule,
            category=category, metadata=metadata,
        )
    except ValidationError as exc:  # defensive: every field was checked above
        raise TaskFormatError(f"task {label}: {_pydantic_message(exc)}") from exc


def load_task(path: str | Path) -> Task:
    """Load one task from its directory (or from the ``task.toml`` inside it)."""
    path = Path(path)
    if path.name == TASK_FILE and not path.is_dir():
        path = path.parent
    if not path.is_dir():
        raise TaskFormatError(f"task directory {path} does not exist or is not a directory")
    directory = path.resolve()
    manifest = directory / TASK_FILE
    if not manifest.is_file():
        raise TaskFormatError(f"task directory {directory} has no {TASK_FILE}")
    text = _read_text(manifest, f"task {directory}: {TASK_FILE}")
    try:  # bounded depth: metadata is walked recursively and stored as JSON later
        raw = load_toml(text, what=TASK_FILE)
    except tomllib.TOMLDecodeError as exc:
        raise TaskFormatError(f"task {directory}: {TASK_FILE} is not valid TOML: {exc}") from exc
    return _task_from_manifest(directory, raw)


class NoTasksError(TaskFormatError):
    """A folder holds no task in any layout asked for (the message names them)."""


@dataclass(frozen=True)
class FoundTasks:
    """What :func:`find_tasks` read: the layout, the tasks (sorted by id) and the problems it
    skipped with why (a VerilogEval problem whose files do not load), for a caller to show."""

    format: str
    tasks: tuple[Task, ...]
    skipped: tuple[str, ...] = ()


def task_format(root: str | Path) -> str:
    """The layout of ``root``: ``cvdp`` for a CVDP JSONL file, else (a folder) ``suite``,
    ``verilogeval`` or ``rtllm`` (the fallback)."""
    root = Path(root)
    if root.is_file():
        from rtlforge.tasks.cvdp import is_cvdp

        if not is_cvdp(root):
            raise NoTasksError(f"{root} is a file but not a CVDP JSONL file (looked for "
                               f"{TASK_LAYOUTS['cvdp']})")
        return "cvdp"
    if (root / TASK_FILE).is_file() or any((c / TASK_FILE).is_file() for c in root.iterdir()
                                           if c.is_dir()):
        return "suite"
    from rtlforge.tasks.verilogeval import is_verilogeval

    return "verilogeval" if is_verilogeval(root) else "rtllm"


def find_tasks(root: str | Path, fmt: str = "auto") -> FoundTasks:
    """Every task under ``root`` in one of the layouts rtlforge reads (:data:`TASK_FORMATS`).

    The one place a folder's layout is decided, so ``rtlforge.load_tasks``, the CLI's
    ``--tasks``, rewards and trainers read a folder alike. Finding no task is an error that
    names the layouts looked for, never an empty list."""
    root = Path(root)
    if fmt not in TASK_FORMATS:
        raise TaskFormatError(f"unknown task format {fmt!r} (expected one of "
                              f"{', '.join(TASK_FORMATS)})")
    layout = task_format(root) if fmt == "auto" and root.exists() else fmt
    if root.is_file() != (layout == "cvdp") or not root.exists():
        what = "a CVDP JSONL file" if layout == "cvdp" else "a directory"
        raise TaskFormatError(f"task root {root} does not exist or is not {what}")
    skipped: tuple[str, ...] = ()
    if layout == "cvdp":
        from rtlforge.tasks.cvdp import scan_cvdp

        found = scan_cvdp(root)
        tasks, skipped = list(found.tasks), tuple(s.reason for s in found.skipped)
    elif layout == "suite":
        tasks = load_suite(root)
    elif layout == "verilogeval":
        from rtlforge.tasks.verilogeval import scan_verilogeval

        scan = scan_verilogeval(root)
        tasks, skipped = list(scan.tasks), tuple(s.reason for s in scan.skipped)
    else:
        from rtlforge.tasks.rtllm import load_rtllm

        tasks = load_rtllm(root)
    if not tasks:
        looked = TASK_LAYOUTS.values() if fmt == "auto" else [TASK_LAYOUTS[layout]]
        why = f"; {len(skipped)} skipped, first: {skipped[0]}" if skipped else ""
        raise NoTasksError(f"no tasks found under {root} (looked for "
                              + "; ".join(looked) + ")" + why)
    return FoundTasks(format=layout, tasks=tuple(sorted(tasks, key=lambda t: t.id)),
                      skipped=skipped)


def load_tasks(root: str | Path, fmt: str = "auto") -> list[Task]:
    """The tasks under ``root``, sorted by id, in whichever layout it has (a suite of
    ``task.toml`` folders, an RTLLM tree, a VerilogEval v2 dataset or a CVDP JSONL file; see
    :func:`find_tasks`). Raises :class:`TaskFormatError` when there are none."""
    return list(find_tasks(root, fmt).tasks)


def load_suite(root: str | Path) -> list[Task]:
    """Load every direct subdirectory of ``root`` that holds a ``task.toml``, sorted by id;
    ``root`` itself holding one is a suite of that one task."""
    root = Path(root)
    if not root.is_dir():
        raise TaskFormatError(f"task root {root} does not exist or is not a directory")
    if (root / TASK_FILE).is_file():
        return [load_task(root)]
    found: dict[str, tuple[Task, Path]] = {}
    for child in sorted(root.iterdir()):
        if not (child / TASK_FILE).is_file():
            continue
        task = load_task(child)
        if task.id in found:
            raise TaskFormatError(
                f"duplicate task id {task.id!r}: in {found[task.id][1]} and {child}"
            )
        found[task.id] = (task, child)
    return [found[key][0] for key in sorted(found)]


# --------------------------------------------------------------------------------------------
# Saving (a small TOML writer: the standard library only reads TOML)
# --------------------------------------------------------------------------------------------


def _toml_string(value: str) -> str:
    # JSON string escapes are a subset of TOML basic-string escapes, except that TOML also
    # wants DEL escaped and has no surrogate escapes (hence ensure_ascii=False).
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_string(key)


def _toml_value(value: object, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v, where) for v in value) + "]"
    if isinstance(value, dict):
        items = ", ".join(
            f"{_toml_key(str(k))} = {_toml_value(v, where)}" for k, v in value.items()
        )
        return "{" + items + "}"
    raise TaskFormatError(
        f"{where}: cannot store a {type(value).__name__} in TOML (None and objects have no TOML "
        "form)"
    )


def _check_saveable(task: Task, label: str) -> None:
    """Refuse up front what :func:`load_task` would refuse, so a save never leaves a broken dir."""
    _check_id(label, task.id)
    _check_identifier(label, "top", task.top)
    _check_identifier(label, "testbench_top", task.testbench_top)
    for index, port in enumerate(task.ports):
        _check_identifier(label, f"ports[{index}].name", port.name)
        if port.width < 1:
            raise TaskFormatError(f"task {label}: ports[{index}]: width must be positive")
    _parse_pass_rule(label, task.pass_rule.model_dump(exclude_none=True))
    _check_json_value(f"task {label}: field 'metadata'", task.metadata)
    sources = [*task.testbench, *task.support, *task.golden]
    if task.cocotb_module is not None:
        sources.append(task.cocotb_module)
    for source in [*sources, SourceFile(name="spec", content=task.spec)]:
        data = source.content.encode("utf-8", errors="surrogatepass")
        if b"\0" in data or len(data) > MAX_FILE_BYTES:
            raise TaskFormatError(
                f"task {label}: {source.name} is binary or over the {MAX_FILE_BYTES}-byte limit"
            )


def save_task(task: Task, directory: Path) -> Path:
    """Write ``task`` as a task directory that :func:`load_task` reads back equal; returns it.

    The spec always goes to a file so multi-line prose stays readable in review.
    """
    directory = Path(directory)
    where = f"task {task.id!r}"
    _check_saveable(task, repr(task.id))
    files = [*task.testbench, *task.support, *task.golden]
    if task.cocotb_module is not None:
        files.append(task.cocotb_module)
    names = [f.name for f in files]
    if len(set(names)) != len(names) or TASK_FILE in names:
        raise TaskFormatError(f"{where}: file names collide in one directory: {names}")
    spec_name = next(
        n for n in ("spec.md", "spec.txt", "task-spec.md", "task-spec.txt") if n not in names
    )
    lines = [
        f"id = {_toml_string(task.id)}",
        f"top = {_toml_string(task.top)}",
        f"spec_file = {_toml_string(spec_name)}",
        f"testbench = {_toml_value([f.name for f in task.testbench], where)}",
    ]
    if task.testbench_top is not None:
        lines.append(f"testbench_top = {_toml_string(task.testbench_top)}")
    lines.append(f"support = {_toml_value([f.name for f in task.support], where)}")
    lines.append(f"golden = {_toml_value([f.name for f in task.golden], where)}")
    if task.category is not None:
        lines.append(f"category = {_toml_string(task.category)}")
    if task.cocotb_module is not None:
        lines.append(f"cocotb_module = {_toml_string(task.cocotb_module.name)}")
    for port in task.ports:
        lines += ["", "[[ports]]"]
        lines += [f"{k} = {_toml_value(v, where)}" for k, v in port.model_dump().items()]
    rule = {k: v for k, v in task.pass_rule.model_dump().items() if v is not None}
    lines += ["", "[pass_rule]"] + [f"{k} = {_toml_value(v, where)}" for k, v in rule.items()]
    if task.metadata:
        lines += ["", "[metadata]"]
        lines += [
            f"{_toml_key(str(k))} = {_toml_value(v, f'{where}: metadata.{k}')}"
            for k, v in task.metadata.items()
        ]

    directory.mkdir(parents=True, exist_ok=True)
    for source in [*files, SourceFile(name=spec_name, content=task.spec)]:
        # newline="" keeps CRLF testbenches byte-identical, so digests survive a round trip
        (directory / source.name).write_text(source.content, encoding="utf-8", newline="")
    (directory / TASK_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory
