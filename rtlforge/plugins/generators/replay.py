"""``replay`` generator: serve recorded samples so every pipeline runs offline and reproducibly.

Recordings come from a JSONL file (``{"task_id", "completion", "method"?, "trial"?,
"iteration"?, "sample_index"?}`` per line) or from a folder of per-trial model outputs such as
RTLLM's ``_chatgpt4/t1..t5/<design>.v`` (read with :mod:`rtlforge.tasks.rtllm`, so the
same file-to-task matching and the same unmatched-file bookkeeping apply).

A request is answered from the recordings of ``request.task.id`` that pass the selectors, in a
fixed order (method, trial, iteration, sample_index, then load order). Fewer recordings than
``params.n`` return what exists; none return ``[]`` — the generator declines, it does not fail.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rtlforge.core.errors import TaskFormatError
from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.interfaces import (
    Generation,
    GenerationRequest,
    SamplingParams,
)
from rtlforge.core.log import get_logger
from rtlforge.core.models import Task
from rtlforge.generation.base import ScopedGenerator, make_generation
from rtlforge.tasks.rtllm import MatchedFile, load_llm_outputs, load_rtllm
from rtlforge.tasks.samples import load_samples

log = get_logger("rtlforge.generators.replay")

_TRIAL_DIR = re.compile(r"t\d+")
_VERILOG_SUFFIXES = (".v", ".sv")
#: Request metadata keys that override the constructor's selectors.
SELECTOR_KEYS = ("method", "trial", "iteration")


@dataclass(frozen=True)
class Recording:
    """One recorded completion and where it came from."""

    task_id: str
    completion: str
    method: str | None = None
    trial: int | None = None
    iteration: int | None = None
    sample_index: int | None = None
    source: str = ""
    order: int = 0  # load order: the final tie-breaker, so JSONL order is kept otherwise

    def sort_key(self) -> tuple[str, int, int, int, int]:
        return (self.method or "", self.trial or 0, self.iteration or 0,
                self.sample_index or 0, self.order)

    def metadata(self) -> dict[str, Any]:
        """What a Generation says about its recording (the recorded fields, not the request's)."""
        fields = {"task_id": self.task_id, "method": self.method, "trial": self.trial,
                  "iteration": self.iteration, "sample_index": self.sample_index,
                  "source": self.source}
        return {k: v for k, v in fields.items() if v is not None}


def _int_field(value: object, key: str, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TaskFormatError(f"{where}: {key!r} must be an integer, not {value!r}")
    return value


def _load_jsonl(path: Path, start: int) -> list[Recording]:
    out = []
    for k, sample in enumerate(load_samples(path)):
        where = f"{path}: record {k + 1}"
        method = sample.extra.get("method")
        if method is not None and not isinstance(method, str):
            raise TaskFormatError(f"{where}: 'method' must be a string")
        out.append(Recording(
            task_id=sample.task_id, completion=sample.completion, method=method,
            trial=_int_field(sample.extra.get("trial"), "trial", where),
            iteration=_int_field(sample.extra.get("iteration"), "iteration", where),
            sample_index=_int_field(sample.extra.get("sample_index"), "sample_index", where),
            source=f"{path.name}#{k + 1}", order=start + k,
        ))
    return out


def _stem_tasks(root: Path) -> dict[str, Task]:
    """Placeholder tasks named after the files, for folders replayed without a task set."""
    folders = [root] + [c for c in root.iterdir() if c.is_dir() and _TRIAL_DIR.fullmatch(c.name)]
    stems = {p.stem for folder in folders for p in folder.iterdir()
             if p.is_file() and p.suffix in _VERILOG_SUFFIXES}
    return {stem: Task(id=stem, spec="", top=stem) for stem in sorted(stems)}


class ReplayGenerator(ScopedGenerator):
    """Hands out recorded completions instead of sampling a model.

    Args:
        path: a JSONL file, a folder of ``tN/<design>.v`` outputs (or bare ``.v`` files,
            trial 1), or a list of them (e.g. several methods' folders).
        tasks: tasks used to match folder files to task ids (aliases such as ``calender.v``);
            without them (or ``tasks_root``) a file's stem is its task id. Ignored for JSONL.
        tasks_root: an RTLLM v2 folder whose designs are those tasks
            (:func:`~rtlforge.tasks.rtllm.load_rtllm`); not together with ``tasks``.
        method: replay only recordings of this method (None: any); a request can override it
            through ``request.metadata["method"]``.
        trial: replay only this trial, or these trials (None: any); overridable per request.
        iteration: replay only this iteration (None: any); overridable per request.
        cycle: hand out successive windows of ``n`` recordings across rounds instead of always
            the first ``n``: the window is ``request.iteration`` when set (0 = first), else a
            cursor per task and selectors that advances on every call (see :meth:`reset`).
    """

    name: ClassVar[str] = "replay"

    def __init__(
        self,
        *,
        path: str | Path | Sequence[str | Path],
        tasks: Mapping[str, Task] | Iterable[Task] | None = None,
        tasks_root: str | Path | None = None,
        method: str | None = None,
        trial: int | Sequence[int] | None = None,
        iteration: int | None = None,
        cycle: bool = False,
    ) -> None:
        paths = [Path(path)] if isinstance(path, str | Path) else [Path(p) for p in path]
        if not paths:
            raise ValueError("replay needs at least one path")
        if tasks is not None and tasks_root is not None:
            raise ValueError("pass tasks or tasks_root, not both")
        task_map: Mapping[str, Task] | None = None
        if tasks_root is not None:
            task_map = {t.id: t for t in load_rtllm(tasks_root)}
        elif tasks is not None:
            task_map = tasks if isinstance(tasks, Mapping) else {t.id: t for t in tasks}
        self.selectors: dict[str, Any] = {"method": method, "trial": trial,
                                          "iteration": iteration}
        self.cycle = cycle
        self.unmatched: tuple[MatchedFile, ...] = ()
        recordings: list[Recording] = []
        for p in paths:
            recordings.extend(self._load(p, task_map, start=len(recordings)))
        by_task: dict[str, list[Recording]] = {}
        for rec in recordings:
            by_task.setdefault(rec.task_id, []).append(rec)
        self._by_task = {tid: tuple(sorted(recs, key=Recording.sort_key))
                         for tid, recs in by_task.items()}
        self._cursors: dict[tuple[Any, ...], int] = {}
        self._lock = threading.Lock()
        super().__init__()
        log.debug("replay_loaded", paths=[str(p) for p in paths], tasks=len(self._by_task),
                  recordings=len(recordings), unmatched=len(self.unmatched))

    def _load(self, path: Path, task_map: Mapping[str, Task] | None, start: int
              ) -> list[Recording]:
        if path.is_file():
            return _load_jsonl(path, start)
        if not path.is_dir():
            raise TaskFormatError(f"replay source {path} does not exist")
        outputs = load_llm_outputs(path, task_map if task_map is not None else _stem_tasks(path))
        self.unmatched += outputs.unmatched
        if outputs.unmatched:
            log.warning("replay_unmatched_files", root=str(path), count=len(outputs.unmatched))
        return [
            Recording(task_id=s.task_id, completion=s.completion, method=s.extra.get("method"),
                      trial=s.extra.get("trial"), iteration=s.extra.get("iteration"),
                      source=f"{path.name}/{s.extra.get('source', '')}", order=start + k)
            for k, s in enumerate(outputs.samples)
        ]

    def __repr__(self) -> str:
        return (f"ReplayGenerator(tasks={len(self._by_task)}, selectors={self.selectors}, "
                f"cycle={self.cycle})")

    # ------------------------------------------------------------------ introspection

    @property
    def task_ids(self) -> list[str]:
        return sorted(self._by_task)

    def recordings(self, task_id: str, **selectors: Any) -> tuple[Recording, ...]:
        """The ordered pool a request for ``task_id`` draws from (selectors as in metadata)."""
        chosen = {**self.selectors, **{k: v for k, v in selectors.items() if v is not None}}
        return tuple(r for r in self._by_task.get(task_id, ()) if _matches(r, chosen))

    def reset(self) -> None:
        """Rewind every cycling cursor to the first window."""
        with self._lock:
            self._cursors.clear()

    # ------------------------------------------------------------------ Generator API

    def generate(
        self, requests: Sequence[GenerationRequest], params: SamplingParams
    ) -> list[list[Generation]]:
        out: list[list[Generation]] = []
        with self._scope.call() as token:
            for request in requests:
                token.check()
                out.append(self._answer(request, params.n))
        return out

    def _answer(self, request: GenerationRequest, n: int) -> list[Generation]:
        task_id = request.task.id if request.task is not None else request.metadata.get(
            "task_id")
        if not isinstance(task_id, str):
            raise ValueError("replay needs request.task (or metadata['task_id']) to find "
                             "recordings")
        overrides = {k: request.metadata[k] for k in SELECTOR_KEYS if k in request.metadata}
        chosen = {**self.selectors, **overrides}
        pool = tuple(r for r in self._by_task.get(task_id, ()) if _matches(r, chosen))
        picked = self._pick(pool, n, request, (task_id, *map(_freeze, chosen.values())))
        self._usage.add(requests=1, attempts=1, generations=len(picked))
        return [
            make_generation(rec.completion, generator=self.name, request=request,
                            sample_index=i, model=rec.method, metadata=rec.metadata())
            for i, rec in enumerate(picked)
        ]

    def _pick(self, pool: tuple[Recording, ...], n: int, request: GenerationRequest,
              key: tuple[Any, ...]) -> list[Recording]:
        if len(pool) <= n:
            return list(pool)
        if not self.cycle:
            return list(pool[:n])
        if request.iteration is not None:
            start = (request.iteration * n) % len(pool)
        else:
            with self._lock:
                start = self._cursors.get(key, 0)
                self._cursors[key] = (start + n) % len(pool)
        return [pool[(start + j) % len(pool)] for j in range(n)]


def _freeze(value: Any) -> Any:
    return tuple(value) if isinstance(value, list | tuple) else value


def _matches(rec: Recording, selectors: Mapping[str, Any]) -> bool:
    method, trial, iteration = (selectors.get(k) for k in SELECTOR_KEYS)
    if method is not None and rec.method != method:
        return False
    if trial is not None:
        trials = {trial} if isinstance(trial, int) else set(trial)
        if rec.trial not in trials:
            return False
    return iteration is None or rec.iteration == iteration


@hookimpl
def register_generators(register: Register) -> None:
    register(ReplayGenerator)
