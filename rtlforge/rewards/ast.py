"""Code-structure reward after VeriSeek: similarity of cleaned syntax trees.

A completion is compared with a reference design on the *shape* of its syntax tree: node types,
operators and nesting are kept, identifiers and constant values are dropped, so renaming signals
or changing widths does not move the score while a different operator or a missing statement
does. The similarity is the paper's Algorithm 1 (greedy one-to-one child matching); the reward
is ``10 * sim`` for code that parses, ``-5`` for code that does not, ``-10`` for no code at all.

Two parsers build the trees. The default, ``pyverilog``, is the paper's: code it cannot parse
earns ``-5``, which is the syntax pressure the reward is meant to apply (it rejects common
SystemVerilog: ``'0``, ``for (int i ...)``, ``typedef enum``). ``pyslang`` parses all of it and
must be chosen explicitly, as must ``auto`` (pyverilog, falling back to pyslang when either side
does not parse). Their node-type vocabularies differ, so a candidate is always compared with a
reference tree from the *same* backend, and every :class:`ASTScore` says which one scored.

Everything here treats completions as hostile: input sizes and tree sizes are capped, every
traversal is iterative (a 20 000-deep expression cannot overflow the Python stack), the
similarity has a step and time budget, and no file is written into the working directory.
"""

from __future__ import annotations

import os
import re
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import pyslang
from pyslang import parsing, syntax

from rtlforge.core.errors import (
    DesignError,
    ExtractionError,
    InfraError,
    RtlforgeError,
    is_infra,
)
from rtlforge.core.extract import extract_verilog
from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.interfaces import Reward
from rtlforge.core.models import SourceFile
from rtlforge.sandbox import runfiles
from rtlforge.sandbox.runner import SandboxRunner

BackendName = Literal["pyverilog", "pyslang"]
Status = Literal["parsed", "unparsable", "no_code", "too_large", "over_budget", "reference_error",
                 "infra_error"]

INSTALL_HINT = "install the optional extra: pip install 'rtlforge[ast]'"


class ASTBackendUnavailable(InfraError):
    """The requested parser backend is not installed (the message says how to install it)."""


class SimilarityBudgetExceeded(InfraError):
    """Algorithm 1 needed more steps or time than allowed (pathological, huge trees).

    The harness's own budget, which also depends on the machine's speed: the score abstains.
    """


# --------------------------------------------------------------------------------------------
# Cleaned trees
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ASTNode:
    """A hand-built cleaned node (type label + children), for tests and custom front ends."""

    label: str
    children: tuple[ASTNode, ...] = ()

    def __init__(self, label: str, children: Iterable[ASTNode] = ()) -> None:
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "children", tuple(children))


@dataclass(frozen=True)
class CleanTree:
    """A cleaned tree in post-order: ``kids[i]`` index earlier nodes; the root is the last.

    Flat arrays rather than linked nodes so that building, hashing and comparing never recurse.
    """

    labels: tuple[str, ...]
    kids: tuple[tuple[int, ...], ...]

    def __len__(self) -> int:
        return len(self.labels)


class TreeTooLarge(DesignError):
    """A tree exceeded the node cap while being built (scored as an unparsable design)."""


def _flatten(root: Any, label_of: Callable[[Any], str],
             children_of: Callable[[Any], Sequence[Any]], max_nodes: int) -> CleanTree:
    """Post-order flattening with an explicit stack (depth is unbounded in hostile input)."""
    labels: list[str] = []
    kids: list[tuple[int, ...]] = []
    frames: list[tuple[Any, Sequence[Any], list[int]]] = [(root, children_of(root), [])]
    while frames:
        node, pending, done = frames[-1]
        if len(done) < len(pending):
            child = pending[len(done)]
            frames.append((child, children_of(child), []))
            if len(frames) + len(labels) > max_nodes:
                raise TreeTooLarge(f"syntax tree has more than {max_nodes} nodes")
            continue
        frames.pop()
        labels.append(label_of(node))
        kids.append(tuple(done))
        if frames:
            frames[-1][2].append(len(labels) - 1)
    return CleanTree(tuple(labels), tuple(kids))


