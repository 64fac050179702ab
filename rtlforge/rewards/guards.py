"""Cheap-pass detection: designs and testbenches that let a reward be earned without doing work.

Measured on RTLLM: several testbenches accept a module whose outputs are all constant 0, and a
policy collapsing onto one circuit keeps re-earning the same reward. Everything here only
*detects*; the reward's policy options decide whether a finding zeroes the reward or is a flag.

- :func:`code_hash`: source identity modulo comments and whitespace (duplicate detection).
- :func:`probe_candidate`: a module with the task's exact interface whose outputs are constant 0;
  if it passes the testbench, the task's testbench is weak.
- :func:`constant_outputs`: a conservative static check that every output of a candidate is
  driven only by constants (or not at all).
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass

from rtlforge.core.models import Candidate, Port, Task

_LINE_COMMENT = re.compile(r"//[^\n]*")
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_SPACE = re.compile(r"\s+")
_SPACE_AROUND_PUNCT = re.compile(r" ?([^\w$` ]) ?")

#: Flags a reward attaches to a :class:`~rtlforge.rewards.base.RewardDetail`.
WEAK_TESTBENCH = "weak_testbench"
DUPLICATE_HISTORY = "duplicate_history"
DUPLICATE_IN_GROUP = "duplicate_in_group"
CONSTANT_OUTPUT = "constant_output"


def normalise_source(source: str) -> str:
    """Source with comments removed and whitespace reduced to what separates tokens."""
    text = _BLOCK_COMMENT.sub(" ", source)
    text = _LINE_COMMENT.sub(" ", text)
    text = _SPACE.sub(" ", text).strip()
    return _SPACE_AROUND_PUNCT.sub(r"\1", text)


def code_hash(source: str | Candidate) -> str:
    """Hash of the normalised source: two candidates differing only in layout collide."""
    if isinstance(source, Candidate):
        source = "\n".join(f.content for f in source.files)
    return hashlib.sha256(normalise_source(source).encode()).hexdigest()


# --------------------------------------------------------------------------------------------
# Interface of a task's top module
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Interface:
    """What a drop-in replacement of the top module must declare."""

    top: str
    ports: tuple[Port, ...]
    parameters: tuple[tuple[str, str], ...] = ()  # (name, default value as Verilog text)


def _compile(sources: tuple[str, ...]):  # -> pyslang ast.Compilation | None
    from pyslang import ast, syntax  # local: only the guards parse

    compilation = ast.Compilation()
    for i, text in enumerate(sources):
        compilation.addSyntaxTree(syntax.SyntaxTree.fromText(text, f"src{i}.v"))
    return compilation


def _instance_body(compilation, top: str):  # -> pyslang InstanceBodySymbol | None
    for inst in compilation.getRoot().topInstances:
        if inst.name == top:
            return inst.body
    return None


@functools.lru_cache(maxsize=512)
def golden_interface(sources: tuple[str, ...], top: str) -> Interface | None:
    """Ports and overridable parameters of ``top`` as elaborated by pyslang, or None.

    Widths are those under default parameters; a testbench overriding a parameter then sees a
    width mismatch (a warning in every simulator) rather than a missing port.
    """
    from pyslang import ast

    try:
        body = _instance_body(_compile(sources), top)
    except Exception:  # noqa: BLE001 - interface discovery is best effort
        return None
    if body is None:
        return None
    directions = {ast.ArgumentDirection.In: "input", ast.ArgumentDirection.Out: "output",
                  ast.ArgumentDirection.InOut: "inout"}
    ports = []
    for port in body.portList:
        direction = directions.get(getattr(port, "direction", None))
        port_type = getattr(port, "type", None)
        if direction is None or port_type is None or not port_type.isIntegral:
            return None  # interface ports, unpacked arrays, ...: no faithful probe
        ports.append(Port(name=port.name, direction=direction, width=port_type.bitWidth,
                          signed=port_type.isSigned))
    params = tuple(
        (p.name, str(p.value)) for p in body.parameters
        if not p.isLocalParam and p.value is not None
    )
    return Interface(top=top, ports=tuple(ports), parameters=params)


def task_interface(task: Task) -> Interface | None:
    """The golden's elaborated header when there is one, else the task's declared ports."""
    if task.golden:
        found = golden_interface(tuple(f.content for f in task.golden), task.top)
        if found is not None:
            return found
    if task.ports:
        return Interface(top=task.top, ports=task.ports)
    return None


def constant_module(interface: Interface) -> str:
    """Verilog of a module with ``interface`` whose outputs are tied to 0 (inouts left open)."""
    decls = []
    for port in interface.ports:
        signed = " signed" if port.signed else ""
        width = f" [{port.width - 1}:0]" if port.width > 1 else ""
        decls.append(f"    {port.direction} wire{signed}{width} {port.name}")
    params = ""
    if interface.parameters:
        params = " #(\n" + ",\n".join(
            f"    parameter {name} = {value}" for name, value in interface.parameters
        ) + "\n)"
    ties = "".join(f"    assign {p.name} = 0;\n" for p in interface.ports
                   if p.direction == "output")
    return f"module {interface.top}{params} (\n" + ",\n".join(decls) + f"\n);\n{ties}endmodule\n"


def probe_candidate(task: Task) -> Candidate | None:
    """The all-zero drop-in for ``task``'s top module, or None when its interface is unknown."""
    interface = task_interface(task)
    if interface is None or not any(p.direction == "output" for p in interface.ports):
        return None
    return Candidate.from_source(constant_module(interface), name="probe_zero.v",
                                 task_id=task.id)


