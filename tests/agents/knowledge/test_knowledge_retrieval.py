"""Keyword scoring (the paper's weights, applied by hand here), focus order, BM25, the hook."""

from __future__ import annotations

import importlib.util
from datetime import date

import pytest

from rtlforge.agents.knowledge import plugin as knowledge_plugin
from rtlforge.agents.knowledge.base import (
    FOCI,
    Hit,
    KnowledgeEntry,
    Provenance,
    Retriever,
    builtin_entries,
)
from rtlforge.agents.knowledge.retrieval import BM25Retriever, KeywordRetriever, query_terms
from rtlforge.core.hookspecs import hookimpl
from rtlforge.core.plugins import PluginHost

PROV = Provenance(source="written for rtlforge tests", date=date(2026, 12, 1))


def entry(id: str, title: str, description: str, keywords: tuple[str, ...] = (),
          template: str | None = None, focus: tuple[str, ...] = ("full",)) -> KnowledgeEntry:
    return KnowledgeEntry(id=id, kind="pattern", title=title, description=description,
                          keywords=keywords, code_template=template, focus=focus,
                          provenance=PROV)


# Three entries; the expected scores below are the formula worked by hand.
FIFO = entry("fifo", "Synchronous FIFO", "A queue with read and write pointers.",
             ("fifo", "buffer"), "reg [7:0] mem [0:15]; // fifo storage", ("architecture",))
COUNTER = entry("counter", "Counter", "Counts clock edges; a fifo may use one as a pointer.",
                ("counter",), None, ("minimal",))
GRAY = entry("gray", "Gray pointer", "Gray code pointer crossing clock domains.",
             ("gray", "pointer", "cdc"), "assign g = b ^ (b >> 1);", ("architecture",))
FIXTURE = (FIFO, COUNTER, GRAY)


def scores(hits: list[Hit]) -> dict[str, float]:
    return {h.entry.id: h.score for h in hits}


def test_keyword_scores_match_the_formula_by_hand() -> None:
    hits = KeywordRetriever(FIXTURE).retrieve("fifo pointer", focus="full", k=10)
    # fifo:    "fifo" title .4 + keyword .3 + template .1 = .8; "pointer": description? the
    #          description says "pointers" (no stemming): 0.                       -> 0.8
    # counter: "fifo" description .2; "pointer" description .2                      -> 0.4
    # gray:    "fifo" nowhere; "pointer" title .4 + description .2 + keyword .3     -> 0.9
    assert scores(hits) == pytest.approx({"fifo": 0.8, "counter": 0.4, "gray": 0.9})
    assert [h.entry.id for h in hits] == ["gray", "fifo", "counter"]  # no entry tagged "full"
    gray = hits[0]
    assert gray.why == ("pointer: title +0.4, description +0.2, keyword +0.3",)


def test_a_term_counts_once_per_field_and_repeats_in_the_query_once() -> None:
    # "gray" appears twice in GRAY's description and is typed three times: still .4+.2+.3.
    hits = KeywordRetriever(FIXTURE).retrieve("Gray gray GRAY", k=10)
    assert scores(hits) == pytest.approx({"gray": 0.9})
    assert query_terms("The one-hot MUX, the mux") == ["one", "hot", "mux"]


def test_focus_puts_tagged_entries_first_without_changing_scores() -> None:
    minimal = KeywordRetriever(FIXTURE).retrieve("fifo pointer", focus="minimal", k=10)
    assert [h.entry.id for h in minimal] == ["counter", "gray", "fifo"]
    assert scores(minimal) == pytest.approx({"fifo": 0.8, "counter": 0.4, "gray": 0.9})
    arch = KeywordRetriever(FIXTURE).retrieve("fifo pointer", focus="architecture", k=2)
    assert [h.entry.id for h in arch] == ["gray", "fifo"]  # top-k after ordering


def test_no_match_and_k_zero_give_nothing() -> None:
    retriever = KeywordRetriever(FIXTURE)
    assert retriever.retrieve("multiplier", k=5) == []
    assert retriever.retrieve("fifo", k=0) == []


def test_builtin_entries_are_well_formed() -> None:
    entries = builtin_entries()
    assert len(entries) >= 25
    assert {e.kind for e in entries} == {"pattern", "architecture", "optimisation"}
    for e in entries:
        assert e.provenance.source == "written for rtlforge"
        assert e.focus and set(e.focus) <= set(FOCI)
        assert e.keywords
    top = KeywordRetriever().retrieve("latch inferred in combinational always block",
                                      focus="error", k=1)
    assert top[0].entry.id == "latch-avoidance"


HAS_BM25 = importlib.util.find_spec("bm25s") is not None


@pytest.mark.skipif(not HAS_BM25, reason="bm25s not installed (pip install 'rtlforge[knowledge]')")
def test_bm25_ranks_the_entry_with_the_rare_terms_first() -> None:
    hits = BM25Retriever(FIXTURE).retrieve("gray cdc pointer", k=3)
    assert hits[0].entry.id == "gray"  # holds all three terms; the others at most one
    assert all(h.score > 0 for h in hits)
    assert BM25Retriever(FIXTURE).retrieve("unknownword", k=3) == []
    focused = BM25Retriever(FIXTURE).retrieve("fifo pointer", focus="minimal", k=3)
    assert focused[0].entry.id == "counter"


@pytest.mark.skipif(HAS_BM25, reason="checks the message shown when bm25s is absent")
def test_bm25_without_the_library_says_what_to_install() -> None:
    with pytest.raises(ImportError, match=r"rtlforge\[knowledge\]"):
        BM25Retriever(FIXTURE)


class ExactTitle(Retriever):
    """A third-party strategy: 1.0 when the query is an entry's title."""

    name = "exact-title"

    def rank(self, query, *, focus):
        return [Hit(entry=e, score=1.0, why=("title",)) for e in self.entries
                if e.title.lower() == query.lower()]


class ThirdParty:
    @hookimpl
    def register_retrievers(self, register):
        register(ExactTitle)


@pytest.mark.parametrize("order", ["builtin-first", "third-party-first"])
def test_a_third_party_retriever_registers_through_the_hook(order: str) -> None:
    plugins = [("knowledge", knowledge_plugin), ("exact", ThirdParty())]
    if order == "third-party-first":
        plugins.reverse()
    host = PluginHost(load_entrypoints=False, plugins=plugins)
    assert host.failures == {}
    assert host.names("retriever") == ["bm25", "embedding", "exact-title", "keyword"]
    found = host.create("retriever", "exact-title", entries=FIXTURE).retrieve("counter")
    assert [h.entry.id for h in found] == ["counter"]
    keyword = host.create("retriever", "keyword", entries=FIXTURE)
    assert isinstance(keyword, KeywordRetriever)
