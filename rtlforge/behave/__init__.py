"""Behaviour modelling (BEHAVE): typed behaviour models as timing-flexible references.

A task pairs a spec with a hidden golden behaviour model; RTL (and an agent's own model) are
checked against it by BEHAVE-Sim under rules that allow the latency and microarchitecture
freedom the spec permits. Subpackages: :mod:`.model` (the restricted behaviour DSL, its checker,
IR, interpreter and Z3 encoding) and :mod:`.sim` (task format, protocols, generated
testbenches, stimulus, the checker). Issue 13; nothing here grows the core.
"""
