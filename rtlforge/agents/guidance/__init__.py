"""Spec guidance: detectors that append design advice to a spec, and a gate that picks how much.

:mod:`.base` holds the detector interface and the built-in rules (data in ``data/``);
:mod:`.registry` the one entry point, :func:`~.registry.enrich`, and the orchestrator's seam;
:mod:`.gate` the learned gate (numpy only); :mod:`.plugin` registers the built-ins. See
docs/guidance.md.
"""
