"""NVIDIA CVDP (non-agentic code generation), as the benchmark distributes it: one JSON record a
line (see ``docs/cvdp.md`` for the format and what differs from the Docker flow).

A record holds ``id``, ``categories`` (``["cid003", "easy"]``), ``input.prompt`` (the task
text), ``input.context`` (files shown to the model, ``{path: text}``), ``output.context``
(its keys are the files the answer must return; its values, withheld in the public data, are
the reference solution) and ``harness.files`` (``docker-compose.yml``, ``src/.env``, the test
code). Each record with a Docker harness becomes a :class:`~rtlforge.core.models.Task`:

- ``spec``: the prompt, with the input context files and the files to return;
- ``metadata``: ``source = "cvdp"``, ``difficulty``, and the files the answer returns with the
  flat names their candidate files get (:data:`rtlforge.core.answers.ANSWER_FILES_KEY`);
  ``category`` is the ``cidNNN``;
- ``support``: the input context's HDL and data files that no answer file replaces (the
  security gate reads them as task text; a design may include them), and
  :data:`HARNESS_FILE`, the :class:`CvdpHarness` as JSON: the compose services, the harness
  and non-HDL context files, and where every file goes. Being a support file, it is part of
  the task's digest, so a cached verdict always belongs to this harness;
- ``golden``: the reference answer files, when the record carries them.

The compose file is parsed here, once, in a bounded subset (services with ``command``,
``env_file``, ``environment``, ``volumes``, ``working_dir``, ``image``/``build``): a
command must run pytest or a Python script, and anything else is refused with a reason rather
than handed to a shell. Records this module cannot run (a subjectively scored category with no
compose file, the agentic format, a command of another kind) are skipped with why.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rtlforge.core.answers import ANSWER_FILES_KEY
from rtlforge.core.errors import TaskFormatError
from rtlforge.core.models import SourceFile, Task
from rtlforge.core.untrusted import load_json
from rtlforge.sandbox.runfiles import design_file_names
from rtlforge.tasks.loader import _check_id, _type_name

__all__ = ["CATEGORY_NAMES", "CVDP_FORMAT", "HARNESS_FILE", "MOUNTS", "CvdpHarness",
           "CvdpLoad", "CvdpService", "SkippedRecord", "container_roots", "harness_of",
           "is_cvdp", "is_cvdp_task", "load_cvdp", "map_container_paths", "parse_env_file",
           "scan_cvdp"]

CVDP_FORMAT = "cvdp"
#: The support file carrying a task's :class:`CvdpHarness`.
HARNESS_FILE = "cvdp_harness.json"
#: The CVDP categories this format runs (the paper's code-generation set) and their names.
CATEGORY_NAMES = {
    "cid002": "RTL code completion",
    "cid003": "specification to RTL",
    "cid004": "RTL code modification",
    "cid005": "spec to RTL (module reuse)",
    "cid007": "lint / QoR improvement",
    "cid012": "test plan to testbench stimulus",
    "cid013": "test plan to testbench checker",
    "cid014": "test plan to assertions",
    "cid016": "bug fixing",
}
#: Container folders and where they are in a run directory: the framework mounts the project's
#: ``{rtl,verif,docs,rundir,src}`` at ``/code/...`` and its ``src`` at ``/src`` too; ``/rundir``
#: is the container's own scratch folder, kept apart beside the project.
MOUNTS = {"/code": "code", "/src": "code/src", "/rundir": "rundir"}
#: Project folders a compose volume may bring in (``./src/:/src/:ro``).
PROJECT_DIRS = ("src", "rtl", "verif", "docs", "rundir")

_MAX_LINE_CHARS = 16 * 1024 * 1024
_MAX_FILE_CHARS = 2 * 1024 * 1024
_MAX_HARNESS_CHARS = 1024 * 1024
_MAX_COMPOSE_CHARS = 64 * 1024
_MAX_YAML_DEPTH = 12
_MAX_SERVICES = 16
_MAX_FILES = 200
_SEGMENT = re.compile(r"[A-Za-z0-9_.+-]{1,100}")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CATEGORY = re.compile(r"cid\d{3}")
_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PYTHON = re.compile(r"python(?:3(?:\.\d+)?)?")
_HDL_SUFFIXES = (".v", ".sv", ".vh", ".svh")
#: Context files that go into the run directory as support (gated task text, readable by a
#: design: HDL and the data files ``$readmemh`` reads); the rest travel in the harness file.
_SUPPORT_SUFFIXES = (*_HDL_SUFFIXES, ".vams", ".hex", ".mem", ".dat")
_SERVICE_KEYS = frozenset({"command", "env_file", "environment", "volumes", "working_dir"})
#: Keys of a service that change nothing without Docker (the image, its network, resources).
_IGNORED_KEYS = frozenset({"image", "build", "networks", "container_name", "tty", "stdin_open",
                           "restart", "labels", "mem_limit", "deploy", "user", "init"})
_TOP_KEYS = frozenset({"services", "version", "networks", "volumes", "name"})


class SkippedRecord(BaseModel):
    """A record that did not become a task, and why (kept for a report)."""

    model_config = ConfigDict(frozen=True)

    record: str
    reason: str


class CvdpService(BaseModel):
    """One compose service: what it runs (pytest, or a Python script, with ``args``), its
    environment (the env files, then ``environment``), and its extra volume mounts. Paths are
    the container's; :func:`map_container_paths` moves them into a run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: Literal["pytest", "python"]
    args: tuple[str, ...]
    env: dict[str, str] = Field(default_factory=dict)
    mounts: dict[str, str] = Field(default_factory=dict)


