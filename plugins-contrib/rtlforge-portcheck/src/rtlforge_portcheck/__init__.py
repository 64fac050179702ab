"""rtlforge-portcheck: an example rtlforge plugin (copy this package to write your own).

It contributes one validator, ``portcheck``, that compares the ports of a candidate's top module
(name, direction and bit width) with the ports the task declares. It is pure Python: pyslang
parses and elaborates the design, so no external tool runs and nothing needs a sandbox.

rtlforge finds this module through the ``rtlforge`` entry-point group declared in
``pyproject.toml`` and calls the ``register_validators`` hook below.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import pyslang
from pyslang import ast, parsing, syntax

from rtlforge import hookimpl
from rtlforge.core.interfaces import ValidationContext, Validator
from rtlforge.core.models import Feedback, Port, StageResult, Task, ToolInfo, Verdict
from rtlforge.eda.feedback import make_feedback

__version__ = "0.1.0"

_PARSED_SUFFIXES = (".v", ".sv")  # headers (.vh, .svh) are only read through `include
_DIRECTIONS = {
    ast.ArgumentDirection.In: "input",
    ast.ArgumentDirection.Out: "output",
    ast.ArgumentDirection.InOut: "inout",
    ast.ArgumentDirection.Ref: "ref",
}


class PortCheck(Validator):
    """Fails a design whose top-module ports differ from ``task.ports``."""

    name = "portcheck"
    stage = "lint"
    order = 150  # after the lint that compiles the design, before simulation

    def applies(self, task: Task) -> bool:
        return bool(task.ports)  # nothing to compare against: the pipeline skips the stage

    def cache_key(self) -> dict[str, Any]:
        # Everything that can change the result: our own version and the parser's.
        return {"name": self.name, "version": __version__, "pyslang": pyslang.__version__}

    def validate(self, ctx: ValidationContext) -> StageResult:
        start = time.perf_counter()
        sources = {f.name: f.content for f in ctx.candidate.files}
        findings, verdict = self._check(ctx, sources)
        return StageResult(
            name=self.name,
            verdict=verdict,
            seconds=time.perf_counter() - start,
            feedback=tuple(findings),
            tools=(ToolInfo(name="pyslang", version=pyslang.__version__),),
            metrics={"expected_ports": len(ctx.task.ports)},
        )

    # ------------------------------------------------------------------------------------------

    def _check(
        self, ctx: ValidationContext, sources: Mapping[str, str]
    ) -> tuple[list[Feedback], Verdict]:
        hint = f"Declare module {ctx.top!r} with exactly these ports: {_signature(ctx.task.ports)}."

        def feedback(category: str, message: str, where: tuple[str | None, int | None]) -> Feedback:
            # make_feedback adds the numbered source lines around the line and a generic hint.
            found = make_feedback(category, message, stage=self.name, files=sources,
                                  file=where[0], line=where[1])
            if category == "port_mismatch":  # the generic hint talks about instances
                found = found.model_copy(update={"hint": hint})
            return found

        design = _Elaborated(sources, ctx)
        if design.top is None:
            if design.errors:  # the top module may be hidden behind the syntax error
                found = design.syntax_feedback(design.errors[0], "the design", feedback)
                return [found], Verdict.ERROR
            message = (f"no module named {ctx.top!r} is declared; the task expects it with ports "
                       f"{_signature(ctx.task.ports)}")
            return [feedback("port_mismatch", message, (None, None))], Verdict.FAIL

        header = design.top.definition.syntax.header
        in_header = [d for d in design.errors if _within(d.location, header.sourceRange)]
        if in_header:
            what = f"the header of module {ctx.top!r}"
            return [design.syntax_feedback(in_header[0], what, feedback)], Verdict.ERROR

        actual = {port.name: port for port in design.top.body.portList}
        findings: list[Feedback] = []
        for want in ctx.task.ports:
            port = actual.get(want.name)
            if port is None:
                findings.append(feedback(
                    "port_mismatch", f"module {ctx.top!r} is missing port {want.name!r} "
                    f"({_describe(want)}) required by the task",
                    design.where(header.name.location)))
                continue
            direction = _DIRECTIONS.get(getattr(port, "direction", None))
            if direction is not None and direction != want.direction:
                findings.append(feedback(
                    "port_mismatch", f"port {want.name!r} is declared {direction} but the task "
                    f"requires {want.direction}", design.where(port.location)))
            width = _width(port)
            if width is not None and width != want.width:
                findings.append(feedback(
                    "port_mismatch", f"port {want.name!r} is {width} bit(s) wide but the task "
                    f"requires {want.width}", design.where(port.location)))
        expected = {p.name for p in ctx.task.ports}
        for name, port in actual.items():
            if name not in expected:
                findings.append(feedback(
                    "port_mismatch", f"module {ctx.top!r} has port {name!r} that the task does "
                    f"not declare (expected {_signature(ctx.task.ports)})",
                    design.where(port.location)))
        # A design that parses but has the wrong interface is wrong, not uncompilable: FAIL.
        return findings, (Verdict.FAIL if findings else Verdict.PASS)


class _Elaborated:
    """The candidate parsed and elaborated by pyslang, with ``ctx.top`` as the only top."""

    def __init__(self, sources: Mapping[str, str], ctx: ValidationContext) -> None:
        self.sm = pyslang.SourceManager()
        pp = parsing.PreprocessorOptions()
        pp.additionalIncludePaths = [str(ctx.workdir)]  # `include finds the candidate's headers
        trees = [
            syntax.SyntaxTree.fromText(text, self.sm, name, str(ctx.workdir / name),
                                       pyslang.Bag([pp]))
            for name, text in sources.items()
            if name.lower().endswith(_PARSED_SUFFIXES)
        ]
        self.errors = [d for tree in trees for d in tree.diagnostics if d.isError()]
        options = ast.CompilationOptions()
        options.topModules = {ctx.top}
        self.compilation = ast.Compilation(pyslang.Bag([options]))
        for tree in trees:
            self.compilation.addSyntaxTree(tree)
        self.top = next(
            (i for i in self.compilation.getRoot().topInstances if i.name == ctx.top), None
        )

    def where(self, loc: pyslang.SourceLocation) -> tuple[str, int]:
        return self.sm.getFileName(loc), self.sm.getLineNumber(loc)

    def syntax_feedback(self, diag: pyslang.Diagnostic, what: str, feedback: Any) -> Feedback:
        message = pyslang.DiagnosticEngine(self.sm).formatMessage(diag)
        return feedback("syntax", f"cannot parse {what}: {message}", self.where(diag.location))


def _width(port: Any) -> int | None:
    """The elaborated bit width, or None when it is not a constant integral width."""
    port_type = getattr(port, "type", None)
    if port_type is None or port_type.isError or not port_type.isIntegral:
        return None
    return int(port_type.bitWidth)


def _within(loc: pyslang.SourceLocation, span: pyslang.SourceRange) -> bool:
    return loc.buffer == span.start.buffer and span.start.offset <= loc.offset <= span.end.offset


def _describe(port: Port) -> str:
    return f"{port.direction} [{port.width - 1}:0]" if port.width > 1 else port.direction


def _signature(ports: tuple[Port, ...]) -> str:
    return "(" + ", ".join(f"{_describe(p)} {p.name}" for p in ports) + ")"


@hookimpl
def register_validators(register: Any) -> None:
    register(PortCheck)
