"""The agent's files: a small in-memory file set with plain names and hard limits.

In memory rather than a directory on disk: there is no path to traverse, no link to follow and
nothing of the host's to read, so every name check below is a defence in depth rather than the
only guard. Files reach a tool only through ``SandboxRunner.put`` (normalised and gated there).
Every refusal is a :class:`WorkspaceError` with a ``kind`` the environment returns to the agent
as an error result; nothing here raises anything else for what an agent sends.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.core.models import SourceFile

__all__ = ["HDL_SUFFIXES", "Workspace", "WorkspaceError", "WorkspaceLimits", "is_testbench_name"]

#: A file name: letters, digits, ``_``, ``-`` and dots, starting with a letter or digit (so no
#: ``..``, no dot-files, no separators, no absolute paths).
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
HDL_SUFFIXES = (".v", ".sv", ".vh", ".svh")
#: What an agent may keep: HDL, its behaviour model, notes and data files.
_SUFFIXES = (*HDL_SUFFIXES, ".py", ".md", ".txt", ".hex", ".mem")
_TESTBENCH = re.compile(r"^(?:tb_|test_).*|.*_tb\.s?v$", re.IGNORECASE)

ErrorKind = Literal["bad_name", "not_found", "too_large", "too_many_files", "not_text",
                    "no_match", "ambiguous_match"]


def is_testbench_name(name: str) -> bool:
    """The naming convention the tools rely on: ``tb_*``, ``test_*`` or ``*_tb.v`` is a
    testbench, never part of the design (docs/behave-env.md)."""
    return bool(_TESTBENCH.match(name))


class WorkspaceError(Exception):
    """A refused file operation; ``kind`` says which rule, the message says what to do."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind


class WorkspaceLimits(BaseModel):
    """Caps on what an agent can store (sizes in UTF-8 bytes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_files: int = Field(16, ge=1, le=1000)
    max_file_bytes: int = Field(128 * 1024, ge=1, le=16 * 1024 * 1024)
    max_total_bytes: int = Field(512 * 1024, ge=1, le=64 * 1024 * 1024)
    max_name_chars: int = Field(64, ge=1, le=200)


class Workspace:
    """File name -> text, with every write checked against :class:`WorkspaceLimits`."""

    def __init__(self, limits: WorkspaceLimits | None = None) -> None:
        self.limits = limits or WorkspaceLimits()
        self._files: dict[str, str] = {}

    # ------------------------------------------------------------------ checks

    def check_name(self, name: object) -> str:
        """``name`` if it is a plain file name this workspace accepts."""
        if not isinstance(name, str) or not name:
            raise WorkspaceError("bad_name", "a file name is a non-empty string")
        shown = name[:80]
        if len(name) > self.limits.max_name_chars:
            raise WorkspaceError("bad_name", f"file name {shown!r}... is longer than "
                                 f"{self.limits.max_name_chars} characters")
        if not _NAME.match(name) or ".." in name:
            raise WorkspaceError("bad_name", f"{shown!r} is not a plain file name: use letters, "
                                 "digits, '_', '-' and '.', no directories or absolute paths")
        if not name.lower().endswith(_SUFFIXES):
            raise WorkspaceError("bad_name", f"{shown!r}: allowed suffixes are "
                                 f"{', '.join(_SUFFIXES)}")
        return name

    def _check_text(self, name: str, content: object) -> str:
        if not isinstance(content, str):
            raise WorkspaceError("not_text", f"{name}: content must be text")
        if "\0" in content:
            raise WorkspaceError("not_text", f"{name}: NUL characters are not allowed")
        try:
            size = len(content.encode("utf-8"))
        except UnicodeEncodeError:
            raise WorkspaceError("not_text", f"{name}: not valid Unicode text") from None
        if size > self.limits.max_file_bytes:
            raise WorkspaceError("too_large", f"{name}: {size} bytes; a file holds at most "
                                 f"{self.limits.max_file_bytes}")
        total = self.total_bytes() - self._size(name) + size
        if total > self.limits.max_total_bytes:
            raise WorkspaceError("too_large", f"{name}: the workspace would hold {total} bytes; "
                                 f"the limit is {self.limits.max_total_bytes}")
        return content

    def _size(self, name: str) -> int:
        text = self._files.get(name)
        return 0 if text is None else len(text.encode("utf-8"))

    # ------------------------------------------------------------------ operations

    def write(self, name: str, content: str) -> int:
        """Create or replace a file; returns its size in bytes."""
        name = self.check_name(name)
        content = self._check_text(name, content)
        if name not in self._files and len(self._files) >= self.limits.max_files:
            raise WorkspaceError("too_many_files", f"the workspace holds at most "
                                 f"{self.limits.max_files} files; delete or reuse one")
        self._files[name] = content
        return self._size(name)

    def read(self, name: str) -> str:
        name = self.check_name(name)
        if name not in self._files:
            raise WorkspaceError("not_found", f"no file {name!r}; files: "
                                 f"{', '.join(self.names()) or '(none)'}")
        return self._files[name]

    def edit(self, name: str, old: str, new: str, *, replace_all: bool = False) -> int:
        """Replace ``old`` by ``new``; ``old`` must occur exactly once unless ``replace_all``.
        Returns the number of replacements."""
        text = self.read(name)
        if not old:
            raise WorkspaceError("no_match", "old_text is empty")
        count = text.count(old)
        if count == 0:
            raise WorkspaceError("no_match", f"{name}: old_text does not occur in the file "
                                 "(it must match exactly, whitespace included)")
        if count > 1 and not replace_all:
            raise WorkspaceError("ambiguous_match", f"{name}: old_text occurs {count} times; "
                                 "give more context or set replace_all")
        self.write(name, text.replace(old, new))
        return count

    def delete(self, name: str) -> None:
        self.read(name)
        del self._files[self.check_name(name)]

    def names(self) -> list[str]:
        return sorted(self._files)

    def sizes(self) -> dict[str, int]:
        return {n: self._size(n) for n in self.names()}

    def total_bytes(self) -> int:
        return sum(self._size(n) for n in self._files)

    def sources(self, names: list[str]) -> tuple[SourceFile, ...]:
        """The named files as :class:`SourceFile`s (each must exist)."""
        return tuple(SourceFile(name=n, content=self.read(n)) for n in names)

    def design_names(self) -> list[str]:
        """HDL files (headers included: a design may `include them) that are not testbenches
        by name: the default design."""
        return [n for n in self.names()
                if n.lower().endswith(HDL_SUFFIXES) and not is_testbench_name(n)]

    def snapshot(self) -> dict[str, str]:
        return dict(self._files)
