"""A stand-in for :class:`rtlforge.sandbox.runner.SandboxRunner` that runs no tool.

Most of a validator or estimator is parsing: turning a tool's exit status and output into a
verdict and feedback. Testing that against the real tool needs it installed and only reaches the
outputs the tool happens to give; the fake returns whatever the test scripts (a crash, a
timeout, an unusual message) and records what the plugin asked for, so a test can check both
the verdict and the command line.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rtlforge.core.models import SourceFile, ToolInfo, ToolSpec
from rtlforge.sandbox.runner import Limits, ToolRun

if TYPE_CHECKING:
    from rtlforge.sandbox.gate import Containment


class UnscriptedToolError(AssertionError):
    """The plugin ran a tool the test gave no result for (a test bug, so it fails the test
    instead of passing for an infrastructure error the plugin would report)."""


@dataclass(frozen=True)
class ScriptedRun:
    """What one fake tool run returns. ``files`` are written into the run directory first (the
    log or netlist the tool would have left); ``raises`` is raised instead of returning (a
    ``ToolMissingError`` or ``SandboxError`` to test the infrastructure path)."""

    returncode: int | None = 0
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    output_overflow: bool = False
    files: Mapping[str, str] = field(default_factory=dict)
    raises: BaseException | None = None


@dataclass(frozen=True)
class ToolCall:
    """One :meth:`FakeRunner.run` call, as the plugin made it."""

    argv: tuple[str, ...]
    cwd: Path
    timeout: float | None = None
    limits: Limits | None = None
    env: Mapping[str, str] | None = None
    stdin: str | None = None
    ro_paths: tuple[str, ...] = ()
    #: The tool spec the plugin declared for this run (None: it passed none).
    spec: ToolSpec | None = None

    @property
    def tool(self) -> str:
        """The executable's base name (``/usr/bin/iverilog`` -> ``iverilog``)."""
        return Path(self.argv[0]).name


@dataclass(frozen=True)
class PutCall:
    """One :meth:`FakeRunner.put` call: the files as written and the role they were put as."""

    workdir: Path
    files: tuple[SourceFile, ...]
    role: str
    #: Whether the plugin asked for the design-to-testbench containment check with this put.
    contained: bool = False

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.files]


Script = ScriptedRun | Sequence[ScriptedRun] | Callable[[ToolCall], ScriptedRun]


class FakeRunner:
    """Answers ``run`` from a script keyed by tool name and records every call.

    ``script`` maps a tool's base name to one ScriptedRun (returned every time), a sequence
    (one per call, in order; running it once more fails the test) or a function of the
    :class:`ToolCall`. ``default`` answers tools the script does not name; without it they fail
    the test with :class:`UnscriptedToolError`. Files reach real directories (``base_dir``, a
    fresh temporary directory by default), so a plugin can read what it wrote. Nothing is gated:
    ``unsafe_skip_gate`` is True, which also lets a :class:`~rtlforge.validate.pipeline.Pipeline`
    run on this runner.
    """

    unsafe_skip_gate = True

    def __init__(self, script: Mapping[str, Script] | None = None, *,
                 default: ScriptedRun | None = None, base_dir: str | Path | None = None,
                 limits: Limits | None = None) -> None:
        self.script: dict[str, Script] = dict(script or {})
        self.default = default
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self.limits = limits or Limits()
        self.calls: list[ToolCall] = []
        self.puts: list[PutCall] = []
        self._used: dict[str, int] = {}

    # ---------------------------------------------------------------- what was asked

    @property
    def argvs(self) -> list[tuple[str, ...]]:
        """Every command line run, in order."""
        return [call.argv for call in self.calls]

    @property
    def tools(self) -> list[str]:
        """The base name of every tool run, in order."""
        return [call.tool for call in self.calls]

    def put_names(self, role: str | None = None) -> list[str]:
        """Names of the files put (of one role, or all), in order."""
        return [n for put in self.puts if role in (None, put.role) for n in put.names]

    # ---------------------------------------------------------------- the SandboxRunner surface

    def make_workspace(self, prefix: str = "rtlforge-") -> Path:
        """A fresh run directory, kept for the test to inspect."""
        if self.base_dir is not None:
            self.base_dir.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=prefix, dir=self.base_dir)).resolve()

    @contextlib.contextmanager
    def workspace(self, prefix: str = "rtlforge-") -> Iterator[Path]:
        yield self.make_workspace(prefix)

    def put(self, workdir: str | Path, files: Sequence[SourceFile], *, role: str,
            readable: Iterable[str] | None = None,
            rewrite: Callable[[SourceFile], str] | None = None,
            contain: Containment | None = None) -> tuple[SourceFile, ...]:
        """Write ``files`` as given; no gate runs, so ``contain`` is only recorded."""
        written = tuple(files)
        path = Path(workdir)
        for f in written:
            (path / f.name).write_text(rewrite(f) if rewrite else f.content, encoding="utf-8")
        self.puts.append(PutCall(workdir=path, files=written, role=role,
                                 contained=contain is not None))
        return written

    def run(self, argv: Sequence[str], cwd: str | Path, *, timeout: float | None = None,
            limits: Limits | None = None, env: Mapping[str, str] | None = None,
            stdin: str | None = None, ro_paths: Sequence[str | Path] = (),
            tool: ToolSpec | None = None) -> ToolRun:
        call = ToolCall(argv=tuple(argv), cwd=Path(cwd), timeout=timeout, limits=limits,
                        env=dict(env) if env is not None else None, stdin=stdin,
                        ro_paths=tuple(str(p) for p in ro_paths), spec=tool)
        self.calls.append(call)
        answer = self._answer(call)
        if answer.raises is not None:
            raise answer.raises
        for name, text in answer.files.items():
            (call.cwd / name).write_text(text, encoding="utf-8")
        return ToolRun(argv=call.argv, returncode=answer.returncode, stdout=answer.stdout,
                       stderr=answer.stderr, seconds=0.0, timed_out=answer.timed_out,
                       output_overflow=answer.output_overflow,
                       tool=ToolInfo(name=call.tool, version="fake"), network_isolated=True)

    def spawn(self, argv: Sequence[str], cwd: str | Path, **_: object) -> None:
        raise NotImplementedError(
            f"FakeRunner cannot start the long-lived tool {argv[0]!r}; test the code that "
            "talks to it with a real SandboxRunner")

    def close(self) -> None:
        """Nothing to stop (the real runner stops its spawner processes here)."""

    def __enter__(self) -> FakeRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- scripting

    def _answer(self, call: ToolCall) -> ScriptedRun:
        entry = self.script.get(call.tool)
        if entry is None:
            if self.default is not None:
                return self.default
            raise UnscriptedToolError(
                f"the plugin ran {call.tool!r} ({' '.join(call.argv)}) but the FakeRunner "
                f"script has no result for it (scripted: {sorted(self.script) or 'nothing'})")
        if isinstance(entry, ScriptedRun):
            return entry
        if callable(entry):
            return entry(call)
        used = self._used.get(call.tool, 0)
        if used >= len(entry):
            raise UnscriptedToolError(
                f"{call.tool!r} ran {used + 1} times but the script has {len(entry)} "
                f"result(s) for it (last argv: {' '.join(call.argv)})")
        self._used[call.tool] = used + 1
        return entry[used]