# --------------------------------------------------------------------------------------------
# Constant-output candidates
# --------------------------------------------------------------------------------------------


def constant_outputs(candidate: Candidate, top: str) -> bool:
    """True when every output of ``top`` only ever receives one constant value (or none).

    Conservative: anything it cannot see through answers False: parse errors, an output
    connected to a submodule's output, a part-select or concatenation on the left, a
    non-constant right-hand side, or two different constants (``rise <= 1`` under one condition
    and ``rise <= 0`` under another is control-dependent logic, not a constant).
    """
    return _constant_outputs(tuple(f.content for f in candidate.files), top)


@functools.lru_cache(maxsize=4096)
def _constant_outputs(sources: tuple[str, ...], top: str) -> bool:
    from pyslang import ast

    try:
        compilation = _compile(sources)
        body = _instance_body(compilation, top)
        if body is None or any(d.isError for d in compilation.getAllDiagnostics()):
            return False
        outputs = {p.internalSymbol for p in body.portList
                   if getattr(p, "direction", None) == ast.ArgumentDirection.Out}
        outputs.discard(None)
        if not outputs:
            return False
        values: dict[object, set[str]] = {sym: set() for sym in outputs}
        verdict = {"constant": True}

        def driven(expr) -> set:
            hit: set = set()

            def collect(node) -> bool:
                if isinstance(node, ast.Expression) and node.kind == ast.ExpressionKind.NamedValue:
                    hit.add(node.symbol)
                return True

            expr.visit(collect)
            return hit & outputs

        def visit(node) -> bool:
            if not verdict["constant"]:
                return False
            if isinstance(node, ast.Expression) and node.kind == ast.ExpressionKind.Assignment:
                targets = driven(node.left)
                if not targets:
                    return True
                whole = node.left.kind == ast.ExpressionKind.NamedValue
                if not whole or node.right.constant is None:
                    verdict["constant"] = False
                else:
                    values[node.left.symbol].add(str(node.right.constant))
            elif isinstance(node, ast.Symbol) and node.kind == ast.SymbolKind.Instance:
                for conn in node.portConnections:
                    port_dir = getattr(conn.port, "direction", None)
                    expr = conn.expression
                    if port_dir != ast.ArgumentDirection.In and expr is not None \
                            and driven(expr):
                        verdict["constant"] = False
            return True

        body.visit(visit)
        for symbol in outputs:
            init = getattr(symbol, "initializer", None)
            if init is not None:
                if init.constant is None:
                    return False
                values[symbol].add(str(init.constant))
        return verdict["constant"] and all(len(v) <= 1 for v in values.values())
    except Exception:  # noqa: BLE001 - a heuristic must never fail a reward
        return False
