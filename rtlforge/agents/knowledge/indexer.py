"""Reference implementations: index a folder of Verilog into retrievable knowledge entries.

For each module of each ``.v``/``.sv`` file: the file, the module name, its port list, a short
synopsis and a lint status. The text is untrusted, so nothing here hands it to a parser in the
host process: module names and positions come from the bounded scanner
(:mod:`rtlforge.eda.modules`), ports from :func:`scan_ports` below (pure Python, linear, on a
bounded slice, no macro expansion, no ```include``), and linting, when asked for, goes through a
:class:`~rtlforge.validate.pipeline.Pipeline` (the sandbox's security gate, then the lint tool in
its jail).

What is indexed, and what the leakage guard needs:

- folders whose name starts with ``_`` or ``.`` are skipped (RTLLM keeps LLM outputs in
  ``_chatgpt35``/...: answers, not references), and so are testbenches (``testbench.v``,
  ``tb_*``, ``*_tb.*``, ``*_test.*``) and files over :data:`MAX_FILE_BYTES`;
- the **task id** of a file is the RTLLM folder name when ``design_description.txt`` sits beside
  it, or the VerilogEval problem (``Prob001_zero`` for ``Prob001_zero_ref.sv``), else None;
- a file is **evaluation data** when ``index_folder(..., evaluation=True)`` or a file named
  :data:`EVALUATION_MARKER` sits in its folder or any folder above it up to the root;
- every file carries its resolved path and :func:`~.base.content_digest`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from rtlforge.agents.knowledge.base import KnowledgeEntry, Origin, Provenance, content_digest
from rtlforge.core.models import Candidate, SourceFile, Task, Verdict
from rtlforge.eda.modules import scan_modules

if TYPE_CHECKING:
    from rtlforge.validate.pipeline import Pipeline

__all__ = [
    "EVALUATION_MARKER",
    "MAX_FILE_BYTES",
    "LintStatus",
    "RefPort",
    "ReferenceIndex",
    "ReferenceModule",
    "index_folder",
    "scan_ports",
]

#: A file of this name marks its folder (and everything below) as evaluation data.
EVALUATION_MARKER = ".rtlforge-evaluation"
MAX_FILE_BYTES = 1_000_000
#: How much text after a module's name the port scanner reads (the header and declarations).
_MAX_SCAN = 200_000
_SYNOPSIS_CHARS = 300
_HDL = (".v", ".sv")
_TESTBENCH = re.compile(r"^(testbench|tb_.*|.*_tb|.*_test|.*_testbench)$", re.IGNORECASE)
_VEVAL_REF = re.compile(r"^(.+)_ref$")
_TOKEN = re.compile(r"\s+|//[^\n]*|/\*.*?(?:\*/|\Z)|[A-Za-z_][A-Za-z0-9_$]*|\\\S+|\S", re.S)
_DIRECTIONS = ("input", "output", "inout")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RefPort(_Frozen):
    name: str
    direction: Literal["input", "output", "inout", "unknown"]
    range: str = ""  # the packed range as written, e.g. "[7:0]"; "" for one bit


class LintStatus(_Frozen):
    status: Literal["pass", "fail", "error", "not_checked"] = "not_checked"
    message: str = ""


class ReferenceModule(_Frozen):
    file: str  # relative to the indexed root
    path: str  # resolved
    module: str
    ports: tuple[RefPort, ...] = ()
    synopsis: str = ""
    lint: LintStatus = LintStatus()
    task_id: str | None = None
    digest: str
    evaluation: bool = False

    def entry(self, indexed_on: date) -> KnowledgeEntry:
        """This module as a knowledge entry (``kind="reference"``) the guard can check."""
        ports = ", ".join(f"{p.direction} {p.range + ' ' if p.range else ''}{p.name}"
                          for p in self.ports)
        return KnowledgeEntry(
            id=f"ref:{self.file}:{self.module}", kind="reference", title=self.module,
            description=self.synopsis, keywords=tuple(p.name for p in self.ports),
            code_template=f"module {self.module}({ports});" if self.ports else None,
            focus=("full", "architecture"),
            provenance=Provenance(source=f"indexed reference {self.file}", date=indexed_on),
            origin=Origin(path=self.path, digest=self.digest, task_id=self.task_id,
                          evaluation=self.evaluation))


class ReferenceIndex(_Frozen):
    root: str
    modules: tuple[ReferenceModule, ...] = ()
    skipped: tuple[str, ...] = ()  # "relative/path: reason"
    indexed_on: date

    def entries(self) -> tuple[KnowledgeEntry, ...]:
        return tuple(m.entry(self.indexed_on) for m in self.modules)


# ------------------------------------------------------------------------------ ports


def _tokens(text: str) -> Iterator[str]:
    for match in _TOKEN.finditer(text):
        token = match.group()
        if not token[0].isspace() and not token.startswith(("//", "/*")):
            yield token


def _split_items(tokens: list[str]) -> list[list[str]]:
    """Comma-separated items of a token list, commas inside brackets kept."""
    items: list[list[str]] = [[]]
    depth = 0
    for token in tokens:
        if token in "([{":
            depth += 1
        elif token in ")]}":
            depth -= 1
        if token == "," and depth == 0:
            items.append([])
        else:
            items[-1].append(token)
    return [item for item in items if item]


def _declared(item: list[str]) -> tuple[str | None, str, str | None]:
    """(direction, range, name) of one declaration item such as ``output reg [7:0] q``."""
    direction = next((t for t in item if t in _DIRECTIONS), None)
    range_text, name, depth, current = "", None, 0, ""
    for token in item:
        if token == "[":
            depth += 1
        if depth:
            current += token
        elif _is_ident(token) and token not in _DIRECTIONS:
            name = token  # the last identifier outside brackets is the port
        if token == "]":
            depth -= 1
            if depth == 0 and name is None:  # a packed range (before the name)
                range_text, current = current, ""
            elif depth == 0:
                current = ""  # an unpacked dimension after the name
        if token == "=":
            break
    return direction, range_text, name


def _is_ident(token: str) -> bool:
    return (token[0].isalpha() or token[0] in "_\\") and token not in _TYPES


_TYPES = frozenset({"wire", "reg", "logic", "signed", "unsigned", "var", "tri", "bit", "integer",
                    "input", "output", "inout", "supply0", "supply1", "wand", "wor"})


def scan_ports(text: str, name_end: int) -> tuple[RefPort, ...]:
    """The ports of the module whose name ends at ``name_end`` in ``text``.

    ANSI headers (``module m(input [7:0] a, output reg y);``) carry directions in the list; in
    non-ANSI ones (``module m(a, y); input a;``) directions come from the body's declarations
    up to ``endmodule``. Bounded: reads at most :data:`_MAX_SCAN` characters, one pass.
    """
    tokens = list(_tokens(text[name_end:name_end + _MAX_SCAN]))
    i = 0
    if i < len(tokens) and tokens[i] == "#":  # parameter list
        i, depth = i + 1, 0
        while i < len(tokens):
            depth += tokens[i] == "("
            depth -= tokens[i] == ")"
            i += 1
            if depth == 0:
                break
    if i >= len(tokens) or tokens[i] != "(":
        return ()
    start, depth = i + 1, 0
    while i < len(tokens):
        depth += tokens[i] == "("
        depth -= tokens[i] == ")"
        if depth == 0:
            break
        i += 1
    header = _split_items(tokens[start:i])
    ports: dict[str, RefPort] = {}
    direction: str | None = None
    range_text = ""
    for item in header:
        item_dir, item_range, name = _declared(item)
        if item_dir is not None:
            direction, range_text = item_dir, item_range
        elif direction is not None and len(item) > 1:
            range_text = item_range  # a new type without a direction keeps the direction
        if name is not None:
            ports[name] = RefPort(name=name, direction=direction or "unknown",  # type: ignore[arg-type]
                                  range=range_text if direction else "")
    if any(p.direction == "unknown" for p in ports.values()):
        _body_directions(tokens[i + 1:], ports)
    return tuple(ports.values())


def _body_directions(body: list[str], ports: dict[str, RefPort]) -> None:
    """Fill in non-ANSI directions from ``input [3:0] a, b;`` statements of the body."""
    statement: list[str] = []
    for token in body:
        if token in ("endmodule", "module"):
            return
        if token == ";":
            if statement and statement[0] in _DIRECTIONS:
                direction, range_text, _ = _declared(statement)
                for item in _split_items(statement):
                    _, _, name = _declared(item)
                    if name in ports:
                        ports[name] = RefPort(name=name, direction=direction,  # type: ignore[arg-type]
                                              range=range_text)
            statement = []
        else:
            statement.append(token)


# ------------------------------------------------------------------------------ folder


def _leading_comment(text: str) -> str:
    lines: list[str] = []
    for raw in text[:20_000].splitlines():
        line = raw.strip()
        if line.startswith("//"):
            lines.append(line.lstrip("/").strip())
        elif line.startswith(("/*", "*")):
            lines.append(line.strip("/*").strip())
        elif line or lines:
            break
    return " ".join(part for part in lines if part)


def _spec_beside(path: Path, task_id: str | None) -> str:
    candidates = [path.parent / "design_description.txt"]
    if task_id is not None:
        candidates.append(path.parent / f"{task_id}_prompt.txt")
    for spec in candidates:
        if spec.is_file() and spec.stat().st_size <= MAX_FILE_BYTES:
            return spec.read_text(encoding="utf-8", errors="replace")
    return ""


#: The stock opening of RTLLM's descriptions: says nothing about the design.
_PREAMBLE = re.compile(r"^please act as a professional verilog designer\.?\s*", re.IGNORECASE)


def _synopsis(text: str) -> str:
    flat = _PREAMBLE.sub("", " ".join(text.split()))
    return flat if len(flat) <= _SYNOPSIS_CHARS else flat[:_SYNOPSIS_CHARS - 1] + "…"


def _task_id(path: Path) -> str | None:
    ref = _VEVAL_REF.match(path.stem)
    if ref is not None:
        return ref.group(1)
    if (path.parent / "design_description.txt").is_file():
        return path.parent.name
    return None


def _marked(path: Path, root: Path) -> bool:
    for folder in (path.parent, *path.parent.parents):
        if (folder / EVALUATION_MARKER).exists():
            return True
        if folder == root:
            break
    return False


def _lint(pipeline: Pipeline, path: Path, text: str, module: str) -> LintStatus:
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", path.name).lstrip(".") or "design.v"
    task = Task(id=f"index:{module}", spec="", top=module)
    report = pipeline.validate(task, Candidate(files=(SourceFile(name=name, content=text),)))
    if report.verdict is Verdict.PASS:
        return LintStatus(status="pass")
    failing = next((s for s in report.stages if s.verdict is not Verdict.PASS), None)
    message = ""
    if failing is not None:
        message = failing.feedback[0].message if failing.feedback else failing.log
    status = "fail" if report.verdict in (Verdict.FAIL, Verdict.ERROR) else "error"
    return LintStatus(status=status, message=_synopsis(message))  # type: ignore[arg-type]


def _files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part.startswith(("_", ".")) for part in rel.parts[:-1]):
            continue
        if path.suffix in _HDL and path.is_file():
            yield path


def index_folder(root: str | Path, *, pipeline: Pipeline | None = None,
                 evaluation: bool = False, today: date | None = None) -> ReferenceIndex:
    """Index every module under ``root`` (see the module docstring for what is skipped).

    ``pipeline`` (e.g. ``Pipeline.build(host, simulate=False)``) lints each module in the
    sandbox; without one the lint status is ``not_checked``. ``evaluation=True`` marks the whole
    folder as evaluation data (never retrieved).
    """
    base = Path(root).resolve()
    modules: list[ReferenceModule] = []
    skipped: list[str] = []
    for path in _files(base):
        rel = path.relative_to(base).as_posix()
        resolved = path.resolve()
        if base not in resolved.parents:
            skipped.append(f"{rel}: links outside the root")
            continue
        if _TESTBENCH.match(path.stem):
            skipped.append(f"{rel}: testbench")
            continue
        if path.stat().st_size > MAX_FILE_BYTES:
            skipped.append(f"{rel}: larger than {MAX_FILE_BYTES} bytes")
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        scan = scan_modules(text)
        if not scan.ok or not scan.modules:
            skipped.append(f"{rel}: no module declaration found")
            continue
        task_id = _task_id(path)
        synopsis = _synopsis(_spec_beside(path, task_id) or _leading_comment(text))
        digest = content_digest(text)
        marked = evaluation or _marked(path, base)
        for decl in scan.modules:
            ports = scan_ports(text, decl.end) if decl.end is not None else ()
            lint = _lint(pipeline, path, text, decl.name) if pipeline else LintStatus()
            modules.append(ReferenceModule(
                file=rel, path=str(resolved), module=decl.name, ports=ports, synopsis=synopsis,
                lint=lint, task_id=task_id, digest=digest, evaluation=marked))
    return ReferenceIndex(root=str(base), modules=tuple(modules), skipped=tuple(skipped),
                          indexed_on=today or date.today())
