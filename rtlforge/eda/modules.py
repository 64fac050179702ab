"""Module names in Verilog text, read by pyslang's parser instead of by regexes.

A regex sees ``module x`` inside comments, strings and disabled ``ifdef`` branches and misses
``macromodule``, escaped names and declarations built by macros; the parser does not. Callers
run this per candidate in RL loops, so a parse is cached per text (keyed by its digest), and
the text is untrusted: it is parsed from memory only (no file is ever opened for an
```include``), bounded in size, and any parser failure yields an empty, ``ok=False`` scan,
which callers treat as "no module found", the same as text a regex found nothing in.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "MAX_SOURCE_CHARS",
    "ModuleDecl",
    "ModuleScan",
    "declared_modules",
    "instantiated_modules",
    "rename_module",
    "scan_modules",
    "top_modules",
]

#: Texts longer than this are not parsed (a design this large is not a candidate).
MAX_SOURCE_CHARS = 4_000_000
_VIRTUAL_NAME = "/nonexistent/rtlforge-modules/source.v"


@dataclass(frozen=True)
class ModuleDecl:
    """One module declaration; ``start``/``end`` delimit its name in the text, or are None
    when the name came from a macro expansion (it has no place in the text to rename)."""

    name: str
    start: int | None
    end: int | None
    instantiates: frozenset[str]


@dataclass(frozen=True)
class ModuleScan:
    """The module declarations of one text, in order; ``ok`` is False when it was not parsed."""

    modules: tuple[ModuleDecl, ...] = ()
    ok: bool = True

    @property
    def declared(self) -> list[str]:
        return [m.name for m in self.modules]

    @property
    def instantiated(self) -> frozenset[str]:
        return frozenset(n for m in self.modules for n in m.instantiates)


def scan_modules(text: str) -> ModuleScan:
    """Declarations (nested ones included) and what each instantiates; cached per text."""
    if len(text) > MAX_SOURCE_CHARS:
        return ModuleScan(ok=False)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return _scan(digest, text)


@functools.lru_cache(maxsize=2048)
def _scan(digest: str, text: str) -> ModuleScan:
    del digest  # the cache key; text rides along so a hit never re-hashes a long string twice
    try:
        return _parse(text)
    except Exception:  # noqa: BLE001 - untrusted text: any parser failure is "nothing found"
        return ModuleScan(ok=False)


def _parse(text: str) -> ModuleScan:
    import pyslang  # local: parsing is only needed when a module name is
    from pyslang import parsing, syntax

    sm = pyslang.SourceManager()
    buffer = sm.assignText(_VIRTUAL_NAME, text)
    options = parsing.PreprocessorOptions()
    options.maxIncludeDepth = 0  # never open a file an `include names
    bag = pyslang.Bag()
    bag.preprocessorOptions = options
    tree = syntax.SyntaxTree.fromBuffer(buffer, sm, bag)
    main = buffer.id.id
    modules: list[ModuleDecl] = []

    def instances(node: object) -> frozenset[str]:
        found: set[str] = set()

        def visit(child: object) -> None:
            if getattr(child, "kind", None) == syntax.SyntaxKind.HierarchyInstantiation:
                found.add(child.type.valueText)  # type: ignore[attr-defined]

        node.visit(visit)  # type: ignore[attr-defined]
        return frozenset(n for n in found if n)

    def walk(members: Iterable[object]) -> None:
        for member in members:
            kind = getattr(member, "kind", None)
            if kind != syntax.SyntaxKind.ModuleDeclaration:
                continue
            token = member.header.name  # type: ignore[attr-defined]
            name = token.valueText
            if not name:
                continue  # a header the parser could not name (a syntax error)
            loc = token.location
            start = end = None
            if loc.buffer.id == main and text[loc.offset:loc.offset + len(token.rawText)] \
                    == token.rawText:
                start, end = loc.offset, loc.offset + len(token.rawText)
            modules.append(ModuleDecl(name, start, end, instances(member)))
            walk(member.members)  # type: ignore[attr-defined]

    walk(tree.root.members)
    return ModuleScan(tuple(modules))


def declared_modules(text: str) -> list[str]:
    """Names of the modules ``text`` declares, in order ([] when it cannot be parsed)."""
    return scan_modules(text).declared


def instantiated_modules(text: str) -> frozenset[str]:
    """Names of the modules instantiated inside the declarations of ``text``."""
    return scan_modules(text).instantiated


def top_modules(texts: Sequence[str]) -> list[str]:
    """Declared modules no declaration of ``texts`` instantiates, in declaration order."""
    scans = [scan_modules(t) for t in texts]
    used = frozenset().union(*(s.instantiated for s in scans))
    return [name for s in scans for name in s.declared if name not in used]


def rename_module(text: str, old: str, new: str) -> str | None:
    """``text`` with the declaration of ``old`` renamed to ``new`` (nothing else touched).

    None when ``old`` is not declared in the text itself (absent, or named by a macro).
    """
    for decl in scan_modules(text).modules:
        if decl.name == old and decl.start is not None and decl.end is not None:
            return text[:decl.start] + new + text[decl.end:]
    return None
