"""The learned gate: 20 spec features -> MLP 64 -> 32 -> 6 sigmoids, one per guidance config.

Output ``k`` estimates the probability that a design generated with configuration
``CONFIGS[k]`` (:data:`~.registry.CONFIGS`: none, conjunctions, families, detectors,
detectors+knowledge, full) passes. The gate picks the configuration with the highest output;
an exact tie goes to the earlier one, and the configurations are listed cheapest first, so a tie
picks the smaller prompt. An untrained gate always picks :data:`~.registry.DEFAULT_CONFIG`
(the gate is optional).

numpy only, so it runs without the ``train`` extra: ReLU hidden layers, sigmoid outputs, and
training by Adam on binary cross-entropy. A training record says which configuration was tried
on a spec and whether the design passed, so only that configuration's output gets a loss term
(the others were not observed). Weights are saved as JSON.

The 20 features (all in [0, 1]; see :data:`FEATURES`) come from the spec with any guidance block
removed, the task's ports, and the built-in detectors (the rules in ``data/``, never the host's
plugins, so the features of a spec do not depend on what else is installed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from rtlforge.agents.guidance.base import GuidanceDetector, builtin_detectors, strip_guidance
from rtlforge.agents.guidance.registry import CONFIGS, DEFAULT_CONFIG
from rtlforge.core.models import Task
from rtlforge.core.untrusted import load_json

__all__ = ["FEATURES", "SIZES", "GatePick", "GateRecord", "GuidanceGate", "spec_features"]

#: Layer widths: features, two hidden layers, one output per configuration.
SIZES: tuple[int, ...] = (20, 64, 32, 6)
_FORMAT = "rtlforge.guidance-gate"

#: The features, in input order: (name, what it measures). Counts are divided by the number
#: given and capped at 1; flags are 0 or 1.
FEATURES: tuple[tuple[str, str], ...] = (
    ("spec_length", "characters of the spec / 4000"),
    ("spec_lines", "non-blank lines of the spec / 80"),
    ("ports", "ports of the task / 16"),
    ("max_width", "width of the widest port / 64"),
    ("clocked", "a port named clk/clock, or the spec mentions a clock"),
    ("reset", "the spec mentions a reset"),
    ("reset_sync", "a reset-sync-* detector fires"),
    ("reset_active_low", "a reset-*-active-low detector fires"),
    ("fsm", "the fsm or an fsm-* detector fires"),
    ("handshake", "the valid-ready or axi-stream detector fires"),
    ("memory", "the spec mentions a FIFO, RAM, ROM, memory or register file"),
    ("arithmetic", "the spec mentions adding, subtracting, multiplying, dividing or an ALU"),
    ("signed", "the signed-arithmetic detector fires"),
    ("serial_protocol", "the uart, spi or i2c detector fires"),
    ("waveform", "waveform / timing-diagram cues ('determine what the circuit does')"),
    ("table_rows", "table rows (lines starting with '|' or a time such as '10ns') / 20"),
    ("code", "the spec holds a module header or a code block"),
    ("numbers", "numeric literals in the spec / 50"),
    ("conjunctions", "conjunction detectors firing / 4"),
    ("families", "family detectors firing / 4"),
)
assert len(FEATURES) == SIZES[0]

_CLOCK = re.compile(r"\bclock\b|\bclk\b|\bposedge\b|\brising edge", re.I)
_RESET = re.compile(r"\breset|\brst", re.I)
_MEMORY = re.compile(r"\bfifo\b|\bram\b|\brom\b|\bmemory\b|\bregister file\b", re.I)
_ARITH = re.compile(r"\badd(er|ition|s)?\b|\bsum\b|\bsubtract|\bmultipl|\bdivi|\balu\b", re.I)
_WAVEFORM = re.compile(r"\bwaveforms?\b|\btiming diagram|what the circuit does|"
                       r"simulation (trace|waveform)", re.I)
_TABLE_ROW = re.compile(r"^\s*(\|.*\||#?\s*\d+\s*ns\b)", re.M)
_CODE = re.compile(r"```|\bmodule\s+\w+\s*[(#;]")
_NUMBER = re.compile(r"\b\d+('[bdhBDH][0-9a-fA-FxzXZ_]+)?\b")


def _cap(value: float, scale: float) -> float:
    return min(value / scale, 1.0)


def spec_features(task: Task, detectors: Sequence[GuidanceDetector]) -> np.ndarray:
    """The 20 features of :data:`FEATURES` for ``task`` (``detectors``: the built-ins)."""
    spec = strip_guidance(task.spec)
    fired = {g.detector: g.kind for d in detectors if (g := d.detect(task, spec)) is not None}
    names = set(fired)
    lines = [line for line in spec.splitlines() if line.strip()]
    clocked = any(p.name.lower() in ("clk", "clock") for p in task.ports) or bool(
        _CLOCK.search(spec))
    values = [
        _cap(len(spec), 4000),
        _cap(len(lines), 80),
        _cap(len(task.ports), 16),
        _cap(max((p.width for p in task.ports), default=0), 64),
        float(clocked),
        float(bool(_RESET.search(spec))),
        float(bool(names & {"reset-sync-active-low", "reset-sync-active-high"})),
        float(bool(names & {"reset-sync-active-low", "reset-async-active-low"})),
        float(any(n == "fsm" or n.startswith("fsm-") for n in names)),
        float(bool(names & {"valid-ready", "axi-stream"})),
        float(bool(_MEMORY.search(spec))),
        float(bool(_ARITH.search(spec))),
        float("signed-arithmetic" in names),
        float(bool(names & {"uart", "spi", "i2c"})),
        float(bool(_WAVEFORM.search(spec))),
        _cap(len(_TABLE_ROW.findall(spec)), 20),
        float(bool(_CODE.search(spec))),
        _cap(len(_NUMBER.findall(spec)), 50),
        _cap(sum(kind == "conjunction" for kind in fired.values()), 4),
        _cap(sum(kind == "family" for kind in fired.values()), 4),
    ]
    return np.asarray(values, dtype=np.float64)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


_CONFIG_NAMES = tuple(c.name for c in CONFIGS)


class GateRecord(_Frozen):
    """One observation to train on: a spec's features, the configuration tried, the outcome."""

    features: tuple[float, ...] = Field(min_length=SIZES[0], max_length=SIZES[0])
    config: str
    passed: bool

    @field_validator("config")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in _CONFIG_NAMES:
            raise ValueError(f"unknown guidance configuration {value!r}; one of "
                             f"{list(_CONFIG_NAMES)}")
        return value


