"""The knowledge package's extension point, added to a host through ``register_hookspecs``."""

from __future__ import annotations

from rtlforge.core.hookspecs import Register, hookspec


@hookspec
def register_retrievers(register: Register) -> None:
    """Register :class:`~rtlforge.agents.knowledge.base.Retriever` classes (kind ``retriever``)."""