class CvdpHarness(BaseModel):
    """How to run one CVDP problem without Docker: what :data:`HARNESS_FILE` holds.

    Everything is written into the project (the container's ``/code``) by its path, in the
    framework's order: ``context`` (the non-HDL input context, as it is), the files ``placed``
    names (a run-directory file per project path: the HDL context, a support file, and each
    answer file of ``outputs``, a candidate file), then ``files``, the harness's own files
    (``src/test_runner.py``, ``src/.env``), whose container paths are moved into the run.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["rtlforge-cvdp-harness/1"] = "rtlforge-cvdp-harness/1"
    task_id: str
    services: tuple[CvdpService, ...]
    context: dict[str, str]
    placed: dict[str, str]
    files: dict[str, str]
    outputs: tuple[str, ...]

    def to_file(self) -> SourceFile:
        # one line of ASCII JSON: the gate reads it as inert strings, and the digest is stable
        return SourceFile(name=HARNESS_FILE, content=json.dumps(
            self.model_dump(mode="json"), sort_keys=True, ensure_ascii=True) + "\n")


def is_cvdp_task(task: Task) -> bool:
    """Whether ``task`` is a CVDP problem (it carries :data:`HARNESS_FILE`)."""
    return any(f.name == HARNESS_FILE for f in task.support)


def harness_of(task: Task) -> CvdpHarness | None:
    """The task's CVDP harness, or None for a task of another format.

    A harness file that does not parse is the task's fault: :class:`TaskFormatError`."""
    source = next((f for f in task.support if f.name == HARNESS_FILE), None)
    if source is None:
        return None
    try:
        return CvdpHarness.model_validate(load_json(source.content, what=HARNESS_FILE,
                                                    max_chars=2 * _MAX_HARNESS_CHARS))
    except (ValueError, ValidationError) as exc:
        raise TaskFormatError(f"task {task.id!r}: {HARNESS_FILE} is not a CVDP harness: "
                              f"{str(exc).splitlines()[0]}") from exc


def container_roots(workdir: str, service: CvdpService | None = None) -> dict[str, str]:
    """Where each container folder is in a run whose directory is ``workdir``: :data:`MOUNTS`
    plus the project folders ``service`` mounts elsewhere (``./rundir:/rundir``)."""
    roots = {container: f"{workdir}/{where}" for container, where in MOUNTS.items()}
    for container, folder in (service.mounts if service is not None else {}).items():
        roots[container] = f"{workdir}/code/{folder}"
    return roots


