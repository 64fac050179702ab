"""The spec-guidance registry: which detectors fire on which specs, order, duplicates, the seam.

The expected detectors are read off the spec texts by hand (bundled tasks under examples/tasks
and VerilogEval-style specs written here), not taken from running the code.
"""

from __future__ import annotations

from datetime import date
from importlib import metadata
from pathlib import Path

import pytest

from rtlforge.agents.guidance import plugin as guidance_plugin
from rtlforge.agents.guidance.base import (
    GUIDANCE_MARKER,
    Guidance,
    GuidanceDetector,
    builtin_rules,
    load_rules,
    strip_guidance,
)
from rtlforge.agents.guidance.registry import (
    CONFIGS,
    GuidanceConfig,
    enrich,
    guidance_seam,
)
from rtlforge.agents.knowledge.base import (
    KnowledgeEntry,
    Origin,
    Provenance,
    builtin_entries,
)
from rtlforge.agents.knowledge.retrieval import KeywordRetriever
from rtlforge.core.errors import ConfigError, PluginError
from rtlforge.core.hookspecs import hookimpl
from rtlforge.core.models import Port, Task
from rtlforge.core.plugins import ENTRY_POINT_GROUP, PluginHost
from rtlforge.tasks.loader import load_tasks

ROOT = Path(__file__).resolve().parents[3]


def make_host(*extra: tuple[str, object]) -> PluginHost:
    """The default host plus the guidance plugin (passed here while its entry point is new;
    plugins implementing its hook must be loaded with it, when the host is created)."""
    installed = {ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}
    own = [] if "guidance" in installed else [("guidance", guidance_plugin)]
    host = PluginHost(plugins=[*own, *extra])
    ours = {"guidance", *(name for name, _ in extra)}
    assert not {name: why for name, why in host.failures.items() if name in ours}
    return host


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return make_host()


@pytest.fixture(scope="module")
def bundled() -> dict[str, Task]:
    return {t.id: t for t in load_tasks(ROOT / "examples" / "tasks")}


def spec_task(spec: str, ports: tuple[str, ...] = ()) -> Task:
    return Task(id="t", spec=spec, top="top_module",
                ports=tuple(Port(name=p, direction="input") for p in ports))


# Read off each spec.md: its reset's style and polarity, and the families it names.
BUNDLED = {
    "add32": (),
    "add8_carry": (),
    "cmp8s": ("signed-arithmetic",),  # "comparator for two's-complement signed" numbers
    "counter8_en": ("reset-async-active-low",),
    "mul8u": (),  # unsigned: no signed advice
    "mux4": (),
    "popcount16": (),
    "prio_enc8": (),  # a priority encoder is not an arbiter
    "ram16x8": (),  # "synchronous RAM" with no reset: not a synchronous reset
    "regfile8x16": ("reset-sync-active-high",),
    "rv_accum4": ("reset-sync-active-low", "valid-ready"),
    "seq_det_1011": ("reset-sync-active-low", "fsm"),
    "shift_reg8": ("reset-sync-active-high",),  # a shift register is not an LFSR
    "skid_buffer": ("reset-sync-active-low", "valid-ready"),
    "sync_fifo8": ("reset-sync-active-low", "fifo"),  # single clock: not a dual-clock FIFO
    "traffic_light": ("reset-sync-active-high", "fsm-moore", "fsm"),
}


def test_bundled_tasks_get_exactly_the_detectors_their_specs_call_for(host, bundled) -> None:
    assert set(bundled) == set(BUNDLED)
    applied = {task_id: enrich(task, host=host).applied for task_id, task in bundled.items()}
    assert applied == BUNDLED


