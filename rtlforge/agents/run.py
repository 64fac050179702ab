"""A ``refine`` run directory: its settings, one result per finished task, and resuming.

Layout (documented in docs/refine.md)::

    RUN_DIR/settings.json     the run's result-defining settings and each task's digest
    RUN_DIR/results.jsonl     one SolveResult (model_dump_json) per finished task
    RUN_DIR/traces/ID.jsonl   each task's thought events (written by the orchestrator)
    RUN_DIR/decisions.jsonl   every router decision with its outcome (written by the orchestrator)
    RUN_DIR/summary.json      pass@1, solve rate and cost, per tier (rewritten at each run's end)
    RUN_DIR/report.html       the same, drawn (rtlforge.agents.report)

Results only mean something under the settings that made them, so a directory is reused only
when the stored settings equal the current ones (explore's rule, with its difference listing);
a finished task is then skipped, and a task that was interrupted midway is redone from
scratch: its partial trace and decisions are dropped before it starts again.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rtlforge.agents.models import SolveResult, Tier
from rtlforge.core.errors import ConfigError
from rtlforge.core.log import get_logger
from rtlforge.core.models import Task, Verdict
from rtlforge.core.untrusted import load_json
from rtlforge.explore.settings import RunSettingsMismatch, differences, redact

__all__ = ["RUN_FILES", "SETTINGS_VERSION", "RefineRun", "RunSettingsMismatch",
           "UnsafeRunDirError", "first_attempt_passed", "refine_settings", "summarise_results",
           "task_digest", "trace_path"]

log = get_logger("rtlforge.agents.run")

SETTINGS_VERSION = 1
#: What refine writes in a run directory (and all that ``overwrite`` deletes).
RUN_FILES = ("settings.json", "results.jsonl", "decisions.jsonl", "summary.json", "report.html",
             "traces")


class UnsafeRunDirError(ConfigError, ValueError):
    """A run directory refine cannot use safely: one of its own entries is a symbolic link
    (reading, writing or deleting through it would reach files outside the run) or of the
    wrong kind. A usage error (exit 2); ``overwrite`` removes such entries, never their
    targets."""


def trace_path(run_dir: str | Path, task_id: str) -> Path:
    """Where the orchestrator writes a task's trace: ``traces/<id>.jsonl`` with every character
    but ASCII letters, digits and ``._-`` replaced by ``_``; when anything was replaced, a
    digest of the id is appended (``a b`` and ``a_b`` would otherwise share one file, and
    solving one would delete the other's trace)."""
    stem = "".join(c if (c.isascii() and c.isalnum()) or c in "._-" else "_" for c in task_id)
    if stem != task_id or not stem.strip("."):
        digest = hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        stem = f"{stem[:100]}-{digest}"
    return Path(run_dir) / "traces" / f"{stem}.jsonl"


def task_digest(task: Task) -> str:
    """What a task's result depends on: its checks (``Task.digest``), its spec (the prompts
    quote it) and its golden (the leakage guard keeps it out of retrieval)."""
    blob = json.dumps([task.digest(), task.spec, [f.digest() for f in task.golden]])
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _file_digest(path: str | Path | None) -> str | None:
    """A file's content digest (an agents file, a router checkpoint): an edited file keeps its
    name, so the name alone would let old results pass as new ones."""
    if path is None:
        return None
    p = Path(path)
    if p.is_dir():
        h = hashlib.sha256()
        for f in sorted(q for q in p.rglob("*") if q.is_file()):
            h.update(str(f.relative_to(p)).encode() + b"\0" + f.read_bytes())
        return h.hexdigest()[:16]
    if p.is_file():
        return hashlib.sha256(p.read_bytes()).hexdigest()[:16]
    return None


def refine_settings(*, tasks: Mapping[str, Task], generator: str,
                    generator_options: Mapping[str, Any], router: str,
                    router_options: Mapping[str, Any], roles: Mapping[str, Any],
                    agents_file: str | Path | None, max_iterations: int, candidates: int,
                    symbolic: bool, optimize: bool, enabled: Sequence[str] | None = None,
                    seams: Mapping[str, bool] | None = None,
                    gate: str | Path | None = None) -> dict[str, Any]:
    """The result-defining settings of a refine run, as settings.json stores them.

    Harmless settings (``--json``, the live view, ``--run-dir`` itself) are not in it.
    Secret-looking generator options are stored as digests (:func:`redact`).
    """
    path = router_options.get("path")
    return {
        "version": SETTINGS_VERSION,
        "generator": {"name": generator, "options": redact(dict(generator_options))},
        "router": {"name": router, "options": dict(router_options),
                   **({"file_digest": _file_digest(path)} if path else {})},
        "agents": {"file": str(agents_file) if agents_file else None,
                   "file_digest": _file_digest(agents_file), "roles": dict(roles),
                   "enabled": list(enabled) if enabled is not None else None},
        "max_iterations": max_iterations, "candidates": candidates, "symbolic": symbolic,
        "optimize": optimize,
        # the seams (decomposition, guidance, generated testbenches): all on unless switched off
        "seams": {name: bool(on) for name, on in sorted((seams or {}).items())},
        # only when given, so runs without a gate resume across this addition
        **({"guidance_gate": {"file": str(gate), "file_digest": _file_digest(gate)}}
           if gate else {}),
        "tasks": {tid: task_digest(tasks[tid]) for tid in sorted(tasks)},
    }


def _json_lines(path: Path) -> Iterable[dict[str, Any]]:
    """The JSON objects of a JSONL file; a torn line (a killed run) is skipped, also one torn
    inside a UTF-8 sequence, and so is a line nested too deep to parse."""
    if not path.is_file():
        return
    with path.open("rb") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            try:
                obj = load_json(raw.decode("utf-8"))
            except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
                continue
            if isinstance(obj, dict):
                yield obj


def _consistent(result: SolveResult) -> bool:
    """Whether a stored result can stand as finished: a pass must carry its design, and its
    report, when stored, must be a pass too (a corrupted or hand-edited line that contradicts
    itself is redone, not trusted). A line forged consistently is trusted: results.jsonl is
    the user's own record, not a boundary."""
    if result.verdict is not Verdict.PASS:
        return True
    return result.candidate is not None and (result.report is None
                                             or result.report.verdict is Verdict.PASS)


class RefineRun:
    """One run directory: checked against the current settings, then appended to per task."""

    def __init__(self, run_dir: str | Path, settings: Mapping[str, Any], *,
                 overwrite: bool = False) -> None:
        self.run_dir = Path(run_dir)
        self.settings = json.loads(json.dumps(dict(settings), default=str))
        self.overwrite = overwrite
        self.settings_path = self.run_dir / "settings.json"
        self.results_path = self.run_dir / "results.jsonl"
        self.decisions_path = self.run_dir / "decisions.jsonl"
        self.traces_dir = self.run_dir / "traces"

    def trace_path(self, task_id: str) -> Path:
        return trace_path(self.run_dir, task_id)

    def _has_results(self) -> bool:
        return self.settings_path.exists() or self.results_path.exists()

    def _check_layout(self) -> None:
        """Refuse entries refine would follow out of the run directory (symbolic links) or
        could not use (a folder where a file goes, a file where ``traces/`` goes)."""
        for name in RUN_FILES:
            path = self.run_dir / name
            if path.is_symlink():
                raise UnsafeRunDirError(
                    f"run directory {self.run_dir}: {name} is a symbolic link; refine reads, "
                    f"writes and deletes only its own files. Remove it, or start over with "
                    f"--overwrite (which removes the link, not its target).")
            want_dir = name == "traces"
            if path.exists() and path.is_dir() != want_dir:
                raise UnsafeRunDirError(
                    f"run directory {self.run_dir}: {name} should be a "
                    f"{'folder' if want_dir else 'file'}. Remove it, or start over with "
                    f"--overwrite.")
        if self.traces_dir.is_dir():
            for path in self.traces_dir.iterdir():
                if path.is_symlink():
                    raise UnsafeRunDirError(
                        f"run directory {self.run_dir}: traces/{path.name} is a symbolic "
                        f"link. Remove it, or start over with --overwrite.")

    def _check_overwritable(self) -> None:
        """``overwrite`` deletes refine's entries only where refine made them: a directory
        with a ``traces/`` folder or a results file but no settings.json is someone else's
        (``--run-dir ~ --overwrite`` must not delete ``~/traces``)."""
        if self.settings_path.is_file() and not self.settings_path.is_symlink():
            return
        found = [name for name in RUN_FILES
                 if (self.run_dir / name).exists() and not (self.run_dir / name).is_symlink()]
        if found:
            raise UnsafeRunDirError(
                f"run directory {self.run_dir} has {', '.join(found)} but no settings.json: it "
                f"is not a refine run directory, so --overwrite deletes nothing there. Use "
                f"another --run-dir.")

    def check(self) -> None:
        """Raise :class:`RunSettingsMismatch` if the directory holds another run's results and
        :class:`UnsafeRunDirError` if one of refine's entries is a symbolic link or of the
        wrong kind (nothing is written: the CLI calls this before building anything
        expensive)."""
        if self.overwrite:
            self._check_overwritable()
            return
        self._check_layout()
        if not self._has_results():
            return
        stored = None
        if self.settings_path.is_file():
            try:
                stored = load_json(self.settings_path.read_text(encoding="utf-8"))
            except (ValueError, RecursionError):
                stored = None
        diffs = differences(stored, self.settings)
        if diffs:
            raise RunSettingsMismatch(str(self.run_dir), diffs,
                                      "Start over with --overwrite, or use another --run-dir.")

    def finished(self) -> dict[str, SolveResult]:
        """The stored result of every finished task of this run's task set, by id."""
        known = set(self.settings.get("tasks", {}))
        out: dict[str, SolveResult] = {}
        for obj in _json_lines(self.results_path):
            try:
                result = SolveResult.model_validate(obj)
            except ValueError:
                continue
            if result.task_id in known and _consistent(result):
                out[result.task_id] = result
        return out

    def prepare(self) -> dict[str, SolveResult]:
        """Check, then make the directory ready: wiped with ``overwrite``; otherwise every
        trace and decision of an unfinished task is dropped, so an interrupted task restarts
        clean. Returns the finished results (the tasks to skip)."""
        self.check()
        if self.overwrite:
            for name in RUN_FILES:
                target = self.run_dir / name
                if target.is_symlink():  # the link goes, never what it points at
                    target.unlink()
                elif target.is_dir():
                    shutil.rmtree(target)  # does not follow links inside it
                elif target.exists():
                    target.unlink()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.traces_dir.mkdir(exist_ok=True)
        done = self.finished()
        self._rewrite_results(done.values())
        self._drop_unfinished(done)
        self.settings_path.write_text(json.dumps(self.settings, indent=2, sort_keys=True) + "\n",
                                      encoding="utf-8")
        return done

    def _rewrite_results(self, results: Iterable[SolveResult]) -> None:
        """results.jsonl without torn lines, so the next append starts on a fresh line."""
        if not self.results_path.exists():
            return
        tmp = self.results_path.with_suffix(".jsonl.tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            for result in results:
                fh.write(result.model_dump_json() + "\n")
        tmp.replace(self.results_path)

    def _drop_unfinished(self, done: Mapping[str, SolveResult]) -> None:
        keep = {self.trace_path(tid).name for tid in done}
        for path in self.traces_dir.glob("*.jsonl"):
            if path.name not in keep:
                path.unlink()
        if self.decisions_path.exists():
            kept = [d for d in _json_lines(self.decisions_path) if d.get("task_id") in done]
            dropped = sum(1 for _ in _json_lines(self.decisions_path)) - len(kept)
            if dropped:
                log.info("refine_resume_dropped_decisions", run_dir=str(self.run_dir),
                         decisions=dropped)
            tmp = self.decisions_path.with_suffix(".jsonl.tmp")
            with tmp.open("w", encoding="utf-8") as fh:
                for d in kept:
                    fh.write(json.dumps(d) + "\n")
            tmp.replace(self.decisions_path)

    def record(self, result: SolveResult) -> None:
        """Append a finished task's result (flushed: a kill after this keeps the task done)."""
        with self.results_path.open("a", encoding="utf-8") as fh:
            fh.write(result.model_dump_json() + "\n")
            fh.flush()

    def decisions(self) -> list[dict[str, Any]]:
        """Every router decision recorded in the run (as JSON objects)."""
        return list(_json_lines(self.decisions_path))

    def write_summary(self, results: Sequence[SolveResult]) -> tuple[dict[str, Any], Path]:
        """summary.json and report.html from ``results``; returns the summary and the report."""
        from rtlforge.agents.report import write_refine_report

        summary = summarise_results(results)
        summary["run"] = {"run_dir": str(self.run_dir),
                          "generator": self.settings.get("generator", {}).get("name"),
                          "router": self.settings.get("router", {}).get("name"),
                          "max_iterations": self.settings.get("max_iterations"),
                          "candidates": self.settings.get("candidates"),
                          "symbolic": self.settings.get("symbolic"),
                          "optimize": self.settings.get("optimize"),
                          "agents_file": self.settings.get("agents", {}).get("file")}
        (self.run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n",
                                                   encoding="utf-8")
        report = write_refine_report(self.run_dir, results, summary, self.decisions())
        return summary, report


def _per(total: int, solved: int) -> float | None:
    return total / solved if solved else None


def first_attempt_passed(result: SolveResult) -> bool:
    """Whether the task's first iteration passed (its only candidate, or the best of the
    first iteration's candidates); a result without iteration records counts its verdict."""
    if result.records:
        return result.records[0].verdict is Verdict.PASS
    return result.passed


def summarise_results(results: Sequence[SolveResult]) -> dict[str, Any]:
    """pass@1, the solve rate and cost of a set of task results, overall and per tier.

    ``pass_at_1`` is the fraction of tasks whose *first* iteration passed; ``solve_rate`` the
    fraction solved within the iteration budget (after refinement). Both leave infrastructure
    errors out of the denominator and count them apart (as ``rtlforge eval`` does): they say
    nothing about the design. Cost per solved problem is everything spent (all tasks, failed
    ones included) divided by the number solved, the paper's cost figure. Per tier: how many
    tasks each tier solved and the calls, tokens and iterations spent in it.
    """
    verdicts = Counter(r.verdict.value for r in results)
    infra = verdicts.get(Verdict.INFRA_ERROR.value, 0)
    judged = len(results) - infra
    solved = sum(r.passed for r in results)
    first = sum(first_attempt_passed(r) for r in results
                if r.verdict is not Verdict.INFRA_ERROR)
    calls = sum(r.llm_calls for r in results)
    tokens = sum(r.tokens for r in results)
    tiers: dict[str, dict[str, Any]] = {
        t.value: {"solved": 0, "iterations": 0, "llm_calls": 0, "tokens": 0} for t in Tier}
    for r in results:
        if r.passed and r.solved_by is not None:
            tiers[r.solved_by.value]["solved"] += 1
        for rec in r.records:
            cell = tiers[rec.tier.value]
            cell["iterations"] += 1
            cell["llm_calls"] += rec.llm_calls
            cell["tokens"] += rec.tokens
    for cell in tiers.values():
        cell["llm_calls_per_solved"] = _per(cell["llm_calls"], cell["solved"])
        cell["tokens_per_solved"] = _per(cell["tokens"], cell["solved"])
    return {
        "tasks": len(results), "passed": solved, "infra_errors": infra,
        "passed_first": first,
        "pass_at_1": first / judged if judged else None,
        "solve_rate": solved / judged if judged else None,
        "verdicts": dict(sorted(verdicts.items())),
        "iterations": sum(r.iterations for r in results),
        "llm_calls": calls, "tokens": tokens,
        "llm_calls_per_solved": _per(calls, solved), "tokens_per_solved": _per(tokens, solved),
        "seconds": sum(r.seconds for r in results),
        "tiers": tiers,
    }