class GatePick(_Frozen):
    config: str
    scores: tuple[float, ...] = ()  # one per configuration; empty when untrained
    trained: bool = False


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # overflow-free logistic


class GuidanceGate:
    """The 20 -> 64 -> 32 -> 6 gate. ``layers`` are (weight ``(in, out)``, bias ``(out,)``)."""

    def __init__(self, layers: Sequence[tuple[np.ndarray, np.ndarray]] | None = None, *,
                 trained: bool = False, seed: int = 0) -> None:
        if layers is None:
            rng = np.random.default_rng(seed)
            layers = [(rng.normal(0.0, np.sqrt(2.0 / n_in), (n_in, n_out)), np.zeros(n_out))
                      for n_in, n_out in pairwise(SIZES)]
        self.layers = [(np.array(w, dtype=np.float64), np.array(b, dtype=np.float64))
                       for w, b in layers]
        shapes = [w.shape for w, _ in self.layers]
        expected = list(pairwise(SIZES))
        if shapes != expected or any(b.shape != (w.shape[1],) for w, b in self.layers):
            raise ValueError(f"gate layers must be {expected} with matching biases, "
                             f"not {shapes}")
        self.trained = trained
        self._detectors: list[GuidanceDetector] | None = None

    # ------------------------------------------------------------------ inference

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Sigmoid outputs for features ``(20,)`` -> ``(6,)`` or ``(n, 20)`` -> ``(n, 6)``."""
        return self._forward(np.asarray(x, dtype=np.float64))[-1]

    def _forward(self, x: np.ndarray) -> list[np.ndarray]:
        activations = [x]
        for i, (w, b) in enumerate(self.layers):
            z = activations[-1] @ w + b
            activations.append(_sigmoid(z) if i == len(self.layers) - 1 else np.maximum(z, 0))
        return activations

    def features(self, task: Task) -> np.ndarray:
        if self._detectors is None:
            self._detectors = [cls() for cls in builtin_detectors()]
        return spec_features(task, self._detectors)

    def pick(self, features: np.ndarray) -> GatePick:
        """The configuration for a feature vector (the default one while untrained)."""
        if not self.trained:
            return GatePick(config=DEFAULT_CONFIG)
        scores = self.forward(features)
        best = int(np.argmax(scores))  # first maximum: the cheaper configuration on a tie
        return GatePick(config=_CONFIG_NAMES[best], scores=tuple(float(s) for s in scores),
                        trained=True)

    def choose(self, task: Task) -> GatePick:
        return self.pick(self.features(task))

    # ------------------------------------------------------------------ training

    def fit(self, records: Sequence[GateRecord], *, epochs: int = 400, lr: float = 0.01,
            weight_decay: float = 0.01) -> list[float]:
        """Adam on the masked binary cross-entropy; returns that loss for each epoch (full
        batch, penalty not included). ``weight_decay`` is an L2 penalty: pass/fail outcomes are
        noisy, and without it the gate memorises them instead of learning the pattern.

        Deterministic: no sampling, so the same records and weights give the same gate.
        """
        if not records:
            raise ValueError("no gate records to train on")
        x = np.asarray([r.features for r in records], dtype=np.float64)
        chosen = np.asarray([_CONFIG_NAMES.index(r.config) for r in records])
        y = np.asarray([float(r.passed) for r in records])
        rows = np.arange(len(records))
        n = len(records)
        params = [p for layer in self.layers for p in layer]
        m = [np.zeros_like(p) for p in params]
        v = [np.zeros_like(p) for p in params]
        beta1, beta2, eps = 0.9, 0.999, 1e-8
        losses: list[float] = []
        for step in range(1, epochs + 1):
            acts = self._forward(x)
            p = np.clip(acts[-1][rows, chosen], 1e-7, 1 - 1e-7)
            losses.append(float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))))
            delta = np.zeros_like(acts[-1])
            delta[rows, chosen] = (acts[-1][rows, chosen] - y) / n  # d(BCE)/d(logit)
            grads: list[np.ndarray] = []
            for i in range(len(self.layers) - 1, -1, -1):
                w, _ = self.layers[i]
                grads[:0] = [acts[i].T @ delta + weight_decay * w, delta.sum(axis=0)]
                if i:
                    delta = (delta @ w.T) * (acts[i] > 0)
            for j, (param, grad) in enumerate(zip(params, grads, strict=True)):
                m[j] = beta1 * m[j] + (1 - beta1) * grad
                v[j] = beta2 * v[j] + (1 - beta2) * grad * grad
                m_hat = m[j] / (1 - beta1 ** step)
                v_hat = v[j] / (1 - beta2 ** step)
                param -= lr * m_hat / (np.sqrt(v_hat) + eps)  # in place: layers see it
        self.trained = True
        return losses

    # ------------------------------------------------------------------ persistence

    def save(self, path: str | Path) -> None:
        data = {"format": _FORMAT, "version": 1, "sizes": list(SIZES),
                "configs": list(_CONFIG_NAMES), "features": [name for name, _ in FEATURES],
                "trained": self.trained,
                "layers": [{"weight": w.tolist(), "bias": b.tolist()} for w, b in self.layers]}
        Path(path).write_text(json.dumps(data), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> GuidanceGate:
        try:
            data = load_json(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            raise ValueError(f"{path}: not a guidance gate file: {exc}") from exc
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ValueError(f"{path}: not a guidance gate file")
        if data.get("configs") != list(_CONFIG_NAMES) or data.get("sizes") != list(SIZES):
            raise ValueError(f"{path}: the gate was saved for configurations "
                             f"{data.get('configs')} and sizes {data.get('sizes')}; this "
                             f"version has {list(_CONFIG_NAMES)} and {list(SIZES)}")
        try:
            layers = [(np.asarray(layer["weight"], dtype=np.float64),
                       np.asarray(layer["bias"], dtype=np.float64)) for layer in data["layers"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: the gate's layers are not weight/bias number arrays: "
                             f"{type(exc).__name__}: {exc}") from exc
        if not all(np.isfinite(w).all() and np.isfinite(b).all() for w, b in layers):
            # NaN scores would silently pick the first configuration for every spec
            raise ValueError(f"{path}: the gate's weights hold NaN or infinite values")
        try:
            return cls(layers, trained=bool(data.get("trained", True)))
        except ValueError as exc:  # the shapes
            raise ValueError(f"{path}: {exc}") from exc
