"""The source library: small reference implementations that acquired tasks are built from.

A library is a folder of source folders, each with one Python or C file and ``meta.toml``
(provenance, licence, description, interface hints). Loading it is where contamination is
stopped, before any LLM sees a source: a task derived from an evaluation design would make the
training pool leak into the benchmark that measures it. So the loader keeps a source only when

- its metadata is valid and its file readable (else ``invalid_metadata`` / ``unreadable``);
- its id and its normalised text are new (``duplicate_id`` / ``duplicate``: the text after
  comments and whitespace are removed hashes like an earlier source's);
- its declared provenance names no evaluation set or design (``evaluation_provenance``);
- its text does not overlap an evaluation document (``evaluation_fingerprint``, below).

Every source that is dropped becomes an :class:`Exclusion` with the reason and the evidence;
nothing is dropped silently.

The fingerprint. Evaluation designs are Verilog and English, sources Python or C, so an exact
hash cannot catch a source written from a benchmark's description. The index keeps word
8-grams (lower-cased identifiers and numbers) of every evaluation document: the RTLLM designs'
descriptions and references, VerilogEval problems' prompts and references. An 8-gram that
occurs in three or more evaluation documents is boilerplate ("please act as a professional
verilog designer ...") and is ignored. A source whose text (code, description, interface notes)
shares at least ``min_shared`` 8-grams with one document, covering at least ``min_fraction`` of
the smaller side's distinct 8-grams, is excluded naming that document.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rtlforge.core.errors import ConfigError
from rtlforge.core.untrusted import load_toml

__all__ = [
    "EVALUATION_SET_NAMES",
    "EvaluationDocument",
    "EvaluationIndex",
    "Exclusion",
    "ExclusionReason",
    "InterfaceHint",
    "LibraryLoad",
    "Source",
    "SourceMeta",
    "load_library",
    "normalised_hash",
]

META_FILE = "meta.toml"
#: A source file larger than this is not a "small reference implementation".
MAX_SOURCE_BYTES = 64_000
#: Names that, in declared provenance, say a source came from an evaluation set.
EVALUATION_SET_NAMES = ("rtllm", "verilogeval", "verilog-eval", "verilog_eval", "humaneval",
                        "vgen", "rtl-repo", "rtlrepo", "cvdp")
SHINGLE = 8
#: An 8-gram in this many evaluation documents or more is boilerplate, not a fingerprint.
BOILERPLATE_DOCS = 3

ExclusionReason = Literal["invalid_metadata", "unreadable", "duplicate_id", "duplicate",
                          "evaluation_provenance", "evaluation_fingerprint"]

_IDENT = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_WORD = re.compile(r"[a-z_][a-z0-9_]*|\d+")
_TYPE = re.compile(r"^(?:u?int|sint)\d{1,4}$|^bool$")


class InterfaceHint(BaseModel):
    """One port the source suggests; the Builder decides the real interface."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=64)
    direction: Literal["input", "output"]
    type: str = Field(description="a BEHAVE endpoint type: uintN, sintN or bool")
    note: str = Field("", max_length=500)

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if not _TYPE.match(value):
            raise ValueError(f"type {value!r} is not uintN, sintN or bool")
        return value


class SourceMeta(BaseModel):
    """``meta.toml`` of one source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="lower-case identifier, unique in the library")
    title: str = Field(min_length=1, max_length=200)
    language: Literal["python", "c"]
    file: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
    provenance: str = Field(min_length=1, max_length=2000,
                            description="where the code comes from, in words")
    licence: str = Field(min_length=1, max_length=200)
    description: str = Field(min_length=1, max_length=4000)
    derived_from: tuple[str, ...] = Field(
        (), description="works this source was derived from (designs, papers, data sets)")
    tags: tuple[str, ...] = ()
    interface: tuple[InterfaceHint, ...] = ()

    @field_validator("id")
    @classmethod
    def _ident(cls, value: str) -> str:
        if not _IDENT.match(value):
            raise ValueError(f"id {value!r} must be lower-case letters, digits and _ (max 64)")
        return value


class Source(BaseModel):
    """A source that passed every check: what the Analyst may pick and the Builder reads."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    meta: SourceMeta
    code: str
    directory: Path
    text_hash: str

    @property
    def id(self) -> str:
        return self.meta.id


