"""Retrieval strategies: the paper's keyword scoring, and BM25 (PyPI ``bm25s``, optional).

Both share one tokeniser and one focus rule, so they differ only in how they score:

- **Tokens**: the text is lower-cased and split into runs of ``[a-z0-9]`` (so ``one-hot`` is
  ``one`` + ``hot``, ``shift_reg`` is ``shift`` + ``reg``); a few English stop words are
  dropped; a query's repeated terms count once.
- **Focus**: entries tagged with the requested focus come first, whatever their score; within
  each group, higher scores first, then entry id (stable and reproducible). The scores
  themselves are the strategy's, untouched by focus.
- Entries scoring 0 are not hits.

Embedding similarity is a third strategy, in :mod:`.embedding` (optional extra).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rtlforge.agents.knowledge.base import Focus, Hit, KnowledgeEntry, Retriever

__all__ = ["BM25Retriever", "KeywordRetriever", "focus_order", "query_terms", "tokens"]

_TOKEN = re.compile(r"[a-z0-9]+")
_STOP = frozenset({"a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into",
                   "is", "it", "of", "on", "or", "that", "the", "this", "to", "with"})

#: The paper's weights: a query term found in each field adds this much (once per field).
TITLE, DESCRIPTION, KEYWORD, TEMPLATE = 0.4, 0.2, 0.3, 0.1


def tokens(text: str) -> list[str]:
    """The tokens of ``text``, in order, stop words dropped (duplicates kept)."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOP]


def query_terms(query: str) -> list[str]:
    """A query's distinct terms, in first-seen order."""
    return list(dict.fromkeys(tokens(query)))


def focus_order(hits: list[Hit], focus: Focus) -> list[Hit]:
    """Entries tagged with ``focus`` first; then score (high first); then id."""
    return sorted(hits, key=lambda h: (focus not in h.entry.focus, -h.score, h.entry.id))


class KeywordRetriever(Retriever):
    """The paper's keyword scoring, literally.

    For each distinct query term: +0.4 if it is a token of the title, +0.2 of the description,
    +0.3 of any keyword, +0.1 of the code template. A term counts at most once per field
    however often it occurs there; the four fields add up, so one term is worth at most 1.0.
    """

    name = "keyword"

    def __init__(self, entries: Sequence[KnowledgeEntry] | None = None) -> None:
        super().__init__(entries)
        # An inverted index, term -> [(entry index, ((field, weight), ...))]: a query costs its
        # terms' postings, not every entry times every term (the loop queries every round).
        self._postings: dict[str, list[tuple[int, tuple[tuple[str, float], ...]]]] = {}
        for index, entry in enumerate(self.entries):
            fields = (("title", TITLE, set(tokens(entry.title))),
                      ("description", DESCRIPTION, set(tokens(entry.description))),
                      ("keyword", KEYWORD, {t for kw in entry.keywords for t in tokens(kw)}),
                      ("template", TEMPLATE, set(tokens(entry.code_template or ""))))
            for term in set().union(*(field for _, _, field in fields)):
                parts = tuple((label, weight) for label, weight, field in fields
                              if term in field)
                self._postings.setdefault(term, []).append((index, parts))

    def rank(self, query: str, *, focus: Focus) -> list[Hit]:
        scores: dict[int, float] = {}
        why: dict[int, list[str]] = {}
        for term in query_terms(query):
            for index, parts in self._postings.get(term, ()):
                scores[index] = scores.get(index, 0.0) + sum(weight for _, weight in parts)
                why.setdefault(index, []).append(
                    f"{term}: " + ", ".join(f"{label} +{weight}" for label, weight in parts))
        hits = [Hit(entry=self.entries[index], score=round(score, 6), why=tuple(why[index]))
                for index, score in scores.items() if score > 0]
        return focus_order(hits, focus)


def _bm25s() -> Any:
    try:
        import bm25s
    except ImportError as exc:  # optional extra: say how to get it
        raise ImportError("the 'bm25' retriever needs bm25s: pip install 'rtlforge[knowledge]' "
                          "(bm25s==0.3.16)") from exc
    return bm25s


class BM25Retriever(Retriever):
    """Okapi BM25 over title, description, keywords and code template (``bm25s``).

    The document is the four fields' tokens together (same tokeniser as the keyword scorer);
    ``k1`` and ``b`` are BM25's usual parameters. ``bm25s`` is imported when the retriever is
    built, never at ``import rtlforge``.
    """

    name = "bm25"

    def __init__(self, entries: Sequence[KnowledgeEntry] | None = None, *, k1: float = 1.5,
                 b: float = 0.75) -> None:
        """Args:
            k1: BM25's term-frequency saturation.
            b: BM25's document-length normalisation (0: none, 1: full).
        """
        super().__init__(entries)
        bm25s = _bm25s()
        self._index = bm25s.BM25(k1=k1, b=b)
        corpus = [tokens(" ".join((e.title, e.description, *e.keywords, e.code_template or "")))
                  or ["\0empty"] for e in self.entries]
        if corpus:
            self._index.index(corpus, show_progress=False)

    def rank(self, query: str, *, focus: Focus) -> list[Hit]:
        if not self.entries:
            return []
        vocab = self._index.vocab_dict
        terms = [t for t in query_terms(query) if t in vocab]
        if not terms:
            return []
        scores = self._index.get_scores(terms)
        hits = [Hit(entry=entry, score=round(float(score), 6),
                    why=(f"bm25 over {', '.join(terms)}",))
                for entry, score in zip(self.entries, scores, strict=True) if score > 0]
        return focus_order(hits, focus)
