"""The built-in guidance plugin: declares the ``guidance_detector`` kind and registers one
detector per built-in rule, through the hook a third party uses too::

    @hookimpl
    def register_guidance_detectors(register):
        register(MyDetector)

Listed as a default plugin (entry point ``guidance`` in the ``rtlforge`` group).
"""

from __future__ import annotations

from rtlforge.agents.guidance import hookspecs
from rtlforge.agents.guidance.base import DETECTOR_KIND, builtin_detectors
from rtlforge.core.hookspecs import Register, hookimpl


@hookimpl
def register_hookspecs(register: Register) -> None:
    register(hookspecs)


@hookimpl
def register_plugin_kinds(register: Register) -> None:
    register(DETECTOR_KIND)


@hookimpl
def register_guidance_detectors(register: Register) -> None:
    for detector in builtin_detectors():
        register(detector)