def map_container_paths(text: str, roots: Mapping[str, str]) -> str:
    """``text`` with the container's absolute paths moved to the run's folders ``roots``
    (:func:`container_roots`): ``/code/rtl/x.sv`` becomes ``<run>/code/rtl/x.sv``.

    A container folder counts only as a whole path at its start (``/src/x``, ``"/src"``),
    never inside another path (``/home/src``, ``rtl/src``)."""
    if not roots:
        return text
    alternatives = "|".join(re.escape(c) for c in sorted(roots, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w.~/$-])({alternatives})(?=[/\s'\"`:;,)\]}}]|$)", re.M)
    return pattern.sub(lambda m: roots[m.group(1)], text)


def parse_env_file(text: str, where: str) -> dict[str, str]:
    """``KEY = VALUE`` lines as docker compose reads an env file: blank lines and ``#`` lines
    skipped, spaces around ``=`` and the value trimmed, one pair of quotes removed, an
    unquoted value cut at `` #``. A line without ``=`` or with a bad key is an error."""
    env: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not _ENV_KEY.fullmatch(key):
            raise TaskFormatError(f"{where}:{number}: expected KEY=VALUE, got {line[:80]!r}")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        env[key] = value
    return env


# ------------------------------------------------------------------------------------- sniffing


def is_cvdp(path: str | Path) -> bool:
    """Whether ``path`` is a CVDP JSONL file: its first record has ``id`` and ``categories``."""
    path = Path(path)
    if not path.is_file():
        return False
    try:
        with path.open("rb") as fh:
            while raw := fh.readline(_MAX_LINE_CHARS + 1):  # bounded, even for one huge line
                if raw.strip():
                    record = load_json(raw.decode("utf-8", errors="replace"),
                                       what="a CVDP record", max_chars=_MAX_LINE_CHARS)
                    return isinstance(record, dict) and "id" in record and "categories" in record
    except (OSError, ValueError):
        return False
    return False


# ------------------------------------------------------------------------------------- records


class _Bad(Exception):
    """A record this module cannot turn into a task (skipped with the message)."""


def _project_path(path: object, where: str, *, dotfiles: bool = False) -> str:
    """A relative project path (``rtl/x.sv``): plain segments, no ``..``, no absolute path."""
    if not isinstance(path, str):
        raise _Bad(f"{where}: a file path must be a string, got {_type_name(path)}")
    clean = path.removeprefix("./")
    segments = clean.split("/")
    if (not clean or len(clean) > 300 or len(segments) > 8 or any(
            not _SEGMENT.fullmatch(s) or s in (".", "..")
            or (s.startswith(".") and not dotfiles) for s in segments)):
        raise _Bad(f"{where}: {path!r} is not a relative path of plain names (letters, digits, "
                   "'_', '.', '-', '+'; no '..', no absolute path)")
    return clean


def _text_files(raw: object, where: str, *, dotfiles: bool = False,
                allow_empty: bool = True) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _Bad(f"{where} must be an object of path -> text, got {_type_name(raw)}")
    if len(raw) > _MAX_FILES:
        raise _Bad(f"{where} has {len(raw)} files, over the limit of {_MAX_FILES}")
    out: dict[str, str] = {}
    for key, value in raw.items():
        path = _project_path(key, where, dotfiles=dotfiles)
        if not isinstance(value, str):
            raise _Bad(f"{where}[{key!r}] must be text, got {_type_name(value)}")
        if "\0" in value or len(value) > _MAX_FILE_CHARS:
            raise _Bad(f"{where}[{key!r}] is binary (NUL) or over {_MAX_FILE_CHARS} characters")
        if not allow_empty and not value:
            raise _Bad(f"{where}[{key!r}] is empty")
        if path in out:
            raise _Bad(f"{where}: {path!r} appears twice")
        out[path] = value
    return out


def _load_yaml(text: str, where: str) -> Any:
    """``yaml.safe_load`` for an untrusted compose file: bounded size and nesting, and no
    anchors or aliases (a few lines of aliases expand to gigabytes)."""
    import yaml  # only CVDP files need it, and `rtlforge validate` imports this module

    if len(text) > _MAX_COMPOSE_CHARS:
        raise _Bad(f"{where} is {len(text)} characters, over {_MAX_COMPOSE_CHARS}")
    try:
        depth = 0
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise _Bad(f"{where}: YAML anchors and aliases are not supported")
            if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                depth += 1
                if depth > _MAX_YAML_DEPTH:
                    raise _Bad(f"{where} nests deeper than {_MAX_YAML_DEPTH} levels")
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                depth -= 1
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _Bad(f"{where} is not valid YAML: {str(exc).splitlines()[0]}") from exc


def _command(name: str, raw: object) -> tuple[Literal["pytest", "python"], tuple[str, ...]]:
    where = f"service {name!r}: command"
    if isinstance(raw, str):
        try:
            argv = shlex.split(raw, comments=True)
        except ValueError as exc:
            raise _Bad(f"{where} {raw[:80]!r} cannot be split: {exc}") from exc
    elif isinstance(raw, list) and all(isinstance(a, str) for a in raw):
        argv = list(raw)
    else:
        raise _Bad(f"{where} must be a string or a list of strings (the image's default command "
                   "is not known without Docker)")
    if not argv:
        raise _Bad(f"{where} is empty")
    program, rest = argv[0].rsplit("/", 1)[-1], argv[1:]
    if program in ("pytest", "py.test"):
        return "pytest", tuple(rest)
    if _PYTHON.fullmatch(program):
        while rest and rest[0] in ("-u", "-B", "-I", "-s", "-E"):
            rest = rest[1:]
        if rest[:2] == ["-m", "pytest"]:
            return "pytest", tuple(rest[2:])
        if rest and rest[0].endswith(".py"):
            return "python", tuple(rest)
    raise _Bad(f"{where} {' '.join(argv)[:120]!r} runs neither pytest nor a Python script; "
               "only those run without Docker")


def _volumes(name: str, raw: object) -> dict[str, str]:
    """Extra container folders a service mounts from the project (``./rundir:/rundir``); the
    ``/code`` mounts the framework itself drops, and ``./src:/src`` (always there), add none."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise _Bad(f"service {name!r}: volumes must be a list")
    out: dict[str, str] = {}
    for item in raw:
        if not isinstance(item, str):
            raise _Bad(f"service {name!r}: only the short volume syntax (src:dst[:mode]) is "
                       "supported")
        parts = item.split(":")
        if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] not in ("ro", "rw")):
            raise _Bad(f"service {name!r}: volume {item!r} is not src:dst[:ro|rw]")
        source, target = parts[0].strip().strip("/"), parts[1].strip().rstrip("/")
        if "/code" in target:
            continue  # the framework removes /code mounts; it mounts the project itself
        folder = source.removeprefix("./").removeprefix(".").strip("/")
        if folder not in PROJECT_DIRS or not target.startswith("/") or \
                not all(_SEGMENT.fullmatch(s) for s in target.strip("/").split("/")):
            raise _Bad(f"service {name!r}: volume {item!r} mounts something other than a "
                       f"project folder ({', '.join(PROJECT_DIRS)})")
        if target != "/src":
            out[target] = folder
    return out


def _services(compose: str, harness: Mapping[str, str]) -> tuple[CvdpService, ...]:
    data = _load_yaml(compose, "docker-compose.yml")
    if not isinstance(data, dict) or not isinstance(data.get("services"), dict) \
            or not data["services"]:
        raise _Bad("docker-compose.yml has no services")
    unknown = sorted(set(map(str, data)) - _TOP_KEYS)
    if unknown:
        raise _Bad(f"docker-compose.yml: unsupported top-level key(s) {unknown}")
    if len(data["services"]) > _MAX_SERVICES:
        raise _Bad(f"docker-compose.yml has over {_MAX_SERVICES} services")
    services = []
    for name, body in data["services"].items():
        if not isinstance(name, str) or not _SEGMENT.fullmatch(name):
            raise _Bad(f"docker-compose.yml: service name {name!r} is not a plain name")
        if not isinstance(body, dict):
            raise _Bad(f"service {name!r} must be a mapping")
        unknown = sorted(set(map(str, body)) - _SERVICE_KEYS - _IGNORED_KEYS)
        if unknown:
            raise _Bad(f"service {name!r}: unsupported key(s) {unknown}")
        kind, args = _command(name, body.get("command"))
        env: dict[str, str] = {}
        env_files = body.get("env_file", [])
        for ref in [env_files] if isinstance(env_files, str) else env_files:
            path = _project_path(ref, f"service {name!r}: env_file", dotfiles=True) \
                if isinstance(ref, str) else None
            if path is None or path not in harness:
                raise _Bad(f"service {name!r}: env_file {ref!r} is not a harness file")
            try:
                env.update(parse_env_file(harness[path], path))
            except TaskFormatError as exc:
                raise _Bad(str(exc)) from exc
        environment = body.get("environment", {})
        if isinstance(environment, list):
            environment = dict(str(item).partition("=")[::2] for item in environment)
        if not isinstance(environment, dict) or not all(
                isinstance(k, str) and _ENV_KEY.fullmatch(k) for k in environment):
            raise _Bad(f"service {name!r}: environment must map names to values")
        env.update({k: "" if v is None else str(v) for k, v in environment.items()})
        services.append(CvdpService(name=name, kind=kind, args=args, env=env,
                                    mounts=_volumes(name, body.get("volumes"))))
    return tuple(services)


def _flat_names(paths: list[str], taken: set[str]) -> dict[str, str]:
    """A flat run-directory name per project path: its base name when that is unique and a
    harness would not rename it (``runfiles.design_file_names``), else the path joined by
    ``_`` (numbered on a clash). Deterministic, so a task loads the same every time."""
    bases = Counter(p.rsplit("/", 1)[-1] for p in paths)
    used = set(taken)
    out: dict[str, str] = {}
    for path in paths:
        base = path.rsplit("/", 1)[-1]
        options = [base] if bases[base] == 1 else []
        options.append("cvdp_" + path.replace("/", "_"))
        name = next((n for n in options if n not in used and len(n) <= 200
                     and design_file_names([n], frozenset()) == [n]), None)
        number = 2
        while name is None:
            guess = f"cvdp{number}_{path.replace('/', '_')}"[:200]
            if guess not in used and design_file_names([guess], frozenset()) == [guess]:
                name = guess
            number += 1
            if number > 1000:
                raise _Bad(f"no run-directory name for {path!r}")
        used.add(name)
        out[path] = name
    return out


def _fence(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=0)
    return "`" * max(3, longest + 1)


def _spec(prompt: str, context: Mapping[str, str], outputs: tuple[str, ...]) -> str:
    """What the model reads: the project files it is shown, the request, and how to answer
    (the framework shows the context files first, then the request, too)."""
    parts: list[str] = []
    if context:
        parts.append("The project holds these files.")
        for path, text in context.items():
            fence = _fence(text)
            parts.append(f"File {path}:\n{fence}\n{text.rstrip()}\n{fence}")
    parts.append(prompt.strip())
    listing = "\n".join(f"- {p}" for p in outputs)
    parts.append("Answer with the complete new contents of each of these files, each in its own "
                 "fenced code block with the file's path after the language on the opening "
                 f"fence line (```systemverilog {outputs[0]}):\n{listing}")
    return "\n\n".join(parts) + "\n"


def _top(services: tuple[CvdpService, ...], outputs: tuple[str, ...]) -> str:
    for service in services:
        top = service.env.get("TOPLEVEL", "").strip()
        if _IDENTIFIER.fullmatch(top):
            return top
    stem = outputs[0].rsplit("/", 1)[-1].split(".", 1)[0]
    return stem if _IDENTIFIER.fullmatch(stem) else "top"


def _record_task(record: dict[str, Any]) -> Task:
    """One record as a Task; :class:`_Bad` says why it cannot be one."""
    task_id = record.get("id")
    if not isinstance(task_id, str):
        raise _Bad("'id' must be a string")
    try:
        _check_id(repr(task_id), task_id)
    except TaskFormatError as exc:
        raise _Bad(str(exc)) from exc
    if "input" not in record and ("patch" in record or "context" in record):
        raise _Bad("an agentic record (context/patch); only the non-agentic format runs here")
    categories = record.get("categories")
    if (not isinstance(categories, list) or len(categories) < 2
            or not all(isinstance(c, str) for c in categories)
            or not _CATEGORY.fullmatch(categories[0])):
        raise _Bad(f"'categories' must be ['cidNNN', difficulty], got {categories!r}")
    category, difficulty = categories[0], categories[1]
    given, wanted, harness_raw = (record.get(k) for k in ("input", "output", "harness"))
    if not isinstance(given, dict) or not isinstance(given.get("prompt"), str):
        raise _Bad("'input.prompt' must be text")
    if not isinstance(wanted, dict) or not isinstance(harness_raw, dict):
        raise _Bad("'output' and 'harness' must be objects")
    context = _text_files(given.get("context"), "input.context")
    solution = _text_files(wanted.get("context"), "output.context")
    harness = _text_files(harness_raw.get("files"), "harness.files", dotfiles=True)
    if "docker-compose.yml" not in harness:
        raise _Bad(f"no docker-compose.yml in harness.files: category {category} is scored "
                   "another way (subjective or LLM-judged), not by a harness")
    outputs = tuple(solution)
    if not outputs:
        raise _Bad("'output.context' names no file to return")
    not_hdl = [p for p in outputs if not p.lower().endswith(_HDL_SUFFIXES)]
    if not_hdl:
        raise _Bad(f"answer file(s) {not_hdl} are not HDL; only HDL answers are validated")
    services = _services(harness["docker-compose.yml"], harness)

    kept = {p: t for p, t in context.items() if p not in solution}
    support_paths = [p for p in kept if p.lower().endswith(_SUPPORT_SUFFIXES)]
    names = _flat_names([*support_paths, *outputs], {HARNESS_FILE})
    bundle = CvdpHarness(
        task_id=task_id, services=services,
        context={p: t for p, t in kept.items() if p not in support_paths},
        placed={p: names[p] for p in [*support_paths, *outputs]},
        files={p: t for p, t in harness.items() if p.split("/", 1)[0] in PROJECT_DIRS
               and "/" in p}, outputs=outputs)
    harness_file = bundle.to_file()
    if len(harness_file.content) > _MAX_HARNESS_CHARS:
        raise _Bad(f"the harness and context files total {len(harness_file.content)} "
                   f"characters, over {_MAX_HARNESS_CHARS}")
    support = (*(SourceFile(name=names[p], content=kept[p]) for p in support_paths),
               harness_file)
    golden = tuple(SourceFile(name=names[p], content=solution[p]) for p in outputs) \
        if all(solution[p].strip() for p in outputs) else ()
    return Task(
        id=task_id, spec=_spec(given["prompt"], context, outputs),
        top=_top(services, outputs), support=support, golden=golden, category=category,
        metadata={"source": "cvdp", "difficulty": difficulty,
                  "category_name": CATEGORY_NAMES.get(category, category),
                  "categories": list(categories),
                  ANSWER_FILES_KEY: [{"path": p, "name": names[p]} for p in outputs]})


class CvdpLoad(BaseModel):
    """What a CVDP file yielded: the tasks, sorted by id, and the records left out with why."""

    model_config = ConfigDict(frozen=True)

    path: str
    tasks: tuple[Task, ...]
    skipped: tuple[SkippedRecord, ...] = ()


def scan_cvdp(path: str | Path) -> CvdpLoad:
    """Every record of a CVDP JSONL file as a Task, plus the records that cannot be run.

    A line that is not a JSON object, or two records with one id, make the file unreadable
    (:class:`TaskFormatError` naming the line); a record that is valid JSON but cannot be run
    here is skipped with the reason."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TaskFormatError(f"cannot read CVDP file {path}: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TaskFormatError(f"{path}: not UTF-8 text (bad byte at offset {exc.start})") from exc
    tasks: dict[str, Task] = {}
    skipped: list[SkippedRecord] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = load_json(line, what="a CVDP record", max_chars=_MAX_LINE_CHARS)
        except ValueError as exc:
            raise TaskFormatError(f"{where}: not a JSON record: {exc}") from exc
        if not isinstance(record, dict):
            raise TaskFormatError(f"{where}: expected a JSON object, got {_type_name(record)}")
        label = record.get("id") if isinstance(record.get("id"), str) else f"line {number}"
        try:
            task = _record_task(record)
        except _Bad as exc:
            skipped.append(SkippedRecord(record=label, reason=f"CVDP record {label}: {exc}"))
            continue
        except ValidationError as exc:  # defensive: every field was checked above
            skipped.append(SkippedRecord(record=label, reason=f"CVDP record {label}: "
                                         f"{str(exc).splitlines()[0]}"))
            continue
        if task.id in tasks:
            raise TaskFormatError(f"{where}: duplicate CVDP record id {task.id!r}")
        tasks[task.id] = task
    return CvdpLoad(path=str(path), tasks=tuple(tasks[k] for k in sorted(tasks)),
                    skipped=tuple(skipped))


def load_cvdp(path: str | Path, *, skip_unsupported: bool = True) -> list[Task]:
    """The Tasks of a CVDP JSONL file, sorted by id (see :func:`scan_cvdp`).

    Records that cannot run here are left out (a full dataset holds subjectively scored
    categories); ``skip_unsupported=False`` raises one :class:`TaskFormatError` naming them."""
    loaded = scan_cvdp(path)
    if loaded.skipped and not skip_unsupported:
        reasons = "\n".join(f"  {s.reason}" for s in loaded.skipped)
        raise TaskFormatError(f"{len(loaded.skipped)} CVDP record(s) in {path} cannot be "
                              f"run:\n{reasons}")
    return list(loaded.tasks)
