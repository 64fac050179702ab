"""The learned guidance gate: shapes, a forward pass worked by hand, learning, persistence."""

from __future__ import annotations

import math
from importlib import metadata
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from rtlforge.agents.guidance import plugin as guidance_plugin
from rtlforge.agents.guidance.gate import (
    FEATURES,
    SIZES,
    GateRecord,
    GuidanceGate,
)
from rtlforge.agents.guidance.registry import CONFIGS, DEFAULT_CONFIG, enrich
from rtlforge.core.plugins import ENTRY_POINT_GROUP, PluginHost
from rtlforge.tasks.loader import load_tasks

ROOT = Path(__file__).resolve().parents[3]
NAMES = [c.name for c in CONFIGS]


def zero_layers() -> list[tuple[np.ndarray, np.ndarray]]:
    return [(np.zeros((a, b)), np.zeros(b)) for a, b in pairwise(SIZES)]


def test_shapes_and_the_six_configurations() -> None:
    gate = GuidanceGate(seed=3)
    assert SIZES == (20, 64, 32, 6) and len(FEATURES) == 20
    assert [w.shape for w, _ in gate.layers] == [(20, 64), (64, 32), (32, 6)]
    assert [b.shape for _, b in gate.layers] == [(64,), (32,), (6,)]
    assert NAMES == ["none", "conjunctions", "families", "detectors", "detectors+knowledge",
                     "full"]
    one = gate.forward(np.full(20, 0.5))
    many = gate.forward(np.random.default_rng(0).random((5, 20)))
    assert one.shape == (6,) and many.shape == (5, 6)
    assert np.all((many > 0) & (many < 1))
    with pytest.raises(ValueError, match="gate layers"):
        GuidanceGate([(np.zeros((19, 64)), np.zeros(64)), *zero_layers()[1:]])


def test_forward_pass_by_hand() -> None:
    layers = zero_layers()
    (w1, b1), (w2, _), (w3, b3) = layers
    w1[0, 0] = 1.0  # h1[0] = relu(x0)
    w1[1, 1] = -1.0  # h1[1] = relu(-x1): clipped to 0 for x1 > 0
    b1[2] = 0.25  # h1[2] = 0.25 whatever x
    w2[0, 0], w2[1, 0], w2[2, 1] = 2.0, 5.0, 4.0  # h2[0] = 2*h1[0] + 5*h1[1]; h2[1] = 4*h1[2]
    w3[0, 1] = math.log(3)  # out[1] = sigmoid(ln3 * h2[0])
    w3[1, 2] = -math.log(3)  # out[2] = sigmoid(-ln3 * h2[1])
    b3[5] = math.log(9)  # out[5] = sigmoid(ln9) = 0.9
    gate = GuidanceGate(layers, trained=True)
    x = np.zeros(20)
    x[0], x[1] = 0.5, 1.0
    # h1 = [0.5, 0, 0.25, 0...]; h2 = [1.0, 1.0, 0...]
    # out = [s(0), s(ln3), s(-ln3), s(0), s(0), s(ln9)] = [.5, .75, .25, .5, .5, .9]
    assert gate.forward(x) == pytest.approx([0.5, 0.75, 0.25, 0.5, 0.5, 0.9])
    assert gate.pick(x).config == "full"
    b3[5] = 0.0
    gate = GuidanceGate(layers, trained=True)
    assert gate.pick(x).config == "conjunctions"
    w3[0, 1] = 0.0  # now every output is 0.5 but out[2]: the tie goes to the first, "none"
    assert GuidanceGate(layers, trained=True).pick(x).config == "none"


def test_untrained_gate_picks_the_documented_default() -> None:
    pick = GuidanceGate().pick(np.ones(20))
    assert (pick.config, pick.trained, pick.scores) == (DEFAULT_CONFIG, False, ())
    assert DEFAULT_CONFIG == "detectors"


def best_config(x: np.ndarray) -> int:
    """The synthetic world: FSM specs pass with conjunctions only, handshake specs need
    retrieval, everything else does best with all detectors."""
    if x[8] > 0.5:
        return NAMES.index("conjunctions")
    if x[9] > 0.5:
        return NAMES.index("detectors+knowledge")
    return NAMES.index("detectors")


