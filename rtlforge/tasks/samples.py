"""VerilogEval-style JSONL samples: one ``{"task_id": ..., "completion": ...}`` object a line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.core.errors import TaskFormatError
from rtlforge.core.untrusted import load_json
from rtlforge.tasks.loader import _type_name

__all__ = ["MAX_LINE_CHARS", "Sample", "load_samples"]

#: Longest samples line read: a completion is a design, and a workspace file holds at most
#: 4 M characters (rtlforge.sandbox.runner.MAX_FILE_CHARS); room for the JSON around it.
MAX_LINE_CHARS = 16 * 1024 * 1024


class Sample(BaseModel):
    """One model completion for one task, as in VerilogEval's ``samples.jsonl``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    completion: str
    extra: dict[str, Any] = Field(default_factory=dict)  # every other key, kept for reports


def load_samples(path: str | Path) -> list[Sample]:
    """Read a JSONL file of ``{"task_id": ..., "completion": ...}`` objects.

    Blank lines are skipped; every other key of a line is kept in :attr:`Sample.extra` so that
    fields like ``expect`` or a model name survive into reports.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TaskFormatError(f"cannot read samples file {path}: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TaskFormatError(f"{path}: not UTF-8 text (bad byte at offset {exc.start})") from exc
    samples = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:  # bounded: a line of `[[[[...` must be a typed error, not a RecursionError
            record = load_json(line, what="a samples line", max_chars=MAX_LINE_CHARS)
        except json.JSONDecodeError as exc:
            raise TaskFormatError(f"{where}: invalid JSON: {exc.msg}") from exc
        if not isinstance(record, dict):
            raise TaskFormatError(f"{where}: expected a JSON object, got {_type_name(record)}")
        task_id, completion = record.pop("task_id", None), record.pop("completion", None)
        if not isinstance(task_id, str) or not task_id:
            raise TaskFormatError(f"{where}: 'task_id' must be a non-empty string")
        if not isinstance(completion, str):
            raise TaskFormatError(f"{where}: 'completion' must be a string")
        samples.append(Sample(task_id=task_id, completion=completion, extra=record))
    return samples
