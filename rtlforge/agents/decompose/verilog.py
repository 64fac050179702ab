"""What decomposition needs to know about generated Verilog: modules, headers, instantiations.

All of it reads untrusted model output in the host process, so it is a bounded, linear token
scan (no parser, no macro expansion, nothing opened), built on the module scanner of
:mod:`rtlforge.eda.modules` and the port scanner of the knowledge indexer:

- :func:`split_modules` cuts a text into its modules (a module keeps the directives and
  comments written above it), so duplicates can be dropped one module at a time;
- :func:`module_ports` / :func:`render_header` read a generated module's real interface and
  write it as the header that later prompts see;
- :func:`instances` finds the instantiations of known modules with their port connections, and
  :func:`check_instances` compares them with the instantiated modules' real ports;
- :func:`rename_connections` applies the simple, deterministic fixes (see the decomposer).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from rtlforge.agents.knowledge.indexer import RefPort, scan_ports
from rtlforge.eda.modules import VERILOG_KEYWORDS, instantiated_modules, scan_modules

__all__ = [
    "Connection",
    "Instance",
    "PortIssue",
    "check_instances",
    "instances",
    "module_ports",
    "port_width",
    "rename_connections",
    "render_header",
    "signal_widths",
    "split_modules",
]

_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:\\.|[^"\\\n])*"', re.S)
_HEADER = re.compile(r"^[ \t]*(?:\(\*[^\n]*?\*\)[ \t]*)?(?:module|macromodule)[ \t\r\n]+"
                     r"(?:(?:automatic|static)[ \t\r\n]+)?([A-Za-z_][\w$]*)", re.M)
_END = re.compile(r"\bendmodule\b")
_TOKEN = re.compile(
    r"(?P<skip>\s+|//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*\"|\(\*.*?\*\))"
    r"|(?P<num>\d*\s*'[sS]?[bBoOdDhH]\s*[0-9a-fA-FxXzZ_?]+|\d[\d_]*)"
    r"|(?P<id>[A-Za-z_][A-Za-z0-9_$]*|\\\S+)|(?P<op>\S)", re.S)
_RANGE = re.compile(r"^\[\s*(\d+)\s*:\s*(\d+)\s*\]$")
_SIZED = re.compile(r"^(\d+)\s*'")
_DECLARING = frozenset({"wire", "reg", "logic", "input", "output", "inout", "tri", "bit"})
_TYPE_WORDS = frozenset({"wire", "reg", "logic", "input", "output", "inout", "tri", "bit",
                         "signed", "unsigned", "var"})


def _blank(text: str) -> str:
    return _COMMENT_OR_STRING.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def split_modules(text: str) -> list[tuple[str, str]]:
    """``(name, text)`` of each complete module, in order; text between modules goes with the
    module below it (its directives and comments), text after the last one is dropped."""
    blanked = _blank(text)
    found: list[tuple[str, str]] = []
    floor = pos = 0
    while (header := _HEADER.search(blanked, pos)) is not None:
        end = _END.search(blanked, header.end())
        if end is None:
            break
        found.append((header.group(1), text[floor:end.end()].strip("\n") + "\n"))
        floor = pos = end.end()
    return found


def module_ports(text: str, module: str) -> tuple[RefPort, ...] | None:
    """The ports of ``module`` as declared in ``text``; None when ``text`` does not declare it."""
    for decl in scan_modules(text).modules:
        if decl.name == module and decl.end is not None:
            return scan_ports(text, decl.end)
    return None


def port_width(port: RefPort) -> int | None:
    """Bits of a port with a numeric range (``[7:0]`` -> 8, none -> 1); None when symbolic."""
    if not port.range:
        return 1
    found = _RANGE.match(port.range)
    return abs(int(found[1]) - int(found[2])) + 1 if found else None


def render_header(module: str, ports: Sequence[RefPort]) -> str:
    """The header later prompts are shown: ``module m (input [7:0] a, output y);``."""
    items = ",\n    ".join(
        f"{p.direction if p.direction != 'unknown' else 'input'} "
        f"{p.range + ' ' if p.range else ''}{p.name}" for p in ports)
    return f"module {module} (\n    {items}\n);" if ports else f"module {module};"


# ------------------------------------------------------------------------------ tokens


@dataclass(frozen=True)
class _Tok:
    kind: str  # "id", "num" or "op"
    text: str
    start: int
    end: int


def _tokens(text: str, start: int = 0, end: int | None = None) -> list[_Tok]:
    out = []
    for m in _TOKEN.finditer(text, start, len(text) if end is None else end):
        kind = m.lastgroup or "op"
        if kind != "skip":
            out.append(_Tok(kind, m.group(), m.start(), m.end()))
    return out


def _close(tokens: Sequence[_Tok], i: int, open_: str = "(", close: str = ")") -> int:
    """Index of the token closing the bracket opened at ``i`` (len(tokens) when unclosed)."""
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j].text == open_:
            depth += 1
        elif tokens[j].text == close:
            depth -= 1
            if depth == 0:
                return j
    return len(tokens)


def _split(tokens: Sequence[_Tok]) -> list[list[_Tok]]:
    """Comma-separated items at bracket depth 0."""
    items: list[list[_Tok]] = [[]]
    depth = 0
    for tok in tokens:
        if tok.text in "([{":
            depth += 1
        elif tok.text in ")]}":
            depth -= 1
        if tok.text == "," and depth == 0:
            items.append([])
        else:
            items[-1].append(tok)
    return [item for item in items if item]


def _module_spans(text: str) -> Iterator[tuple[str, int, int]]:
    """``(name, body start, body end)`` of each module: from its name to its ``endmodule``."""
    blanked = _blank(text)
    pos = 0
    while (header := _HEADER.search(blanked, pos)) is not None:
        end = _END.search(blanked, header.end())
        stop = end.start() if end is not None else len(text)
        yield header.group(1), header.end(1), stop
        pos = end.end() if end is not None else len(text)


# ------------------------------------------------------------------------------ instances


@dataclass(frozen=True)
class Connection:
    """One port connection; ``port`` is None for a positional one, ``"*"`` for ``.*``."""

    port: str | None
    expr: str
    port_start: int | None = None  # offsets of the port name in the file's text (for renames)
    port_end: int | None = None
    width: int | None = None  # bits of ``expr`` when it is plain enough to tell


@dataclass(frozen=True)
class Instance:
    parent: str  # the module the instantiation sits in
    module: str  # the instantiated module
    name: str  # the instance name
    connections: tuple[Connection, ...]

    @property
    def named(self) -> bool:
        return any(c.port is not None for c in self.connections)


def signal_widths(tokens: Sequence[_Tok], ansi: Sequence[RefPort] = ()) -> dict[str, int]:
    """Widths of the signals a module body declares with numeric ranges (and its ANSI ports)."""
    widths = {p.name: w for p in ansi if (w := port_width(p)) is not None}
    statement: list[_Tok] = []
    for tok in tokens:
        if tok.text != ";":
            statement.append(tok)
            continue
        if statement and statement[0].text in _DECLARING:
            _declare(statement, widths)
        statement = []
    return widths


def _declare(statement: Sequence[_Tok], widths: dict[str, int]) -> None:
    width: int | None = 1
    i = 0
    while i < len(statement) and (statement[i].text in _TYPE_WORDS or statement[i].text == "["):
        if statement[i].text == "[":
            j = _close(statement, i, "[", "]")
            found = _RANGE.match("".join(t.text for t in statement[i:j + 1]))
            width = abs(int(found[1]) - int(found[2])) + 1 if found else None
            i = j + 1
        else:
            i += 1
    for item in _split(statement[i:]):
        name = item[0]
        if name.kind == "id" and name.text not in VERILOG_KEYWORDS and width is not None:
            widths.setdefault(name.text, width)


def _expr_width(expr: Sequence[_Tok], widths: Mapping[str, int]) -> int | None:
    texts = [t.text for t in expr]
    if len(expr) == 1 and expr[0].kind == "id":
        return widths.get(texts[0])
    if len(expr) == 1 and expr[0].kind == "num":
        sized = _SIZED.match(texts[0])
        return int(sized[1]) if sized else None
    if len(expr) >= 4 and expr[0].kind == "id" and texts[1] == "[" and texts[-1] == "]":
        inner = texts[2:-1]
        if len(inner) == 1 and inner[0].isdigit():
            return 1
        if len(inner) == 3 and inner[1] == ":" and inner[0].isdigit() and inner[2].isdigit():
            return abs(int(inner[0]) - int(inner[2])) + 1
    return None


def instances(text: str, known: frozenset[str] | set[str]) -> list[Instance]:
    """Instantiations of the ``known`` modules in ``text``, with their connections."""
    found: list[Instance] = []
    for parent, start, stop in _module_spans(text):
        tokens = _tokens(text, start, stop)
        ansi = module_ports(text, parent) or ()
        widths: dict[str, int] | None = None
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if (tok.kind != "id" or tok.text not in known or i + 1 >= len(tokens)
                    or (i > 0 and tokens[i - 1].text in (".", "module"))):
                i += 1
                continue
            j = i + 1
            if tokens[j].text == "#":
                if j + 1 >= len(tokens) or tokens[j + 1].text != "(":
                    i += 1
                    continue
                j = _close(tokens, j + 1) + 1
                if j > len(tokens):  # unclosed: nothing after it can be an instance
                    break
            if j >= len(tokens) or tokens[j].kind != "id" or tokens[j].text in VERILOG_KEYWORDS:
                i += 1
                continue
            name, j = tokens[j].text, j + 1
            while j < len(tokens) and tokens[j].text == "[":
                j = _close(tokens, j, "[", "]") + 1
            if j >= len(tokens) or tokens[j].text != "(":
                i += 1
                continue
            close = _close(tokens, j)
            if close == len(tokens):
                break
            if widths is None:
                widths = signal_widths(tokens, ansi)
            found.append(Instance(parent, tok.text, name,
                                  tuple(_connections(text, tokens[j + 1:close], widths))))
            i = close + 1
    return found


def _connections(text: str, tokens: Sequence[_Tok], widths: Mapping[str, int]
                 ) -> Iterator[Connection]:
    for item in _split(tokens):
        if item[0].text == "." and len(item) >= 2:
            port = item[1]
            if port.text == "*":
                yield Connection("*", "")
                continue
            expr = item[3:-1] if len(item) >= 4 and item[2].text == "(" else [port]
            yield Connection(port.text, text[expr[0].start:expr[-1].end] if expr else "",
                             port.start, port.end, _expr_width(expr, widths) if expr else None)
        else:
            yield Connection(None, text[item[0].start:item[-1].end], None, None,
                             _expr_width(item, widths))


# ------------------------------------------------------------------------------ checks


@dataclass(frozen=True)
class PortIssue:
    """One way an instantiation disagrees with the module it instantiates."""

    kind: str  # unknown_module, unknown_port, missing_port, width, count
    file: str
    parent: str
    module: str
    instance: str
    message: str
    port: str | None = None
    rename_to: str | None = None  # the deterministic fix, when there is one


def check_instances(
    files: Mapping[str, str], ports: Mapping[str, Sequence[RefPort]], *,
    planned: Mapping[str, Sequence[str]] | None = None, provided: frozenset[str] = frozenset(),
) -> list[PortIssue]:
    """Every disagreement between the instantiations in ``files`` and the ``ports`` of the
    modules they instantiate; ``planned`` (module -> the plan's port names) lets an issue
    carry a rename when the generated module renamed a planned port. ``provided`` names
    modules defined elsewhere (the task's support files): never unknown."""
    issues: list[PortIssue] = []
    declared = {name for text in files.values() for name in scan_modules(text).declared}
    declared |= provided
    for file, text in files.items():
        for missing in sorted(instantiated_modules(text) - declared):
            issues.append(PortIssue("unknown_module", file, "", missing, "",
                                    f"{file}: instantiates module {missing!r}, which no file "
                                    f"defines; defined: {sorted(declared)}"))
        for inst in instances(text, frozenset(ports)):
            issues.extend(_check_one(file, inst, ports[inst.module],
                                     (planned or {}).get(inst.module, ())))
    return issues


def _check_one(file: str, inst: Instance, ports: Sequence[RefPort],
               planned: Sequence[str]) -> Iterator[PortIssue]:
    where = f"{file}: {inst.parent}.{inst.name} ({inst.module})"
    by_name = {p.name: p for p in ports}
    if not inst.named:
        if len(inst.connections) != len(ports):
            yield PortIssue("count", file, inst.parent, inst.module, inst.name,
                            f"{where}: {len(inst.connections)} positional connections, but "
                            f"{inst.module} has {len(ports)} ports "
                            f"({', '.join(by_name)}); connect by name")
        return
    connected = {c.port for c in inst.connections}
    renames = _plan_renames(planned, ports)
    for conn in inst.connections:
        if conn.port in (None, "*"):
            continue
        port = by_name.get(conn.port)
        if port is None:
            target = _rename_target(conn.port, by_name, renames, connected)
            yield PortIssue("unknown_port", file, inst.parent, inst.module, inst.name,
                            f"{where}: {inst.module} has no port {conn.port!r}; its ports: "
                            f"{', '.join(by_name)}", port=conn.port, rename_to=target)
            continue
        width = port_width(port)
        if conn.width is not None and width is not None and conn.width != width:
            yield PortIssue("width", file, inst.parent, inst.module, inst.name,
                            f"{where}: port {conn.port!r} is {width} bit(s) wide but "
                            f"{conn.expr!r} is {conn.width}", port=conn.port)
    if "*" in connected:
        return
    fixed = {_rename_target(c.port, by_name, renames, connected) for c in inst.connections
             if c.port is not None}
    for port in ports:
        if port.direction in ("input", "inout", "unknown") and port.name not in connected \
                and port.name not in fixed:
            yield PortIssue("missing_port", file, inst.parent, inst.module, inst.name,
                            f"{where}: input {port.name!r} of {inst.module} is not connected",
                            port=port.name)


def _plan_renames(planned: Sequence[str], ports: Sequence[RefPort]) -> dict[str, str]:
    """Planned name -> generated name, when the module kept the plan's shape but renamed ports
    (same count; only positions whose names differ)."""
    if len(planned) != len(ports):
        return {}
    return {old: p.name for old, p in zip(planned, ports, strict=True) if old != p.name}


def _rename_target(name: str, by_name: Mapping[str, RefPort], renames: Mapping[str, str],
                   connected: set[str | None]) -> str | None:
    """The real port an unknown connection meant: the plan's rename, else the one port whose
    name differs only in case; never a port that is connected already."""
    if name in by_name:
        return name
    target = renames.get(name)
    if target is None:
        folded = [p for p in by_name if p.lower() == name.lower()]
        target = folded[0] if len(folded) == 1 else None
    return target if target is not None and target not in connected else None


def rename_connections(text: str, renames: Mapping[tuple[str, str, str], str]) -> str:
    """``text`` with the named connections ``(parent, instance, port) -> new port`` renamed."""
    if not renames:
        return text
    edits: list[tuple[int, int, str]] = []
    for inst in instances(text, instantiated_modules(text)):
        for conn in inst.connections:
            new = renames.get((inst.parent, inst.name, conn.port or ""))
            if new is not None and conn.port_start is not None and conn.port_end is not None:
                edits.append((conn.port_start, conn.port_end, new))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text

