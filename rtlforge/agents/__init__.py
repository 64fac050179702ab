"""Agents: the orchestration layer of issue 12 (knowledge, routing, refinement).

Each subpackage declares its own extension points through ``register_hookspecs`` and
``register_plugin_kinds`` (see :mod:`rtlforge.core.hookspecs`), so nothing here grows the core.
"""
