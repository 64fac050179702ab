"""Multi-file answers: a task that wants several files back, and how an answer gives them.

Most tasks want one Verilog design, which :mod:`rtlforge.core.extract` takes out of model text.
A task in a benchmark like NVIDIA CVDP instead names the files the answer must return, by
their path in a project (``rtl/fifo.sv``, ``rtl/fifo_top.sv``). Such a task declares them in
its metadata under :data:`ANSWER_FILES_KEY`, each with the flat name its candidate file gets
(run directories are flat, :class:`~rtlforge.core.models.SourceFile` names have no ``/``).
This module is the one way from an answer to those files, for evaluation, rewards and the
generators' extraction alike.

An answer gives its files

- as one fenced block per file, the path on the opening fence line (```` ```verilog
  rtl/x.sv ````) or on the line above the block (``### rtl/x.sv``, ``**rtl/x.sv**``,
  ``File: rtl/x.sv``); a path may be written as given or by its base name when that is
  unambiguous; when a path appears twice the last block wins (a draft, then a fix);
- as CVDP's own JSON schema, ``{"code": [{"rtl/x.sv": "..."}]}``, or a plain ``{path: text}``
  object, bare or in a ``json`` fenced block;
- as a mapping ``{path: text}`` handed over by a program.

A task wanting one file also takes an answer that names none: its last untagged or HDL fenced
block, else the Verilog :func:`~rtlforge.core.extract.extract_verilog` finds. Blocks naming a
file the task does not want are ignored. An answer holding none of the files raises
:class:`~rtlforge.core.errors.ExtractionError`; one holding some is a candidate without the
others, which the task's validator reports as missing (a wrong answer, not a broken harness).
Everything is linear in the answer's length: lines are scanned once, JSON is parsed bounded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from rtlforge.core.errors import ConfigError, ExtractionError
from rtlforge.core.extract import extract_verilog
from rtlforge.core.models import Candidate, SourceFile, Task
from rtlforge.core.untrusted import load_json

__all__ = ["ANSWER_FILES_KEY", "MAX_ANSWER_CHARS", "AnswerFile", "answer_files",
           "candidate_from_answer", "extract_files"]

#: Task metadata key holding the files an answer must return (a list of :class:`AnswerFile`).
ANSWER_FILES_KEY = "answer_files"
#: Longest answer read (characters): a few designs, never a dump.
MAX_ANSWER_CHARS = 8 * 1024 * 1024
_HDL_SUFFIXES = (".v", ".sv", ".vh", ".svh")
_HDL_LANGS = frozenset({"", "verilog", "systemverilog", "sv", "v", "vh", "svh"})
#: Characters that separate a path from the markup around it on a fence or heading line.
_SEPARATORS = str.maketrans({c: " " for c in "`*#:=\"'()[],;<>|"})
#: Container prefixes an answer may put before a project path (CVDP runs in /code).
_PREFIXES = ("/code/", "./", "/")


class AnswerFile(BaseModel):
    """One file a task wants back: its ``path`` in the project and the flat ``name`` of the
    candidate file that carries it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    name: str

    @property
    def is_hdl(self) -> bool:
        return self.path.lower().endswith(_HDL_SUFFIXES)


_FILES = TypeAdapter(tuple[AnswerFile, ...])


def answer_files(task: Task) -> tuple[AnswerFile, ...]:
    """The files ``task`` wants back, or ``()`` for a task that wants one design.

    A malformed declaration is the task's fault: :class:`ConfigError`, never a verdict."""
    raw = task.metadata.get(ANSWER_FILES_KEY)
    if raw is None:
        return ()
    try:
        files = _FILES.validate_python(raw)
    except ValidationError as exc:
        raise ConfigError(f"task {task.id!r}: metadata {ANSWER_FILES_KEY!r} is not a list of "
                          f"{{path, name}} objects: {exc.errors()[0]['msg']}") from exc
    if not files or len({f.path for f in files}) != len(files) \
            or len({f.name for f in files}) != len(files):
        raise ConfigError(f"task {task.id!r}: metadata {ANSWER_FILES_KEY!r} must name at least "
                          "one file, each path and name once")
    return files


def _clean(path: str) -> str:
    for prefix in _PREFIXES:
        if path.startswith(prefix):
            return path[len(prefix):]
    return path


class _Names:
    """Resolves what an answer calls a file to the path the task wants."""

    def __init__(self, files: Sequence[AnswerFile]) -> None:
        self.paths = {f.path for f in files}
        bases: dict[str, list[str]] = {}
        for f in files:
            bases.setdefault(f.path.rsplit("/", 1)[-1], []).append(f.path)
        self.bases = {base: paths[0] for base, paths in bases.items() if len(paths) == 1}

    def resolve(self, word: str) -> str | None:
        word = _clean(word.strip())
        if word in self.paths:
            return word
        return self.bases.get(word)

    def find(self, line: str) -> str | None:
        """The one wanted path a fence info string or heading line names (the last one)."""
        found = None
        for word in line.translate(_SEPARATORS).split():
            path = self.resolve(word)
            if path is not None:
                found = path
        return found


@dataclass(frozen=True)
class _Block:
    lang: str
    info: str
    above: str
    body: str