def clean_tree(node: ASTNode, *, max_nodes: int = 1_000_000) -> CleanTree:
    """Flatten a hand-built :class:`ASTNode` tree."""
    return _flatten(node, lambda n: n.label, lambda n: n.children, max_nodes)


class _Shapes:
    """Hash-consed subtrees: equal ids mean structurally identical subtrees.

    A reference's table is built once and cached; each candidate is interned into a private
    overlay on top of it, so the cached table is never mutated (thread-safe) and never grows.
    """

    __slots__ = ("base", "index", "kids", "labels", "root")

    def __init__(self, base: _Shapes | None = None) -> None:
        self.base = base
        self.index: dict[tuple[str, tuple[int, ...]], int] = {}
        self.labels: list[str] = []
        self.kids: list[tuple[int, ...]] = []
        self.root = -1

    def _offset(self) -> int:
        return len(self.base.labels) if self.base is not None else 0

    def add(self, tree: CleanTree) -> int:
        ids: list[int] = []
        base_index = self.base.index if self.base is not None else {}
        offset = self._offset()
        for label, kids in zip(tree.labels, tree.kids, strict=True):
            key = (label, tuple(ids[k] for k in kids))
            sid = base_index.get(key)
            if sid is None:
                sid = self.index.get(key)
            if sid is None:
                sid = offset + len(self.labels)
                self.index[key] = sid
                self.labels.append(label)
                self.kids.append(key[1])
            ids.append(sid)
        self.root = ids[-1]
        return self.root


def _distinct(items: Iterable[int]) -> list[int]:
    return list(dict.fromkeys(items))


def _shape_similarity(shapes: _Shapes, a: int, b: int, *, max_steps: int,
                      deadline: float | None) -> float:
    """Algorithm 1 on interned ids, iteratively and memoised per shape pair.

    Greedy matching: each child of ``a``, in order, takes the unseen child of ``b`` of its type
    with the highest similarity, if that is above 0 (ties: the earliest); otherwise it stays
    unmatched. Children of ``b`` are grouped by type and shape, which gives exactly the choice
    of a one-by-one scan but costs |C_a| x distinct same-type shapes of C_b.
    """
    base = shapes.base
    labels = [*base.labels, *shapes.labels] if base is not None else shapes.labels
    kids = [*base.kids, *shapes.kids] if base is not None else shapes.kids
    memo: dict[tuple[int, int], float] = {}
    stack = [(a, b)]
    steps = 0

    def charge(n: int) -> None:
        nonlocal steps
        before = steps
        steps += n
        if steps > max_steps:
            raise SimilarityBudgetExceeded(f"similarity needed more than {max_steps} steps")
        if deadline is not None and steps >> 12 != before >> 12 and time.monotonic() > deadline:
            raise SimilarityBudgetExceeded("similarity ran past its time budget")

    while stack:
        x, y = stack[-1]
        if (x, y) in memo:
            stack.pop()
            continue
        charge(1)
        if x == y:
            memo[x, y] = 1.0
            stack.pop()
            continue
        if labels[x] != labels[y]:
            memo[x, y] = 0.0
            stack.pop()
            continue
        kx, ky = kids[x], kids[y]
        if not kx or not ky:
            memo[x, y] = 1.0 if not kx and not ky else 0.0
            stack.pop()
            continue
        uy = _distinct(ky)
        by_label: dict[str, list[int]] = {}
        for cy in uy:
            by_label.setdefault(labels[cy], []).append(cy)
        missing = [(cx, cy) for cx in _distinct(kx) for cy in by_label.get(labels[cx], ())
                   if (cx, cy) not in memo]
        if missing:
            charge(len(missing))
            stack.extend(missing)
            continue
        stack.pop()
        groups = [by_label.get(labels[cx], ()) for cx in kx]
        charge(len(ky) + sum(len(g) + 1 for g in groups))
        queues: dict[int, deque[int]] = {s: deque() for s in uy}  # unseen positions per shape
        for pos, cy in enumerate(ky):
            queues[cy].append(pos)
        total = 0.0
        for cx, group in zip(kx, groups, strict=True):
            # Paper's best_s starts at 0 and only a strictly higher s replaces it, so a child
            # whose best score is 0 stays unmatched and leaves its partners free for later ones.
            best_id, best_pos, best_v = -1, len(ky), 0.0
            for cy in group:
                queue = queues[cy]
                if queue:
                    v = memo[cx, cy]
                    if v > best_v or (v == best_v and best_id >= 0 and queue[0] < best_pos):
                        best_id, best_pos, best_v = cy, queue[0], v
            if best_id >= 0:
                queues[best_id].popleft()
                total += best_v
        memo[x, y] = total / max(len(kx), len(ky))
    return memo[a, b]


