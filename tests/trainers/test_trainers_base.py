"""Shared trainer machinery: configs, metrics, checkpoints, reward scoring, light imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rtlforge.core.interfaces import Reward
from rtlforge.core.plugins import PluginHost
from rtlforge.trainers import metrics, plugin
from rtlforge.trainers.checkpoints import (
    checkpoint_path,
    latest_checkpoint,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)
from rtlforge.trainers.config import (
    ModelConfig,
    config_classes,
    load_config,
    parse_config,
    resolve_out_dir,
)
from rtlforge.trainers.errors import CheckpointError, QLoRAUnavailableError, TrainerConfigError
from rtlforge.trainers.metrics import MetricsWriter, read_metrics
from rtlforge.trainers.models import build_model_and_tokenizer
from rtlforge.trainers.rng import seed_everything
from rtlforge.trainers.scoring import score_completions

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

MINIMAL = """
trainer: sft
model: {build_tiny: {}}
steps: 3
data: {kind: corpus, paths: [x]}
"""


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost(load_entrypoints=False, plugins=[("trainers", plugin)])


def _cfg(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


# ---------------------------------------------------------------------------- config


def test_minimal_config_parses_with_defaults(tmp_path: Path, host: PluginHost) -> None:
    cfg = load_config(_cfg(tmp_path, MINIMAL), host=host)
    assert type(cfg).__name__ == "SFTConfig"
    assert cfg.seed == 0 and cfg.steps == 3 and cfg.model.threads == 1
    assert cfg.model.build_tiny is not None and cfg.model.build_tiny.hidden == 128


@pytest.mark.parametrize(("text", "expected"), [
    (MINIMAL + "stepz: 4\n", "stepz: unknown field"),
    (MINIMAL.replace("build_tiny: {}", "build_tiny: {hiden: 3}"),
     "model.build_tiny.hiden: unknown field"),
    (MINIMAL.replace("steps: 3", "steps: 0"), "steps: Input should be greater"),
    (MINIMAL.replace("steps: 3\n", ""), "steps: required field is missing"),
    (MINIMAL.replace("{build_tiny: {}}", "{build_tiny: {}, path: m}"), "exactly one of"),
    (MINIMAL.replace("trainer: sft", "trainer: nope"), "trainer 'nope' is unknown"),
    (MINIMAL.replace("trainer: sft\n", ""), "'trainer' is required"),
    ("- a\n- b\n", "must be a mapping"),
    ("trainer: [sft\n", "not valid YAML"),
    (MINIMAL.replace("kind: corpus", "kind: books"), "data"),
])
def test_config_errors_name_the_field(tmp_path: Path, host: PluginHost, text: str,
                                      expected: str) -> None:
    with pytest.raises(TrainerConfigError, match=expected):
        load_config(_cfg(tmp_path, text), host=host)


def test_missing_config_file_is_a_config_error(tmp_path: Path, host: PluginHost) -> None:
    with pytest.raises(TrainerConfigError, match="cannot read"):
        load_config(tmp_path / "absent.yaml", host=host)


def test_config_classes_come_from_the_host() -> None:
    empty = PluginHost(load_entrypoints=False)
    assert config_classes(empty) == {}
    with pytest.raises(TrainerConfigError, match="none registered"):
        parse_config({"trainer": "sft"}, host=empty)


def test_out_dir_resolution(tmp_path: Path, host: PluginHost) -> None:
    cfg = load_config(_cfg(tmp_path, MINIMAL), host=host)
    with pytest.raises(TrainerConfigError, match="--out"):
        resolve_out_dir(cfg)
    assert resolve_out_dir(cfg, tmp_path) == tmp_path


# ---------------------------------------------------------------------------- metrics


def test_metrics_writer_is_durable_and_tolerates_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "m" / "metrics.jsonl"
    seen: list[Any] = []
    with MetricsWriter(path, callback=seen.append) as w:
        w.write({"step": 1, "loss": torch.tensor(2.5), "nan": float("nan")})
        # visible to another reader before close: flushed per line
        assert json.loads(path.read_text().splitlines()[0]) == {"step": 1, "loss": 2.5,
                                                                 "nan": None}
        w.write({"step": 2, "loss": 2.0})
    assert [r["step"] for r in seen] == [1, 2]
    with path.open("a") as fh:
        fh.write('{"step": 3, "lo')  # a crash mid-line
    assert [r["step"] for r in read_metrics(path)] == [1, 2]
    # resuming from step 1 drops what was logged after it (the torn line too)
    with MetricsWriter(path, truncate_after=1) as w:
        w.write({"step": 2, "loss": 1.9})
    assert [(r["step"], r["loss"]) for r in read_metrics(path)] == [(1, 2.5), (2, 1.9)]


def test_metrics_writer_fsyncs_every_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(metrics.os, "fsync", lambda fd: (calls.append(fd), real(fd)))
    with MetricsWriter(tmp_path / "m.jsonl") as w:
        for step in range(3):
            w.write({"step": step})
    assert len(calls) == 3


# ---------------------------------------------------------------------------- checkpoints


def _opt() -> tuple[Any, Any, Any]:
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + s))
    model(torch.ones(2, 3)).sum().backward()
    opt.step()
    sched.step()
    return model, opt, sched


def test_checkpoint_roundtrip_restores_rng_optimizer_scheduler(tmp_path: Path) -> None:
    import random

    import numpy as np

    _model, opt, sched = _opt()
    seed_everything(7)
    ckpt = save_checkpoint(tmp_path / "ck", step=5, state={"tokens": 10}, optimizer=opt,
                           scheduler=sched, save_model=lambda d: (d / "w.txt").write_text("w"))
    expected = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    random.random(), np.random.rand(), torch.rand(1)  # move every generator on

    _m2, opt2, sched2 = _opt()
    opt2.param_groups[0]["lr"] = 9.0
    state = load_checkpoint(ckpt, optimizer=opt2, scheduler=sched2)
    assert (state.step, state.state) == (5, {"tokens": 10})
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == expected
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    assert sched2.state_dict()["last_epoch"] == sched.state_dict()["last_epoch"]
    assert (ckpt / "w.txt").read_text() == "w"


def test_kill_during_save_keeps_the_last_good_checkpoint(tmp_path: Path) -> None:
    target = tmp_path / "checkpoint-2"
    save_checkpoint(target, step=2, state={"v": "old"})

    def dies(staging: Path) -> None:
        (staging / "half.bin").write_bytes(b"x")
        raise KeyboardInterrupt  # the process is interrupted mid-save

    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(target, step=3, state={"v": "new"}, save_model=dies)
    assert load_checkpoint(target).state == {"v": "old"}
    assert not (target / "half.bin").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint-2"]  # staging cleaned up


def test_interrupted_replace_falls_back_to_the_old_copy(tmp_path: Path) -> None:
    target = tmp_path / "ck"
    save_checkpoint(target, step=1, state={"v": 1})
    os.replace(target, tmp_path / ".ck.old-1-1")  # killed between the two renames
    assert load_checkpoint(target).state == {"v": 1}


def test_incomplete_checkpoint_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ck").mkdir()
    with pytest.raises(CheckpointError, match="not a complete"):
        load_checkpoint(tmp_path / "ck")


def test_latest_and_prune(tmp_path: Path) -> None:
    for step in (2, 10, 4):
        save_checkpoint(checkpoint_path(tmp_path, step), step=step)
    (tmp_path / "checkpoint-99").mkdir()  # incomplete: ignored
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoint-10"
    removed = prune_checkpoints(tmp_path, keep=2)
    assert [p.name for p in removed] == ["checkpoint-2"]
    assert latest_checkpoint(tmp_path / "nothing") is None


def test_qlora_without_cuda_is_a_typed_error(tmp_path: Path) -> None:
    if torch.cuda.is_available():
        pytest.skip("CUDA present")
    cfg = ModelConfig(build_tiny={}, lora={"qlora": True})
    with pytest.raises(QLoRAUnavailableError, match="CUDA"):
        build_model_and_tokenizer(cfg, tmp_path)


# ---------------------------------------------------------------------------- scoring


class _HangsOnOne(Reward):
    name: ClassVar[str] = "hangs"

    def __init__(self) -> None:
        self.release = threading.Event()

    def score(self, prompts: Sequence[str], completions: Sequence[str],
              **columns: Sequence[Any]) -> list[float | None]:
        out: list[float | None] = []
        for c, w in zip(completions, columns["weight"], strict=True):
            if c == "hang":
                self.release.wait(30)
            if c == "boom":
                raise RuntimeError("simulator crashed")
            out.append(None if c == "abstain" else float(len(c)) * w)
        return out


def test_score_completions_survives_a_hung_candidate() -> None:
    reward = _HangsOnOne()
    comps = ["ab", "hang", "abc", "boom", "abstain", "a"]
    start = time.monotonic()
    try:
        scores = score_completions(reward, ["p"] * 6, comps, {"weight": [1, 1, 2, 1, 1, 1]},
                                   timeout_s=1.0)
    finally:
        reward.release.set()
    assert time.monotonic() - start < 5
    assert scores == [2.0, None, 6.0, None, None, 1.0]


def test_score_completions_with_an_executor_and_chunks() -> None:
    from concurrent.futures import ThreadPoolExecutor

    reward = _HangsOnOne()
    with ThreadPoolExecutor(2) as pool:
        scores = score_completions(reward, ["p"] * 3, ["a", "bb", "ccc"], {"weight": [1] * 3},
                                   timeout_s=5, executor=pool, chunk_size=2)
    assert scores == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="column 'weight'"):
        score_completions(reward, ["p"], ["a"], {"weight": []}, timeout_s=1)
    assert score_completions(reward, [], [], timeout_s=1) == []


# ---------------------------------------------------------------------------- plugin


def test_importing_the_plugin_does_not_import_torch() -> None:
    code = ("import sys, rtlforge.trainers.plugin, rtlforge.trainers.base, rtlforge.trainers.sft;"
            "heavy = [m for m in ('torch', 'transformers', 'trl', 'peft') if m in sys.modules];"
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == ""


def test_base_re_exports_its_former_names_from_their_new_homes() -> None:
    """Plugins written against ``rtlforge.trainers.base`` keep importing what it documented."""
    import importlib

    from rtlforge.trainers import base

    homes = [importlib.import_module(f"rtlforge.trainers.{m}") for m in
             ("errors", "config", "metrics", "rng", "checkpoints", "loop", "models", "scoring")]
    for name in base.__all__:
        assert any(getattr(m, name, None) is getattr(base, name) for m in homes), name
    assert base.RNG_FILE == "rng_state.pth"


def test_plugin_registers_sft(host: PluginHost) -> None:
    assert "sft" in host.names("trainer")
    assert host.failures == {}
    from rtlforge.trainers.sft import SFTConfig, SFTTrainer

    assert host.get("trainer", "sft") is SFTTrainer
    assert SFTTrainer.config_class is SFTConfig
