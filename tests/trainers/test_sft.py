"""SFT on the offline tiny model: learning, harvesting, resume, and the ``train`` command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rtlforge.core.interfaces import ArchiveEntry
from rtlforge.core.models import Candidate
from rtlforge.core.plugins import PluginHost
from rtlforge.plugins.archives import pareto as archives_plugin
from rtlforge.trainers import plugin
from rtlforge.trainers.config import parse_config
from rtlforge.trainers.errors import TrainerConfigError
from rtlforge.trainers.metrics import read_metrics

torch = pytest.importorskip("torch")
pytest.importorskip("trl")
torch.set_num_threads(1)

from rtlforge.trainers.sft import SFTTrainer, harvest, load_corpus  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MUX = (ROOT / "examples" / "tasks" / "mux4")
CORPUS = ["module and2(input a, input b, output y);\n  assign y = a & b;\nendmodule\n",
          "module inv(input a, output y);\n  assign y = ~a;\nendmodule\n"]


@pytest.fixture(scope="module")
def host() -> PluginHost:
    # the trainer reads trajectory archives through the host's sqlite archive
    return PluginHost(load_entrypoints=False,
                      plugins=[("trainers", plugin), ("pareto", archives_plugin)])


@pytest.fixture(scope="module")
def tiny(tiny_model: Path) -> str:
    """The session's tiny model (rtlforge.testing), as the path string a config holds."""
    return str(tiny_model)


def _corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    (root / "a.v").write_text(CORPUS[0])
    (root / "sub" / "b.sv").write_text(CORPUS[1])
    (root / "skip.txt").write_text("not verilog, not read")
    return root


def _config(host: PluginHost, tiny: str, data: dict[str, Any], **over: Any) -> Any:
    raw = {"trainer": "sft", "seed": 0, "model": {"path": tiny}, "steps": 4, "batch_size": 2,
           "max_length": 128, "learning_rate": 3e-3, "data": data, **over}
    return parse_config(raw, host=host)


def test_corpus_loading_dirs_globs_jsonl(tmp_path: Path) -> None:
    from rtlforge.trainers.sft import CorpusData

    root = _corpus(tmp_path)
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text(json.dumps({"text": "module m; endmodule // from jsonl"}) + "\n\n")
    rows = load_corpus(CorpusData(kind="corpus", paths=[str(root), str(jsonl),
                                                        str(root / "*.v")]))
    assert [r["text"] for r in rows] == [*CORPUS, "module m; endmodule // from jsonl"]
    long = load_corpus(CorpusData(kind="corpus", paths=[str(root / "a.v")], chunk_chars=64,
                                  min_chars=1))
    assert len(long) == 2 and "".join(r["text"] for r in long) == CORPUS[0]


def test_loss_decreases_on_a_tiny_corpus(tmp_path: Path, host: PluginHost, tiny: str) -> None:
    cfg = _config(host, tiny, {"kind": "corpus", "paths": [str(_corpus(tmp_path))]}, steps=8)
    summary = SFTTrainer(cfg, host=host, out_dir=tmp_path / "out").train()
    records = read_metrics(tmp_path / "out" / "metrics.jsonl")
    assert [r["step"] for r in records] == list(range(1, 9))
    assert {"step", "loss", "learning_rate", "tokens"} <= set(records[0])
    assert records[-1]["tokens"] > records[0]["tokens"] > 0
    first = sum(r["loss"] for r in records[:2]) / 2
    last = sum(r["loss"] for r in records[-2:]) / 2
    assert last < first - 0.5, (first, last)
    assert summary["steps"] == 8 and (tmp_path / "out" / "final" / "model.safetensors").exists()


def _archive(path: Path) -> None:
    from rtlforge.plugins.archives.pareto import SQLiteArchive

    golden = (MUX / "golden.v").read_text() if (MUX / "golden.v").exists() else None
    assert golden is not None
    relaid = "// same design, different layout\n" + golden.replace("\n", "\n\n")
    other = golden.replace("endmodule", "  // a different design\n  wire unused;\nendmodule")
    with SQLiteArchive(path) as archive:
        archive.add([
            ArchiveEntry(task_id="mux4", candidate=Candidate.from_source(golden), verdict="pass"),
            ArchiveEntry(task_id="mux4", candidate=Candidate.from_source(relaid), verdict="pass"),
            ArchiveEntry(task_id="mux4", candidate=Candidate.from_source(other), verdict="pass"),
            ArchiveEntry(task_id="mux4", candidate=Candidate.from_source("module x; endmodule"),
                         verdict="fail"),
            ArchiveEntry(task_id="ghost", candidate=Candidate.from_source(golden), verdict="pass"),
        ])