def tree_similarity(n1: ASTNode | CleanTree, n2: ASTNode | CleanTree, *,
                    max_steps: int = 5_000_000, time_budget_s: float | None = None) -> float:
    """Algorithm 1 similarity ``sim(n1, n2)`` in [0, 1]; the reward passes (candidate, reference).

    Greedy matching makes it order-sensitive: children of ``n1`` choose among those of ``n2``.
    Raises :class:`SimilarityBudgetExceeded` when the step or time budget runs out.
    """
    cand = n1 if isinstance(n1, CleanTree) else clean_tree(n1)
    ref = n2 if isinstance(n2, CleanTree) else clean_tree(n2)
    base = _Shapes()
    base.add(ref)
    overlay = _Shapes(base)
    overlay.add(cand)
    deadline = None if time_budget_s is None else time.monotonic() + time_budget_s
    return _shape_similarity(overlay, overlay.root, base.root, max_steps=max_steps,
                             deadline=deadline)


# --------------------------------------------------------------------------------------------
# Backends
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParseFailure:
    """Why a backend produced no tree (a verdict about the source, or a declined input)."""

    reason: str
    too_large: bool = False
    infra: bool = False  # the tool or sandbox failed: no verdict on the source


class _Backend(ABC):
    name: ClassVar[BackendName]

    @abstractmethod
    def parse(self, source: str, max_nodes: int) -> CleanTree | ParseFailure:
        """A cleaned tree of ``source``, or why there is none."""


class PyslangBackend(_Backend):
    """slang's parser: full SystemVerilog, C++ speed, never opens a file (includes disabled)."""

    name: ClassVar[BackendName] = "pyslang"

    def parse(self, source: str, max_nodes: int) -> CleanTree | ParseFailure:
        sm = pyslang.SourceManager()
        buf = sm.assignText("/rtlforge-ast/source.sv", source)
        options = parsing.PreprocessorOptions()
        options.maxIncludeDepth = 0  # `include of any path is an error, never a file read
        bag = pyslang.Bag()
        bag.preprocessorOptions = options
        tree = syntax.SyntaxTree.fromBuffers([buf], sm, bag)
        errors = [d for d in tree.diagnostics if d.isError()]
        if errors:
            return ParseFailure(f"pyslang: {errors[0].code}")
        root: Any = tree.root
        if root.kind != syntax.SyntaxKind.CompilationUnit:
            # slang returns a lone module as the root; wrap it so every tree starts alike.
            root = _Wrapped("CompilationUnit", (root,))
        try:
            return _flatten(root, _slang_label, _slang_children, max_nodes)
        except TreeTooLarge as exc:
            return ParseFailure(str(exc), too_large=True)


@dataclass(frozen=True)
class _Wrapped:
    label: str
    children: tuple[Any, ...]


def _slang_label(node: Any) -> str:
    if isinstance(node, _Wrapped):
        return node.label
    return node.kind.name