VERILOGEVAL_STYLE = [
    # plain combinational problems: nothing to add
    ("Build a circuit that reverses the bit order of an 8-bit input vector.", (), ()),
    ("Create a module that implements an XNOR gate.", (), ()),
    ("Build a 100-bit binary ripple-carry adder by instantiating 100 full adders. The adder "
     "adds two 100-bit numbers and a carry-in to produce a 100-bit sum and carry out.", (), ()),
    ("Given the waveform below, determine what the circuit does and implement it.\n"
     "time a b q\n0ns 0 0 0\n5ns 0 1 1\n", (), ()),
    # resets
    ("Create 8 D flip-flops with active high synchronous reset. All DFFs should be "
     "triggered by the positive edge of clk.", (), ("reset-sync-active-high",)),
    ("Build a 4-bit shift register (right shift), with asynchronous reset, synchronous load, "
     "and enable.\nmodule top_module(input clk, input areset, input load, input ena, "
     "input [3:0] data, output reg [3:0] q);", (), ("reset-async-active-high",)),
    ("Implement a counter with a synchronous reset.", ("clk", "resetn"),
     ("reset-sync-active-low",)),
    # state machines
    ("The following is the state transition table for a Moore state machine with one input, "
     "one output, and four states. Use the one-hot state encoding A=4'b0001, B=4'b0010, "
     "C=4'b0100, D=4'b1000. Derive the next-state logic equations by inspection.", (),
     ("fsm-one-hot", "fsm-moore", "fsm")),
    ("Implement a Mealy-type finite state machine that recognises the sequence 101 on x.",
     (), ("fsm-mealy", "fsm")),
    # families, including look-alikes that must not fire
    ("Implement a clock divider that divides the input clock by 4.", (), ("clock-divider",)),
    ("Compute the quotient and remainder of two 8-bit unsigned numbers.", (), ("divider",)),
    ("Design a round-robin arbiter for four requesters.", (), ("arbiter",)),
    ("Design a UART transmitter running at 115200 baud.", (), ("uart",)),
    ("Design an SPI master; it drives sclk and mosi.", (), ("spi",)),
    ("Build an I2C controller: SCL is the clock and SDA the data line.", (), ("i2c",)),
    ("Build an AXI-Stream register slice with tvalid, tready and tdata.", (),
     ("axi-stream",)),
    ("An AXI-Stream slave with s_tvalid/s_tready handshake ports.", ("s_tvalid", "s_tready"),
     ("axi-stream", "valid-ready")),
    ("Implement a CRC-8 over a serial input bit.", (), ("crc",)),
    ("Implement a 5-bit Galois LFSR with taps at bit positions 5 and 3.", (), ("lfsr",)),
    ("Implement a 4-tap FIR filter with constant coefficients.", (), ("fir",)),
    ("Design a simple 8-bit ALU supporting add, and, or and xor.", (), ("alu",)),
    ("Debounce a push-button input.", (), ("debouncer",)),
    ("Build an adder that adds two's complement numbers and reports signed overflow.", (),
     ("signed-arithmetic",)),
    ("Build a FIFO with an asynchronous active-low reset rst_n.", (),
     ("reset-async-active-low", "fifo")),
    ("Build an asynchronous FIFO with write clock wclk and read clock rclk.", (),
     ("fifo", "async-fifo")),
]


@pytest.mark.parametrize(("spec", "ports", "expected"), VERILOGEVAL_STYLE)
def test_written_specs(host, spec: str, ports: tuple[str, ...], expected: tuple[str, ...]
                       ) -> None:
    assert enrich(spec_task(spec, ports), host=host).applied == expected


def test_enriching_an_enriched_spec_adds_nothing(host, bundled) -> None:
    for config in CONFIGS:
        for task in bundled.values():
            once = enrich(task, host=host, config=config)
            twice = enrich(task.model_copy(update={"spec": once.spec}), host=host,
                           config=config)
            assert twice.spec == once.spec, (config.name, task.id)
            assert (twice.applied, twice.knowledge) == (once.applied, once.knowledge)


def test_the_block_keeps_the_spec_and_lists_advice_in_priority_order(host, bundled) -> None:
    task = bundled["traffic_light"]
    result = enrich(task, host=host)
    assert result.spec.startswith(task.spec.rstrip())
    block = result.spec[len(task.spec.rstrip()):].strip().splitlines()
    assert block[0] == GUIDANCE_MARKER
    titles = [line.split(":", 1)[0] for line in block[1:]]
    assert titles == ["- Synchronous active-high reset",
                      "- Moore state machine", "- State machine"]
    assert strip_guidance(result.spec) == task.spec.rstrip()
    assert result.evidence["fsm-moore"] == ("state machine", "Moore")


def test_a_spec_nothing_fires_on_comes_back_unchanged(host, bundled) -> None:
    task = bundled["mux4"]
    assert enrich(task, host=host).spec == task.spec


def test_configuration_selects_kinds_names_exclusions_and_a_limit(host, bundled) -> None:
    task = bundled["traffic_light"]
    assert enrich(task, host=host, config="conjunctions").applied == (
        "reset-sync-active-high", "fsm-moore")
    assert enrich(task, host=host, config="families").applied == ("fsm",)
    assert enrich(task, host=host, config="none").spec == task.spec
    only = GuidanceConfig(detectors=("fsm", "fsm", "fsm-moore"))  # repeated name: once
    assert enrich(task, host=host, config=only).applied == ("fsm-moore", "fsm")
    assert enrich(task, host=host, config=GuidanceConfig(exclude=("fsm",))).applied == (
        "reset-sync-active-high", "fsm-moore")
    assert enrich(task, host=host, config=GuidanceConfig(max_items=1)).applied == (
        "reset-sync-active-high",)
    with pytest.raises(PluginError, match="unknown guidance detector"):
        enrich(task, host=host, config=GuidanceConfig(detectors=("no-such",)))
    with pytest.raises(ConfigError, match="no guidance configuration"):
        enrich(task, host=host, config="everything")


def test_a_superseded_detector_gives_way_to_the_more_specific_one(host) -> None:
    task = spec_task("A clock divider: divides the clock; quotient of nothing.")
    assert enrich(task, host=host).applied == ("clock-divider",)