def _blocks(text: str) -> list[_Block]:
    """Fenced blocks, scanned line by line (linear): an unclosed block runs to the end."""
    blocks: list[_Block] = []
    lines = text.split("\n")
    above = ""
    i = 0
    while i < len(lines):
        stripped = lines[i].lstrip(" ")
        fence_len = len(stripped) - len(stripped.lstrip("`"))
        if fence_len >= 3 and len(lines[i]) - len(stripped) <= 3 and "`" not in \
                stripped[fence_len:]:
            info = stripped[fence_len:].strip()
            lang = info.split(maxsplit=1)[0].lower() if info else ""
            body: list[str] = []
            i += 1
            while i < len(lines):
                closing = lines[i].strip()
                if closing.startswith("`" * fence_len) and not closing.strip("`"):
                    break
                body.append(lines[i])
                i += 1
            blocks.append(_Block(lang=lang, info=info, above=above, body="\n".join(body)))
            above = ""
        elif lines[i].strip():
            above = lines[i].strip()[:300]
        i += 1
    return blocks


def _from_json(value: Any, names: _Names, single: str | None) -> dict[str, str]:
    """Files from CVDP's ``{"code": [{path: text}]}``, ``{"response": text}`` or a mapping."""
    if not isinstance(value, dict):
        return {}
    code = value.get("code")
    if isinstance(code, dict):
        code = [code]
    if isinstance(code, list):
        merged: dict[str, Any] = {}
        for item in code:
            if isinstance(item, dict):
                merged.update(item)
        return _from_mapping(merged, names)
    for key in ("response", "direct_text"):
        if single is not None and isinstance(value.get(key), str) and len(value) == 1:
            return {single: value[key]}
    return _from_mapping(value, names)


def _from_mapping(mapping: Mapping[Any, Any], names: _Names) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, content in mapping.items():
        path = names.resolve(key) if isinstance(key, str) else None
        if path is not None and isinstance(content, str):
            out[path] = content
    return out


def _parse_json(text: str) -> Any:
    try:
        return load_json(text, what="an answer", max_chars=MAX_ANSWER_CHARS)
    except (json.JSONDecodeError, ConfigError):
        return None


def _from_text(text: str, files: Sequence[AnswerFile], names: _Names) -> dict[str, str]:
    ends = text.rfind("</think>")
    if ends >= 0 and text[ends + len("</think>"):].strip():
        text = text[ends + len("</think>"):]
    single = files[0] if len(files) == 1 else None
    stripped = text.strip()
    if stripped.startswith("{"):
        found = _from_json(_parse_json(stripped), names, single.path if single else None)
        if found:
            return found
    blocks = _blocks(text)
    out: dict[str, str] = {}
    for block in blocks:
        path = names.find(block.info) or names.find(block.above)
        if path is not None:
            out[path] = block.body.strip("\n") + "\n"
    if out:
        return out
    for block in blocks:
        if block.lang == "json":
            found = _from_json(_parse_json(block.body), names, single.path if single else None)
            if found:
                return found
    if single is None:
        return {}
    fitting = [b for b in blocks if b.lang in _HDL_LANGS] if single.is_hdl else blocks
    if fitting:
        return {single.path: fitting[-1].body.strip("\n") + "\n"}
    if single.is_hdl:
        return {single.path: extract_verilog(text)}
    return {single.path: stripped + "\n"} if stripped else {}


def extract_files(answer: str | Mapping[str, str],
                  files: Sequence[AnswerFile]) -> dict[str, str]:
    """``{flat name: content}`` of every wanted file ``answer`` holds (see the module doc).

    Raises :class:`ExtractionError` when it holds none of them."""
    if not files:
        raise ValueError("extract_files needs the files the task wants")
    names = _Names(files)
    if isinstance(answer, Mapping):
        found = _from_mapping(answer, names)
    elif isinstance(answer, str):
        if len(answer) > MAX_ANSWER_CHARS:
            raise ExtractionError(f"the answer is {len(answer)} characters, over the "
                                  f"{MAX_ANSWER_CHARS}-character limit")
        try:
            found = _from_text(answer, files, names)
        except ExtractionError as exc:
            raise ExtractionError(f"{exc}; expected {files[0].path}") from exc
    else:
        raise ExtractionError(f"an answer must be text or a mapping of paths to text, not "
                              f"{type(answer).__name__}")
    if not found:
        wanted = ", ".join(f.path for f in files)
        raise ExtractionError(f"the answer holds none of the files the task wants ({wanted}): "
                              "give each in its own fenced block with its path on the opening "
                              "fence line")
    by_path = {f.path: f.name for f in files}
    return {by_path[path]: text for path, text in found.items()}


def candidate_from_answer(answer: str | Mapping[str, str], files: Sequence[AnswerFile],
                          **kwargs: Any) -> Candidate:
    """A candidate of the wanted files ``answer`` holds, under their flat names (in the task's
    order); ``kwargs`` go to :class:`Candidate`. Raises :class:`ExtractionError` for none."""
    found = extract_files(answer, files)
    return Candidate(files=tuple(SourceFile(name=f.name, content=found[f.name])
                                 for f in files if f.name in found), **kwargs)
