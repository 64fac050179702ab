"""The guidance package's extension point, added to a host through ``register_hookspecs``."""

from __future__ import annotations

from rtlforge.core.hookspecs import Register, hookspec


@hookspec
def register_guidance_detectors(register: Register) -> None:
    """Register :class:`~rtlforge.agents.guidance.base.GuidanceDetector` classes
    (kind ``guidance_detector``)."""