def _slang_children(node: Any) -> Sequence[Any]:
    """Syntax nodes plus keyword tokens; identifiers, literals and punctuation are dropped.

    Operators are already in slang's node kinds (``AddExpression``); keywords carry what
    pyverilog puts in class names (``input``/``output``, ``posedge``, ``signed``, ``reg``).
    """
    if isinstance(node, _Wrapped):
        return node.children
    if isinstance(node, parsing.Token):
        return ()
    return [c for c in node if c is not None and (
        not isinstance(c, parsing.Token) or c.kind.name.endswith("Keyword"))]


#: Directives pyverilog's lexer can skip on its own (it drops each whole directive line).
_NOOP_DIRECTIVES = frozenset({
    "timescale", "default_nettype", "resetall", "celldefine", "endcelldefine",
    "unconnected_drive", "nounconnected_drive",
})
_DIRECTIVE = re.compile(r"`\s*([A-Za-z_]\w*)")
_PREPROCESS_TIMEOUT_S = 10.0


class PyverilogBackend(_Backend):
    """pyverilog's PLY parser, as in the paper, made reusable and parallel-safe.

    pyverilog rebuilds its LALR tables on every ``parse()`` (about 0.5-1.7 s) and writes
    ``parsetab.py``/``parser.out``/``preprocess.output`` into the working directory. Here the
    tables are built once per process in memory (no files) and the one parser is shared under a
    lock (PLY is pure Python, so threads would not parse in parallel anyway). Sources with macros
    are preprocessed by ``iverilog -E`` inside a private temporary directory; ``\\`include`` is
    refused so untrusted text cannot read files.
    """

    name: ClassVar[BackendName] = "pyverilog"
    _lock = threading.Lock()
    _parser: Any = None
    _runner: SandboxRunner | None = None  # per instance, made on the first macro preprocess

    @staticmethod
    def available() -> bool:
        try:
            import pyverilog.vparser.parser  # noqa: F401
        except ImportError:
            return False
        return True

    @classmethod
    def _get_parser(cls) -> Any:
        """Build the parser once (caller holds the lock)."""
        if cls._parser is None:
            try:
                from ply import yacc
                from pyverilog.vparser.lexer import VerilogLexer
                from pyverilog.vparser.parser import VerilogParser
            except ImportError as exc:
                raise ASTBackendUnavailable(f"pyverilog is not installed; {INSTALL_HINT}") from exc

            class _InMemoryParser(VerilogParser):  # type: ignore[misc]
                def __init__(self) -> None:  # replaces a constructor that writes table files
                    self.lexer = VerilogLexer(error_func=self._lexer_error_func)
                    self.lexer.build()
                    self.tokens = self.lexer.tokens
                    self.parser = yacc.yacc(module=self, method="LALR", write_tables=False,
                                            debug=False, errorlog=yacc.NullLogger())

            cls._parser = _InMemoryParser()
        return cls._parser

    @classmethod
    def warm_up(cls) -> None:
        """Build the parser now (about half a second) rather than on the first score."""
        with cls._lock:
            cls._get_parser()

    def parse(self, source: str, max_nodes: int) -> CleanTree | ParseFailure:
        text = source
        names = set(_DIRECTIVE.findall(source))
        if "include" in names or "``" in source:
            return ParseFailure("pyverilog: `include and token pasting are not accepted")
        if names - _NOOP_DIRECTIVES:
            if self._runner is None:
                self._runner = SandboxRunner()
            pre = _iverilog_preprocess(source, self._runner)
            if isinstance(pre, ParseFailure):
                return pre
            text = pre
        with self._lock:
            parser = self._get_parser()
            lexer = parser.lexer
            lexer.directives = []  # the shared lexer accumulates these across parses
            lexer.default_nettype = "wire"
            lexer.reset_lineno()
            try:
                root = parser.parse(text)
            except Exception as exc:  # noqa: BLE001 - any parser failure is a verdict on the input
                return ParseFailure(f"pyverilog: {type(exc).__name__}: {exc}"[:300])
        if root is None:
            return ParseFailure("pyverilog: empty parse")
        try:
            return _flatten(root, _pyverilog_label, _pyverilog_children, max_nodes)
        except TreeTooLarge as exc:
            return ParseFailure(str(exc), too_large=True)