class SameAdviceAsFifo(GuidanceDetector):
    """A third-party detector repeating the built-in FIFO advice, first in priority."""

    name = "my-fifo"
    priority = 0

    def detect(self, task: Task, spec: str) -> Guidance | None:
        rule = next(r for r in builtin_rules() if r.id == "fifo")
        if "fifo" in spec.lower():
            return Guidance(detector=self.name, kind="family", title="My FIFO",
                            advice=rule.guidance.strip())
        return None


class Shouty(GuidanceDetector):
    name = "shouty"
    kind = "conjunction"
    priority = 50

    def detect(self, task: Task, spec: str) -> Guidance | None:
        return Guidance(detector=self.name, kind="conjunction", title="Shouty",
                        advice="Spec is in capitals.") if spec.isupper() else None


class ThirdParty:
    @hookimpl
    def register_guidance_detectors(self, register) -> None:
        register(SameAdviceAsFifo)
        register(Shouty)


def test_third_party_detectors_join_in_priority_order_and_repeat_advice_once() -> None:
    host = make_host(("third", ThirdParty()))
    result = enrich(spec_task("BUILD A FIFO."), host=host)
    # my-fifo (priority 0) first; the built-in fifo's identical advice is not repeated
    assert result.applied == ("my-fifo", "shouty")
    assert result.spec.count("Judge full and empty") == 1


def test_retrieval_configurations_append_guarded_knowledge(host, bundled) -> None:
    task = bundled["sync_fifo8"]
    leak = KnowledgeEntry(
        id="ref:sync_fifo8.v:sync_fifo8", kind="reference",
        title="fifo push pop full empty count din dout rst_n clk",
        description="synchronous fifo push pop full empty count din dout rst_n clk reset",
        keywords=("fifo", "push", "pop", "full", "empty", "count", "din", "dout", "rst_n"),
        code_template="module sync_fifo8(); // the answer", focus=("full",),
        provenance=Provenance(source="test", date=date(2026, 12, 2)),
        origin=Origin(path="/nowhere/sync_fifo8.v", digest="0" * 64, task_id="sync_fifo8"))
    retriever = KeywordRetriever((*builtin_entries(), leak))
    assert retriever.retrieve(task.spec, k=1)[0].entry.id == leak.id  # it would rank first
    result = enrich(task, host=host, config="full", retriever=retriever)
    assert len(result.knowledge) == 3 and leak.id not in result.knowledge
    assert "sync-fifo" in result.knowledge
    assert "the answer" not in result.spec
    assert "assign empty = (wptr == rptr);" in result.spec  # templates are on in "full"
    plain = enrich(task, host=host, config="detectors+knowledge", retriever=retriever)
    assert plain.knowledge == result.knowledge and "assign empty" not in plain.spec


def test_the_seam_returns_the_enriched_spec_and_the_applied_names(host, bundled) -> None:
    task = bundled["rv_accum4"]
    seam = guidance_seam(host)
    spec, names = seam(task)
    assert (spec, tuple(names)) == (enrich(task, host=host).spec,
                                    ("reset-sync-active-low", "valid-ready"))
    spec, names = guidance_seam(host, "detectors+knowledge")(task)
    assert list(names)[:2] == ["reset-sync-active-low", "valid-ready"]
    assert len(names) == 5 and all(n.startswith("knowledge:") for n in list(names)[2:])


def test_a_host_without_the_guidance_plugin_says_so(bundled) -> None:
    bare = PluginHost(load_entrypoints=False)
    with pytest.raises(PluginError, match="'guidance' plugin"):
        enrich(bundled["sync_fifo8"], host=bare)


def test_builtin_rules_are_well_formed() -> None:
    rules = builtin_rules()
    ids = [r.id for r in rules]
    assert len(ids) == len(set(ids)) >= 20
    for rule in rules:
        assert rule.provenance.source == "written for rtlforge"
        assert set(rule.supersedes) <= set(ids)
        assert len(rule.guidance) < 500  # short advice, not an essay
    kinds = {r.kind for r in rules}
    assert kinds == {"conjunction", "family"}


def test_bad_rules_are_refused() -> None:
    base = ('[[detector]]\nid = "x"\nkind = "%s"\npriority = 1\ntitle = "X"\n'
            'all = [{ spec = [%s] }]\nguidance = "g"\n'
            'provenance = { source = "s", date = 2026-12-02 }\n')
    assert load_rules(base % ("family", "'x'"))[0].id == "x"
    with pytest.raises(ValueError, match="two or more clauses"):
        load_rules(base % ("conjunction", "'x'"))
    with pytest.raises(ValueError, match="bad regex"):
        load_rules(base % ("family", "'(unclosed'"))
    with pytest.raises(ValueError, match="duplicate detector id"):
        load_rules(base % ("family", "'x'") * 2)