def synthetic(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.random((n, 20))
    x[:, 4:18] = x[:, 4:18] > 0.5  # the flag features are 0/1
    return x


def test_training_learns_which_configuration_passes_for_a_feature_pattern() -> None:
    rng = np.random.default_rng(7)
    xs = synthetic(rng, 800)
    records = []
    for x in xs:
        tried = int(rng.integers(6))  # each spec was tried with one random configuration
        p_pass = 0.9 if tried == best_config(x) else 0.1
        records.append(GateRecord(features=tuple(x), config=NAMES[tried],
                                  passed=bool(rng.random() < p_pass)))
    gate = GuidanceGate(seed=0)
    losses = gate.fit(records, epochs=120)
    assert gate.trained and losses[-1] < losses[0] - 0.2
    held_out = synthetic(rng, 400)
    scores = gate.forward(held_out)
    picks = [NAMES.index(gate.pick(x).config) for x in held_out]
    accuracy = np.mean([p == best_config(x) for p, x in zip(picks, held_out, strict=True)])
    assert accuracy >= 0.9
    margin = np.mean([s[best_config(x)] - np.delete(s, best_config(x)).max()
                      for s, x in zip(scores, held_out, strict=True)])
    assert margin > 0.2


def test_save_and_load_round_trip(tmp_path) -> None:
    gate = GuidanceGate(seed=5, trained=True)
    path = tmp_path / "gate.json"
    gate.save(path)
    loaded = GuidanceGate.load(path)
    x = np.random.default_rng(1).random((3, 20))
    assert loaded.trained and np.array_equal(loaded.forward(x), gate.forward(x))
    text = path.read_text().replace('"full"', '"everything"')
    path.write_text(text)
    with pytest.raises(ValueError, match="saved for configurations"):
        GuidanceGate.load(path)
    path.write_text("{}")
    with pytest.raises(ValueError, match="not a guidance gate file"):
        GuidanceGate.load(path)


def test_records_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown guidance configuration"):
        GateRecord(features=(0.0,) * 20, config="lots", passed=True)
    with pytest.raises(ValueError):
        GateRecord(features=(0.0,) * 19, config="none", passed=True)
    with pytest.raises(ValueError, match="no gate records"):
        GuidanceGate().fit([])


def test_features_of_bundled_specs_match_their_documented_meaning() -> None:
    tasks = {t.id: t for t in load_tasks(ROOT / "examples" / "tasks")}
    gate = GuidanceGate()
    index = {name: i for i, (name, _) in enumerate(FEATURES)}
    fifo = gate.features(tasks["sync_fifo8"])
    adder = gate.features(tasks["add8_carry"])
    for x in (fifo, adder):
        assert x.shape == (20,) and np.all((x >= 0) & (x <= 1))
    flags = ("clocked", "reset", "reset_sync", "reset_active_low", "memory", "code")
    assert [fifo[index[f]] for f in flags] == [1.0] * len(flags)
    assert fifo[index["ports"]] == 9 / 16 and fifo[index["max_width"]] == 8 / 64
    assert fifo[index["conjunctions"]] == 0.25 and fifo[index["families"]] == 0.25
    assert fifo[index["fsm"]] == 0.0 and fifo[index["handshake"]] == 0.0
    assert adder[index["arithmetic"]] == 1.0
    assert [adder[index[f]] for f in ("clocked", "reset", "memory", "signed")] == [0.0] * 4
    assert gate.features(tasks["traffic_light"])[index["fsm"]] == 1.0
    assert gate.features(tasks["traffic_light"])[index["table_rows"]] == 5 / 20


def test_enrich_follows_a_trained_gates_pick() -> None:
    layers = zero_layers()
    layers[2][1][0] = 5.0  # "none" always wins
    gate = GuidanceGate(layers, trained=True)
    installed = {ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}
    host = PluginHost(plugins=[] if "guidance" in installed else [("guidance", guidance_plugin)])
    task = next(t for t in load_tasks(ROOT / "examples" / "tasks") if t.id == "sync_fifo8")
    assert gate.choose(task).config == "none"
    assert enrich(task, host=host, gate=gate).spec == task.spec
    assert enrich(task, host=host, gate=GuidanceGate()).applied == (
        "reset-sync-active-low", "fifo")