def _pyverilog_label(node: Any) -> str:
    """Class name, plus the two attributes that are structure rather than names or values."""
    label = type(node).__name__
    sens = getattr(node, "type", None) if label == "Sens" else None
    if isinstance(sens, str):
        label += f":{sens}"
    if getattr(node, "signed", False) is True:
        label += ":signed"
    return label


def _pyverilog_children(node: Any) -> Sequence[Any]:
    from pyverilog.vparser.ast import Node

    return [c for c in (node.children() or ()) if isinstance(c, Node)]


def _iverilog_preprocess(source: str, runner: SandboxRunner) -> str | ParseFailure:
    """``iverilog -E`` in a jailed workspace, the text gated like any design first."""
    exe = os.environ.get("PYVERILOG_IVERILOG") or "iverilog"
    try:
        with runner.workspace(prefix="rtlforge-ast-") as tmp:
            runner.put(tmp, [SourceFile(name="source.v", content=source)], role="design",
                       readable=["source.v"])
            run = runner.run([exe, "-E", "-o", "preprocessed.v", "source.v"], cwd=tmp,
                             timeout=_PREPROCESS_TIMEOUT_S)
            text = runfiles.read_text(tmp, "preprocessed.v", 4 * len(source) + 1_000_000)
    except RtlforgeError as exc:
        if is_infra(exc):  # tool missing, sandbox failure
            return ParseFailure(f"pyverilog: could not run iverilog -E: {exc}"[:300], infra=True)
        return ParseFailure(f"pyverilog: refused by the security check: {exc}"[:300])
    if run.timed_out:
        return ParseFailure("pyverilog: iverilog -E timed out")
    err = run.stderr.strip().splitlines()
    undefined = [line for line in err if "undefined" in line]
    if run.returncode != 0 or undefined or text is None:
        # iverilog only warns about an undefined macro (and pastes nothing); slang rejects
        # it, and so do we, so both backends agree that such code does not parse.
        first = (undefined or err or ["?"])[0]
        return ParseFailure(f"pyverilog: iverilog -E failed: {first}"[:300])
    return text


_BACKENDS: dict[str, type[_Backend]] = {"pyverilog": PyverilogBackend, "pyslang": PyslangBackend}


# --------------------------------------------------------------------------------------------
# Reward
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ASTScore:
    """One scored completion.

    ``status``: ``parsed`` (reward = scale * similarity), ``unparsable`` (code the chosen
    backend(s) cannot parse, including a module that never ends), ``no_code`` (no Verilog at
    all), ``too_large`` (over the size caps; scored like unparsable), ``over_budget``
    (similarity exceeded its budget; abstains with ``None``), ``reference_error`` (the
    reference is missing or the chosen backend(s) cannot parse it; abstains). ``backend`` is
    the parser whose trees decided the score, ``detail`` why auto fell back or parsing failed.
    """

    reward: float | None
    status: Status
    similarity: float | None = None
    backend: BackendName | None = None
    detail: str | None = None


@dataclass
class _RefCache:
    """A small thread-safe LRU of interned reference trees (a GRPO group shares one)."""

    size: int
    _data: OrderedDict[tuple[str, str], _Shapes | ParseFailure] = field(
        default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: tuple[str, str],
            build: Callable[[], _Shapes | ParseFailure]) -> _Shapes | ParseFailure:
        with self._lock:
            hit = self._data.get(key)
            if hit is not None:
                self._data.move_to_end(key)
                return hit
        value = build()  # outside the lock: two threads may build the same entry once each
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)
        return value


_MODULE_HEADER = re.compile(r"\b(?:macro)?module\s+[A-Za-z_]\w*\s*[#(;]")
_DEFINE_LINE = re.compile(r"^[ \t]*`define[ \t]+[A-Za-z_]\w*\b[^\n\\]*$", re.M)


