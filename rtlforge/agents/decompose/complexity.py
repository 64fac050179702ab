"""Complexity detection: is a spec a system of components, worth decomposing?

The paper's rule: a spec that names at least three distinct hardware components is decomposed
into sub-modules; anything simpler goes to the ordinary loop (one module, one prompt). A
component is one entry of :data:`COMPONENT_KEYWORDS`, matched case-insensitively on word
boundaries (``counter`` matches "counter" and "counters", not "encounter"; an identifier such as
``alu_op`` is one word, so it does not match ``alu``). Each component counts once however often
it is named, and synonyms count as one (``fsm`` and "state machine" are the same component).

The paper's own case study, "RISC-V SoC with cache, bus, UART, and GPIO", names five (cpu, cache,
bus, uart, gpio) and is decomposed. "Data bus" and "address bus" are signals, not a bus
component, and "pipelined" (an adjective) is not a pipeline.
"""

from __future__ import annotations

import re

__all__ = ["COMPLEXITY_THRESHOLD", "COMPONENT_KEYWORDS", "component_keywords", "is_complex"]

#: Distinct components a spec must name to be decomposed (the paper's threshold).
COMPLEXITY_THRESHOLD = 3

#: Component name -> the words that name it (regex alternatives, plurals included).
COMPONENT_KEYWORDS: dict[str, str] = {
    "fifo": r"fifos?",
    "uart": r"uarts?",
    "alu": r"alus?|arithmetic[ -]logic units?",
    "register file": r"register[ -]files?|regfiles?",
    "decoder": r"decoders?",
    "encoder": r"encoders?",
    "fsm": r"fsms?|(?:finite[ -])?state[ -]machines?",
    "counter": r"counters?",
    "multiplier": r"multipliers?",
    "divider": r"dividers?",
    "arbiter": r"arbiters?",
    "shift register": r"shift[ -]registers?",
    "memory": r"memory|memories|rams?|roms?",
    "crc": r"crc(?:-?\d+)?",
    "multiplexer": r"multiplexers?|muxe?s?",
    "adder": r"adders?",
    "comparator": r"comparators?",
    "timer": r"timers?",
    "accumulator": r"accumulators?",
    "pwm": r"pwm",
    "spi": r"spi",
    "i2c": r"i2c",
    "cache": r"caches?",
    "barrel shifter": r"barrel[ -]shifters?",
    # the paper's SoC example ("RISC-V SoC with cache, bus, UART, and GPIO") names these
    "cpu": r"cpus?|(?:micro)?processors?|risc[ -]?v|rv(?:32|64)[a-z]*",
    "bus": r"(?<!data[ -])(?<!address[ -])(?<!addr[ -])(?:bus(?:es|ses)?|interconnects?)",
    "gpio": r"gpios?",
    "pipeline": r"pipelines?",
}

_PATTERNS = {name: re.compile(rf"(?<![A-Za-z0-9_])(?:{words})(?![A-Za-z0-9_])", re.IGNORECASE)
             for name, words in COMPONENT_KEYWORDS.items()}


def component_keywords(spec: str) -> tuple[str, ...]:
    """The components ``spec`` names, in :data:`COMPONENT_KEYWORDS` order (each once)."""
    return tuple(name for name, pattern in _PATTERNS.items() if pattern.search(spec))


def is_complex(spec: str, threshold: int = COMPLEXITY_THRESHOLD) -> bool:
    """Whether ``spec`` names at least ``threshold`` distinct components."""
    return len(component_keywords(spec)) >= threshold
