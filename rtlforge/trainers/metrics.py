"""Training metrics: the ``metrics.jsonl`` a run appends a record to per logged step, read back.

Every line is flushed and fsynced as it is written, so a crash loses at most the line being
written, and a resumed run first drops the records logged after its checkpoint, so its file reads
like an uninterrupted run's.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rtlforge.core.untrusted import load_json
from rtlforge.trainers.files import _atomic_write_text

__all__ = ["MetricsWriter", "ProgressCallback", "read_metrics"]


ProgressCallback = Callable[[Mapping[str, Any]], None]
"""Called with each metrics record right after it is durably written (e.g. to draw progress)."""


def _jsonable(value: Any) -> Any:
    """Tensors/numpy scalars -> Python numbers; NaN/inf -> None (strict JSON has no NaN)."""
    if hasattr(value, "item") and callable(value.item):
        try:
            value = value.item()
        except (ValueError, RuntimeError):  # a non-scalar array/tensor
            value = value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


class MetricsWriter:
    """Append-only JSONL metrics: one object per line, flushed and fsynced per line.

    A crash loses at most the line being written; :func:`read_metrics` skips a torn last line.
    ``truncate_after`` (used on resume) first drops records of steps after the checkpoint, so a
    resumed run's file reads like an uninterrupted one.
    """

    def __init__(self, path: str | Path, *, truncate_after: int | None = None,
                 callback: ProgressCallback | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.callback = callback
        if truncate_after is not None and self.path.exists():
            kept = [r for r in read_metrics(self.path)
                    if not isinstance(r.get("step"), int) or r["step"] <= truncate_after]
            _atomic_write_text(self.path, "".join(_dump_line(r) for r in kept))
        self._fh = self.path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, record: Mapping[str, Any]) -> None:
        line = _dump_line(record)
        with self._lock:
            self._fh.write(line)
            self._fh.flush()
            os.fsync(self._fh.fileno())
        if self.callback is not None:
            self.callback(record)

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.close()

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _dump_line(record: Mapping[str, Any]) -> str:
    return json.dumps(_jsonable(dict(record)), allow_nan=False, sort_keys=False) + "\n"


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """Every complete record of a metrics file (a torn final line from a crash is skipped)."""
    records: list[dict[str, Any]] = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return records
    for line in text.splitlines():
        try:
            obj = load_json(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            records.append(obj)
    return records