class Exclusion(BaseModel):
    """A source the loader dropped, and why (recorded, never silent)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    directory: str
    source_id: str | None
    reason: ExclusionReason
    message: str
    evidence: str | None = None  # the duplicate's id, the evaluation document's name, ...


class LibraryLoad(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    sources: tuple[Source, ...]
    exclusions: tuple[Exclusion, ...]

    def get(self, source_id: str) -> Source | None:
        return next((s for s in self.sources if s.id == source_id), None)


# ------------------------------------------------------------------------------ normalising


def _strip_comments(code: str, language: str) -> str:
    if language == "c":
        code = re.sub(r"/\*.*?\*/", " ", code, flags=re.DOTALL)
        return re.sub(r"//[^\n]*", " ", code)
    return re.sub(r"#[^\n]*", " ", code)


def normalised_hash(code: str, language: str) -> str:
    """SHA-256 of the code with comments removed and all whitespace runs collapsed.

    Two sources that differ only in comments, indentation or blank lines are the same source.
    (A ``#`` inside a Python string is read as a comment too: harmless for a duplicate check.)
    """
    text = " ".join(_strip_comments(code, language).split())
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i:i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


# ------------------------------------------------------------------------ evaluation index


class EvaluationDocument(BaseModel):
    """One evaluation text the library must not overlap (a design description, a reference)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str  # e.g. "rtllm:adder_8bit/design_description.txt"
    text: str


class EvaluationIndex:
    """Evaluation documents as 8-gram fingerprints, plus the design names they cover."""

    def __init__(self, documents: Iterable[EvaluationDocument], *,
                 design_names: Iterable[str] = ()) -> None:
        self.documents = tuple(documents)
        self.design_names = frozenset(n.lower() for n in design_names)
        self._shingles = {d.name: _shingles(d.text) for d in self.documents}
        counts: Counter[tuple[str, ...]] = Counter()
        for grams in self._shingles.values():
            counts.update(grams)
        self._boilerplate = {g for g, n in counts.items() if n >= BOILERPLATE_DOCS}

    def __len__(self) -> int:
        return len(self.documents)

    @classmethod
    def from_paths(cls, paths: Sequence[str | Path]) -> EvaluationIndex:
        """Index evaluation sets in their distributed layouts: an RTLLM v2 tree (folders with
        ``design_description.txt``) or VerilogEval folders (``ProbNNN_name_prompt.txt`` and
        ``_ref.sv``); any folder may hold either. Raises ConfigError for a path that is not a
        folder or holds neither layout (an evaluation set that silently indexes to nothing
        would make the contamination check vacuous)."""
        documents: list[EvaluationDocument] = []
        names: set[str] = set()
        for raw in paths:
            root = Path(raw)
            if not root.is_dir():
                raise ConfigError(f"evaluation set {root} is not a folder")
            found = 0
            for description in sorted(root.rglob("design_description.txt")):
                design = description.parent
                names.add(design.name)
                for path in (description, *sorted(design.glob("verified_*.v"))):
                    documents.append(EvaluationDocument(
                        name=f"rtllm:{design.name}/{path.name}", text=_read_text(path)))
                    found += 1
            for prompt in sorted(root.rglob("Prob*_prompt.txt")):
                problem = prompt.name[:-len("_prompt.txt")]
                names.add(problem)
                names.add(problem.split("_", 1)[-1])
                for path in (prompt, *sorted(prompt.parent.glob(f"{problem}_ref.sv"))):
                    documents.append(EvaluationDocument(
                        name=f"verilogeval:{prompt.parent.name}/{path.name}",
                        text=_read_text(path)))
                    found += 1
            if not found:
                raise ConfigError(f"evaluation set {root} holds no RTLLM design "
                                  "(design_description.txt) and no VerilogEval problem "
                                  "(Prob*_prompt.txt)")
        return cls(documents, design_names=names)

    def overlap(self, text: str, *, min_shared: int = 6, min_fraction: float = 0.2
                ) -> tuple[str, int, float] | None:
        """The evaluation document ``text`` overlaps most, as (name, shared 8-grams, fraction
        of the smaller side), when it passes both thresholds; else None."""
        grams = _shingles(text) - self._boilerplate
        if not grams:
            return None
        best: tuple[str, int, float] | None = None
        for name, doc in self._shingles.items():
            doc = doc - self._boilerplate
            shared = len(grams & doc)
            if not shared:
                continue
            fraction = shared / min(len(grams), len(doc))
            if shared >= min_shared and fraction >= min_fraction and (
                    best is None or shared > best[1]):
                best = (name, shared, fraction)
        return best

    def provenance_hit(self, meta: SourceMeta) -> str | None:
        """The evaluation set or design the declared provenance names, if any.

        Set names are looked for in ``provenance`` and ``derived_from``; design names only in
        ``derived_from`` (a design called ``fsm`` must not exclude every source whose
        provenance mentions a state machine)."""
        declared = " ".join((meta.provenance, *meta.derived_from)).lower()
        for name in EVALUATION_SET_NAMES:
            if re.search(rf"(?<![a-z0-9]){re.escape(name)}(?![a-z0-9])", declared):
                return name
        for entry in meta.derived_from:
            words = set(re.findall(r"[a-z0-9_]+", entry.lower()))
            hit = sorted(words & self.design_names)
            if hit:
                return hit[0]
        return None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ConfigError(f"cannot read evaluation document {path}: {exc}") from exc


# -------------------------------------------------------------------------------- loading


def _excluded(directory: Path, source_id: str | None, reason: ExclusionReason, message: str,
              evidence: str | None = None) -> Exclusion:
    return Exclusion(directory=str(directory), source_id=source_id, reason=reason,
                     message=message, evidence=evidence)


def _load_one(directory: Path) -> Source | Exclusion:
    meta_path = directory / META_FILE
    try:
        raw = load_toml(meta_path.read_text(encoding="utf-8"))
        meta = SourceMeta.model_validate(raw)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        return _excluded(directory, None, "invalid_metadata", f"{META_FILE}: {exc}")
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        return _excluded(directory, None, "invalid_metadata",
                         f"{META_FILE}: field {where!r}: {first['msg']}")
    path = directory / meta.file
    try:
        if path.is_symlink() or not path.is_file():
            raise OSError(f"{meta.file} is not a file in the source folder")
        if path.stat().st_size > MAX_SOURCE_BYTES:
            raise OSError(f"{meta.file} is larger than {MAX_SOURCE_BYTES} bytes")
        code = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return _excluded(directory, meta.id, "unreadable", str(exc))
    if not code.strip():
        return _excluded(directory, meta.id, "unreadable", f"{meta.file} is empty")
    return Source(meta=meta, code=code, directory=directory,
                  text_hash=normalised_hash(code, meta.language))


def _fingerprint_text(source: Source) -> str:
    notes = " ".join(h.note for h in source.meta.interface)
    return "\n".join((source.meta.title, source.meta.description, notes, source.code))


def load_library(directory: str | Path, *, evaluation: EvaluationIndex | None = None,
                 min_shared: int = 6, min_fraction: float = 0.2) -> LibraryLoad:
    """Every source folder under ``directory`` (sorted by name), checked as the module says.

    The first of two duplicates (by folder name) is kept. Without ``evaluation`` only the
    declared provenance is checked against evaluation-set names; pass an index to check the
    designs too. Raises ConfigError only when ``directory`` itself is not a folder."""
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(f"source library {root} is not a folder")
    index = evaluation or EvaluationIndex(())
    kept: list[Source] = []
    exclusions: list[Exclusion] = []
    by_id: dict[str, Source] = {}
    by_hash: dict[str, Source] = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        if not (folder / META_FILE).exists():
            continue  # not a source folder (e.g. fixtures, notes)
        loaded = _load_one(folder)
        if isinstance(loaded, Exclusion):
            exclusions.append(loaded)
            continue
        if loaded.id in by_id:
            exclusions.append(_excluded(folder, loaded.id, "duplicate_id",
                                        f"id {loaded.id!r} is already used by "
                                        f"{by_id[loaded.id].directory.name}",
                                        evidence=str(by_id[loaded.id].directory.name)))
            continue
        if loaded.text_hash in by_hash:
            first = by_hash[loaded.text_hash]
            exclusions.append(_excluded(folder, loaded.id, "duplicate",
                                        f"same code as source {first.id!r} once comments and "
                                        "whitespace are removed", evidence=first.id))
            continue
        named = index.provenance_hit(loaded.meta)
        if named is not None:
            exclusions.append(_excluded(folder, loaded.id, "evaluation_provenance",
                                        f"declared provenance names the evaluation set or "
                                        f"design {named!r}", evidence=named))
            continue
        hit = index.overlap(_fingerprint_text(loaded), min_shared=min_shared,
                            min_fraction=min_fraction)
        if hit is not None:
            name, shared, fraction = hit
            exclusions.append(_excluded(
                folder, loaded.id, "evaluation_fingerprint",
                f"shares {shared} word 8-grams ({fraction:.0%} of the smaller text) with "
                f"evaluation document {name}", evidence=name))
            continue
        by_id[loaded.id] = loaded
        by_hash[loaded.text_hash] = loaded
        kept.append(loaded)
    return LibraryLoad(sources=tuple(kept), exclusions=tuple(exclusions))