def _with_macros(text: str, code: str) -> str:
    """Put back single-line macro definitions that extraction dropped (they precede modules)."""
    lost = [m.group(0).strip() for m in _DEFINE_LINE.finditer(text) if m.group(0) not in code]
    return "\n".join([*dict.fromkeys(lost), code]) if lost else code


def _completion_text(completion: Any) -> str | None:
    """Plain text, or the last message's content of a chat-format completion."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        content = completion[-1].get("content")
        return content if isinstance(content, str) else None
    return None


class ASTSimilarityReward(Reward):
    """VeriSeek's code-structure reward: ``10 * sim`` / ``-5`` unparsable / ``-10`` no code.

    "Is code" is decided as follows: :func:`extract_verilog` finds a complete module (then it is
    parsed), or the text contains a module header (``module <name>`` followed by ``(``, ``#``
    or ``;``) that never reaches ``endmodule`` (truncated: unparsable). Anything else, including
    prose that merely mentions a module, is ``no_code``.

    The reference comes per sample from the ``reference`` (or ``golden``) column, as Verilog
    source; it is parsed once per backend and cached.

    ``backend``: ``pyverilog`` (default, the paper's; raises :class:`ASTBackendUnavailable` if
    it is not installed), ``pyslang`` (accepts SystemVerilog, so it applies less syntax
    pressure), or ``auto`` (pyverilog, else pyslang for both sides; not the paper's reward).
    """

    name: ClassVar[str] = "ast-similarity"

    def __init__(self, backend: Literal["auto", "pyverilog", "pyslang"] = "pyverilog", *,
                 scale: float = 10.0, unparsable_reward: float = -5.0,
                 no_code_reward: float = -10.0, max_source_chars: int = 200_000,
                 max_nodes: int = 200_000, max_steps: int = 5_000_000,
                 time_budget_s: float = 5.0, cache_size: int = 1024) -> None:
        """Args:
            backend: the parser: ``pyverilog`` (the paper's), ``pyslang`` or ``auto``.
            scale: the reward of a perfect match (``scale * similarity``).
            unparsable_reward: the reward of code that does not parse.
            no_code_reward: the reward of a completion with no Verilog module.
            max_source_chars: longer sources are scored as unparsable, not parsed.
            max_nodes: a tree with more nodes is scored as unparsable.
            max_steps: the similarity computation's step budget per comparison (past it the
                score abstains).
            time_budget_s: wall-clock seconds per comparison (past it the score abstains).
            cache_size: parsed references kept (one per backend and reference text).
        """
        if backend not in ("auto", "pyverilog", "pyslang"):
            raise ValueError(f"backend must be 'auto', 'pyverilog' or 'pyslang', not {backend!r}")
        self.scale = scale
        self.unparsable_reward = unparsable_reward
        self.no_code_reward = no_code_reward
        self.max_source_chars = max_source_chars
        self.max_nodes = max_nodes
        self.max_steps = max_steps
        self.time_budget_s = time_budget_s
        self.requested_backend = backend
        self._unavailable: str | None = None
        if backend == "pyverilog" and not PyverilogBackend.available():
            raise ASTBackendUnavailable(f"backend 'pyverilog' needs pyverilog; {INSTALL_HINT}")
        if backend == "auto" and not PyverilogBackend.available():
            self._unavailable = "pyverilog is not installed; scored with pyslang"
        names: list[str] = {"auto": ["pyverilog", "pyslang"], "pyverilog": ["pyverilog"],
                            "pyslang": ["pyslang"]}[backend]
        if self._unavailable:
            names = ["pyslang"]
        self._backends: list[_Backend] = [_BACKENDS[n]() for n in names]
        self._cache = _RefCache(cache_size)

    # ------------------------------------------------------------------ public API

    def score(self, prompts: Sequence[str], completions: Sequence[Any],
              **columns: Sequence[Any]) -> list[float | None]:
        return [s.reward for s in self.score_detailed(prompts, completions, **columns)]

    def score_detailed(self, prompts: Sequence[str], completions: Sequence[Any],
                       **columns: Sequence[Any]) -> list[ASTScore]:
        """Like :meth:`score`, with status, similarity and the backend that decided."""
        refs = columns.get("reference", columns.get("golden"))
        if refs is None:
            raise ValueError("ast-similarity needs a 'reference' (or 'golden') column")
        if isinstance(refs, str) or len(refs) != len(completions):
            raise ValueError(f"reference column has {len(refs)} entries for "
                             f"{len(completions)} completions")
        return [self.score_one(c, r) for c, r in zip(completions, refs, strict=True)]

    def score_one(self, completion: Any, reference: Any) -> ASTScore:
        """Score one completion against one reference source; never raises on bad input."""
        text = _completion_text(completion)
        if text is None:
            return ASTScore(self.no_code_reward, "no_code", detail="completion is not text")
        try:
            code = _with_macros(text, extract_verilog(text))
        except ExtractionError:
            if _MODULE_HEADER.search(text):
                return ASTScore(self.unparsable_reward, "unparsable",
                                detail="a module starts but never ends (truncated?)")
            return ASTScore(self.no_code_reward, "no_code")
        if len(code) > self.max_source_chars:
            return ASTScore(self.unparsable_reward, "too_large",
                            detail=f"code is longer than {self.max_source_chars} characters")
        if not isinstance(reference, str) or not reference.strip():
            return ASTScore(None, "reference_error", detail="no reference source")
        return self._compare(code, reference)

    # ------------------------------------------------------------------ internals

    def _reference(self, backend: _Backend, reference: str) -> _Shapes | ParseFailure:
        def build() -> _Shapes | ParseFailure:
            if len(reference) > self.max_source_chars:
                return ParseFailure("reference is over the size cap", too_large=True)
            tree = backend.parse(reference, self.max_nodes)
            if isinstance(tree, ParseFailure):
                try:  # a reference given as a model answer (fences, prose) still counts
                    extracted = _with_macros(reference, extract_verilog(reference))
                except ExtractionError:
                    return tree
                if extracted.strip() == reference.strip():
                    return tree
                tree = backend.parse(extracted, self.max_nodes)
                if isinstance(tree, ParseFailure):
                    return tree
            shapes = _Shapes()
            shapes.add(tree)
            return shapes

        return self._cache.get((backend.name, reference), build)

    def _compare(self, code: str, reference: str) -> ASTScore:
        notes: list[str] = [self._unavailable] if self._unavailable else []
        judged_by: BackendName | None = None
        last_failure: ParseFailure | None = None
        for backend in self._backends:
            ref = self._reference(backend, reference)
            if isinstance(ref, ParseFailure):
                notes.append(f"{backend.name} cannot parse the reference ({ref.reason})")
                continue
            judged_by = backend.name
            cand = backend.parse(code, self.max_nodes)
            if isinstance(cand, ParseFailure) and cand.infra:
                return ASTScore(None, "infra_error", backend=backend.name, detail=cand.reason)
            if isinstance(cand, ParseFailure):
                last_failure = cand
                notes.append(f"{backend.name} cannot parse the completion ({cand.reason})")
                continue
            overlay = _Shapes(ref)
            overlay.add(cand)
            try:
                sim = _shape_similarity(overlay, overlay.root, ref.root, max_steps=self.max_steps,
                                        deadline=time.monotonic() + self.time_budget_s)
            except SimilarityBudgetExceeded as exc:
                return ASTScore(None, "over_budget", backend=backend.name,
                                detail="; ".join([*notes, str(exc)]))
            return ASTScore(self.scale * sim, "parsed", similarity=sim, backend=backend.name,
                            detail="; ".join(notes) or None)
        detail = "; ".join(notes) or None
        if judged_by is None:
            return ASTScore(None, "reference_error", detail=detail)
        status: Status = "too_large" if last_failure and last_failure.too_large else "unparsable"
        return ASTScore(self.unparsable_reward, status, backend=judged_by, detail=detail)


@hookimpl
def register_rewards(register: Register) -> None:
    register(ASTSimilarityReward)