def test_harvest_keeps_passing_deduplicated_rendered(tmp_path: Path) -> None:
    from rtlforge.trainers.sft import TrajectoryData

    _archive(tmp_path / "archive.sqlite")
    samples = tmp_path / "s.jsonl"
    golden = (MUX / "golden.v").read_text()
    samples.write_text(json.dumps({"task_id": "mux4", "completion": f"```verilog\n{golden}```"})
                       + "\n" + json.dumps({"task_id": "mux4", "completion": "nope"}) + "\n")
    (tmp_path / "s_results.jsonl").write_text(
        json.dumps({"index": 0, "task_id": "mux4", "verdict": "pass"}) + "\n"
        + json.dumps({"index": 1, "task_id": "mux4", "verdict": "fail"}) + "\n")
    data = TrajectoryData(kind="trajectories", tasks=str(MUX.parent),
                          archives=[str(tmp_path / "archive.sqlite")],
                          eval_results=[{"results": str(tmp_path / "s_results.jsonl")}])
    rows, stats = harvest(data)
    assert (stats.seen, stats.passing, stats.unknown_task) == (7, 5, 1)
    assert stats.duplicates == 2 and stats.kept == 2 == len(rows)  # layout-only copies merged
    row = rows[0]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert "mux4" in row["prompt"][1]["content"]
    assert row["completion"][0]["content"].startswith("```verilog\nmodule")
    with pytest.raises(TrainerConfigError, match="both empty"):
        harvest(TrajectoryData(kind="trajectories", tasks=str(MUX.parent)))


def test_distillation_trains_on_trajectories(tmp_path: Path, host: PluginHost,
                                             tiny: str) -> None:
    _archive(tmp_path / "archive.sqlite")
    cfg = _config(host, tiny, {"kind": "trajectories", "tasks": str(MUX.parent),
                               "archives": [str(tmp_path / "archive.sqlite")]},
                  steps=2, max_length=1024, model={"path": tiny, "lora": {"r": 4}})
    summary = SFTTrainer(cfg, host=host, out_dir=tmp_path / "out").train()
    assert summary["harvest"]["kept"] == 2 and summary["steps"] == 2
    assert (tmp_path / "out" / "final" / "adapter_model.safetensors").exists()


class _Killed(Exception):
    pass


def test_resume_matches_an_uninterrupted_run(tmp_path: Path, host: PluginHost,
                                             tiny: str) -> None:
    data = {"kind": "corpus", "paths": [str(_corpus(tmp_path))]}
    cfg = _config(host, tiny, data, steps=4, checkpoint={"every": 2},
                  model={"path": tiny, "lora": {"r": 4, "alpha": 8}})
    straight = SFTTrainer(cfg, host=host, out_dir=tmp_path / "a").train()

    def kill_at_3(record: Any) -> None:
        if record["step"] == 3:
            raise _Killed

    with pytest.raises(_Killed):
        SFTTrainer(cfg, host=host, out_dir=tmp_path / "b", progress=kill_at_3).train()
    resumed_cfg = cfg.model_copy(update={"checkpoint": cfg.checkpoint.model_copy(
        update={"resume_from": "latest"})})
    resumed = SFTTrainer(resumed_cfg, host=host, out_dir=tmp_path / "b").train()

    assert resumed["resumed_from_step"] == 2 and resumed["steps"] == 4
    a = read_metrics(tmp_path / "a" / "metrics.jsonl")
    b = read_metrics(tmp_path / "b" / "metrics.jsonl")
    assert [r["step"] for r in b] == [1, 2, 3, 4]
    for ra, rb in zip(a, b, strict=True):
        assert rb["loss"] == pytest.approx(ra["loss"], abs=1e-4)
        assert rb["learning_rate"] == pytest.approx(ra["learning_rate"])
        assert rb["tokens"] == ra["tokens"]
    assert resumed["final_loss"] == pytest.approx(straight["final_loss"], abs=1e-4)


def test_train_command_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import click
    from click.testing import CliRunner

    from rtlforge.core.plugins import PluginHost

    monkeypatch.chdir(ROOT)
    host = PluginHost.default()
    if "sft" not in host.names("trainer"):  # entry points installed before the trainers existed
        host.add_plugin(plugin, name="rtlforge-trainers")
    group = click.Group()
    plugin.register_commands(group, host)
    out = tmp_path / "run"
    result = CliRunner().invoke(group, ["train", "examples/train/sft-tiny.yaml",
                                        "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout[result.stdout.index("{"):])
    assert summary["steps"] == 4
    losses = [r["loss"] for r in read_metrics(out / "metrics.jsonl")]
    assert next(iter(summary)) == "headline" and summary["headline"] == {
        "metric": "loss", "steps": 4, "first": losses[0], "last": losses[-1],
        "first_3_mean": pytest.approx(sum(losses[:3]) / 3),
        "last_3_mean": pytest.approx(sum(losses[-3:]) / 3)}
    assert [r["step"] for r in read_metrics(out / "metrics.jsonl")] == [1, 2, 3, 4]
    assert (out / "checkpoints" / "checkpoint-2").is_dir()

    bad = tmp_path / "bad.yaml"
    bad.write_text("trainer: sft\nsteps: 1\n")
    result = CliRunner().invoke(group, ["train", str(bad), "--out", str(out)])
    assert result.exit_code == 2 and "model" in result.output
    infra = tmp_path / "infra.yaml"
    infra.write_text("trainer: sft\nsteps: 1\nmodel: {build_tiny: {}}\n"
                     "data: {kind: corpus, paths: [/nonexistent/*.v]}\n")
    result = CliRunner().invoke(group, ["train", str(infra), "--out", str(out / "x")])
    assert result.exit_code == 3 and "matches no file" in result.output
