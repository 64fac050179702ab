"""The built-in knowledge plugin: declares the ``retriever`` kind and registers the built-ins.

Listed as a default plugin (entry point ``knowledge`` in the ``rtlforge`` group), so third-party
retrievers register through the same ``register_retrievers`` hook::

    @hookimpl
    def register_retrievers(register):
        register(MyRetriever)
"""

from __future__ import annotations

from rtlforge.agents.knowledge import hookspecs
from rtlforge.agents.knowledge.base import RETRIEVER_KIND
from rtlforge.agents.knowledge.embedding import EmbeddingRetriever
from rtlforge.agents.knowledge.retrieval import BM25Retriever, KeywordRetriever
from rtlforge.core.hookspecs import Register, hookimpl


@hookimpl
def register_hookspecs(register: Register) -> None:
    register(hookspecs)


@hookimpl
def register_plugin_kinds(register: Register) -> None:
    register(RETRIEVER_KIND)


@hookimpl
def register_retrievers(register: Register) -> None:
    register(KeywordRetriever)
    register(BM25Retriever)  # registered even without bm25s: building it says what is missing
    register(EmbeddingRetriever)  # likewise without the embeddings extra
