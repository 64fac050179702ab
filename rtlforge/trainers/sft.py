"""Supervised fine-tuning on TRL's ``SFTTrainer``: continual pre-training and distillation.

Three data sources, chosen by ``data.kind``:

- ``corpus`` (VeriSeek-style continual pre-training): raw Verilog (and C) text from directories,
  globs or ``{"text": ...}`` JSONL files, split into chunks at line boundaries; loss on every token.
- ``trajectories`` (ChipCraftBrain-style distillation): spec -> RTL pairs harvested from rtlforge
  archives (``rtlforge explore`` SQLite files), ``rtlforge eval`` results joined with their
  samples, or ``rtlforge refine`` run directories (their ``results.jsonl``). Only passing
  candidates are kept, deduplicated per task by normalised code hash, and rendered with a
  prompt template, so the model learns from the same prompt it is later sampled
  with. Loss is on the completion only (TRL's prompt-completion format).
- ``pairs``: prompt -> answer rows from a JSONL file, e.g. a warm start for PPO on the prompts
  PPO later samples (``examples/train/sft-warm.yaml``); loss on the completion only.

Checkpoints use :mod:`rtlforge.trainers.checkpoints`' atomic layout, whose file names are the ones
``transformers.Trainer`` resumes from, so resuming restores optimizer, scheduler, RNG and the
data position and continues the step count exactly.
"""

from __future__ import annotations

import glob
import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from rtlforge.core.errors import ExtractionError, RtlforgeError
from rtlforge.core.interfaces import Trainer
from rtlforge.core.log import get_logger
from rtlforge.core.untrusted import load_json
from rtlforge.trainers.checkpoints import (
    checkpoint_path,
    latest_checkpoint,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)
from rtlforge.trainers.config import StrictModel, TrainerConfig, resolve_out_dir
from rtlforge.trainers.errors import TrainerConfigError, TrainerInfraError
from rtlforge.trainers.metrics import read_metrics
from rtlforge.trainers.models import build_model_and_tokenizer
from rtlforge.trainers.rng import seed_everything

if TYPE_CHECKING:
    from rtlforge.core.models import Task
    from rtlforge.core.plugins import PluginHost
    from rtlforge.trainers.metrics import ProgressCallback

log = get_logger("rtlforge.trainers.sft")

DEFAULT_EXTENSIONS = (".v", ".sv", ".vh", ".svh", ".c", ".h")


# --------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------


class CorpusData(StrictModel):
    kind: Literal["corpus"]
    paths: list[str] = Field(min_length=1)  # directories (recursive), globs, or .jsonl files
    extensions: tuple[str, ...] = DEFAULT_EXTENSIONS
    chunk_chars: int = Field(2000, ge=64)  # long files are split at line boundaries
    min_chars: int = Field(16, ge=1)


class EvalSource(StrictModel):
    results: str  # an ``rtlforge eval`` results JSONL
    samples: str | None = None  # its SAMPLES.jsonl; default: results name without "_results"


class TrajectoryData(StrictModel):
    kind: Literal["trajectories"]
    tasks: str  # task root the specs come from
    tasks_format: Literal["auto", "suite", "rtllm", "verilogeval"] = "auto"
    archives: tuple[str, ...] = ()  # SQLite archives (``rtlforge explore`` run/archive.sqlite)
    eval_results: tuple[EvalSource, ...] = ()
    refine_runs: tuple[str, ...] = ()  # ``rtlforge refine`` run directories (results.jsonl)
    template: str = "spec"  # bundled template name or a .toml path
    chat: bool = True  # conversational prompt/completion (needs a chat template)


class PairsData(StrictModel):
    """Prompt -> answer rows from a JSONL file (e.g. the prompts a PPO run is later sampled with).

    The answer is trained with loss on the completion only; with ``chat`` the prompt is a user turn
    rendered by the tokenizer's chat template, as ``rtlforge``'s PPO trainer renders its prompts.
    """

    kind: Literal["pairs"]
    path: str  # JSONL, one object per line
    prompt_key: str = "prompt"
    completion_key: str = "completion"
    chat: bool = True


class SFTConfig(TrainerConfig):
    trainer: Literal["sft"]

    def headline_metric(self) -> str:
        """Supervised training has no reward: its curve is the loss."""
        return self.headline or "loss"

    data: CorpusData | TrajectoryData | PairsData = Field(discriminator="kind")
    learning_rate: float = Field(2e-4, gt=0)
    lr_scheduler: Literal["linear", "cosine", "constant", "constant_with_warmup"] = "linear"
    warmup_steps: int = Field(0, ge=0)
    weight_decay: float = Field(0.0, ge=0)
    max_grad_norm: float = Field(1.0, gt=0)
    batch_size: int = Field(4, ge=1)
    grad_accum: int = Field(1, ge=1)
    max_length: int = Field(512, ge=8)
    packing: bool = False
    eval_fraction: float = Field(0.0, ge=0.0, lt=1.0)  # held out for evaluate()


# --------------------------------------------------------------------------------------------
# Data: corpus
# --------------------------------------------------------------------------------------------


def _chunks(text: str, size: int) -> Iterator[str]:
    """Split at line boundaries so a chunk never starts mid-token of a line."""
    buf: list[str] = []
    length = 0
    for line in text.splitlines(keepends=True):
        if buf and length + len(line) > size:
            yield "".join(buf)
            buf, length = [], 0
        buf.append(line)
        length += len(line)
    if buf:
        yield "".join(buf)


def _corpus_files(spec: str, extensions: Sequence[str]) -> list[Path]:
    path = Path(spec)
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in extensions)
    if path.is_file():
        return [path]
    matches = sorted(Path(p) for p in glob.glob(spec, recursive=True) if Path(p).is_file())
    if not matches:
        raise TrainerInfraError(f"corpus path {spec!r} matches no file")
    return matches


def _jsonl_texts(path: Path) -> Iterator[str]:
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = load_json(line)
        except ValueError as exc:
            raise TrainerInfraError(f"{path}:{lineno}: invalid JSON: {exc}") from None
        text = record.get("text") if isinstance(record, dict) else None
        if not isinstance(text, str):
            raise TrainerInfraError(f"{path}:{lineno}: expected an object with a 'text' string")
        yield text


def load_corpus(data: CorpusData) -> list[dict[str, str]]:
    """``{"text"}`` rows from the corpus files, chunked; files are read in sorted order."""
    rows: list[dict[str, str]] = []
    seen: set[Path] = set()
    for spec in data.paths:
        for path in _corpus_files(spec, data.extensions):
            if path in seen:
                continue
            seen.add(path)
            texts = (_jsonl_texts(path) if path.suffix == ".jsonl"
                     else [path.read_text(encoding="utf-8", errors="replace")])
            for text in texts:
                rows += [{"text": c} for c in _chunks(text, data.chunk_chars)
                         if len(c.strip()) >= data.min_chars]
    if not rows:
        raise TrainerInfraError(f"the corpus {data.paths} holds no usable text")
    return rows


def load_pairs(data: PairsData) -> list[dict[str, Any]]:
    """TRL prompt/completion rows (conversational with ``chat``) from a JSONL of pairs."""
    path = Path(data.path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise TrainerInfraError(f"cannot read pairs file {path}: {exc.strerror}") from None
    rows: list[dict[str, Any]] = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = load_json(line)
        except ValueError as exc:
            raise TrainerInfraError(f"{path}:{lineno}: invalid JSON: {exc}") from None
        values = [record.get(k) if isinstance(record, dict) else None
                  for k in (data.prompt_key, data.completion_key)]
        if not all(isinstance(v, str) for v in values):
            raise TrainerInfraError(f"{path}:{lineno}: expected an object with string fields "
                                    f"{data.prompt_key!r} and {data.completion_key!r}")
        prompt, answer = values
        if data.chat:
            rows.append({"prompt": [{"role": "user", "content": prompt}],
                         "completion": [{"role": "assistant", "content": answer}]})
        else:
            rows.append({"prompt": prompt, "completion": answer})
    if not rows:
        raise TrainerInfraError(f"the pairs file {path} holds no rows")
    return rows


# --------------------------------------------------------------------------------------------
# Data: trajectories
# --------------------------------------------------------------------------------------------


@dataclass
class HarvestStats:
    seen: int = 0
    passing: int = 0
    duplicates: int = 0
    unknown_task: int = 0
    unextractable: int = 0
    kept: int = 0
    per_source: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Trajectory:
    task_id: str
    code: str
    source: str  # where it was harvested from (file path)


def _from_archive(path: Path, host: PluginHost) -> Iterator[tuple[str, str | None, str]]:
    """(task_id, code or None when not passing, origin) for every archive entry."""
    from rtlforge.core.models import Verdict

    if not path.is_file():
        raise TrainerInfraError(f"archive {path} does not exist")
    with host.create("archive", "sqlite", path=path) as archive:
        for entry in archive.entries():
            passed = entry.verdict == Verdict.PASS.value
            code = "\n".join(f.content for f in entry.candidate.files) if passed else None
            yield entry.task_id, code, str(path)


def _from_eval(src: EvalSource, tasks: dict[str, Task]) -> Iterator[tuple[str, str | None, str]]:
    """Join an eval results file with its samples by ``index``; extract code from passing ones."""
    from rtlforge.core.models import Verdict
    from rtlforge.evaluation.evaluate import candidate_from_completion
    from rtlforge.tasks.samples import load_samples

    results = Path(src.results)
    samples_path = Path(src.samples) if src.samples else results.with_name(
        results.name.replace("_results.jsonl", ".jsonl"))
    if samples_path == results or not samples_path.is_file():
        raise TrainerInfraError(f"samples file for {results} not found ({samples_path}); set "
                                "'samples' in the eval_results entry")
    samples = load_samples(samples_path)
    for lineno, line in enumerate(results.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        rec = load_json(line)
        index, task_id = rec.get("index"), rec.get("task_id")
        if not isinstance(index, int) or not 0 <= index < len(samples):
            raise TrainerInfraError(f"{results}:{lineno}: index {index!r} is not a line of "
                                    f"{samples_path}")
        if rec.get("verdict") != Verdict.PASS.value:
            yield task_id, None, str(results)
            continue
        completion = rec.get("completion") or samples[index].completion
        task = tasks.get(task_id)
        if task is None:
            yield task_id, "", str(results)  # counted as unknown_task by the caller
            continue
        try:
            cand = candidate_from_completion(task, completion, index=index)
        except ExtractionError:
            yield task_id, "", str(results)
            continue
        yield task_id, "\n".join(f.content for f in cand.files), str(results)


def _from_refine(run_dir: Path) -> Iterator[tuple[str, str | None, str]]:
    """(task_id, code or None when not passing, origin) per line of a refine run's
    results.jsonl. Read as plain JSON (``task_id``, ``verdict``, ``candidate.files[].content``,
    the format docs/refine.md documents): trainers sit below the agents layer."""
    from rtlforge.core.models import Verdict

    results = run_dir / "results.jsonl"
    if not results.is_file():
        raise TrainerInfraError(f"refine run {run_dir} has no results.jsonl")
    for raw in results.read_bytes().splitlines():
        try:  # torn by a killed run (also inside a UTF-8 sequence), blank or absurdly nested
            rec = load_json(raw.decode("utf-8"))
        except (ValueError, RecursionError):
            continue  # refine redoes that task
        if not isinstance(rec, dict):
            continue
        task_id = str(rec.get("task_id"))
        candidate = rec.get("candidate")
        if rec.get("verdict") != Verdict.PASS.value or not isinstance(candidate, dict):
            yield task_id, None, str(results)
            continue
        files = candidate.get("files")
        files = files if isinstance(files, list) else []
        yield task_id, "\n".join(str(f.get("content", "")) for f in files
                                 if isinstance(f, dict)), str(results)


def collect_trajectories(data: TrajectoryData, tasks: dict[str, Task], *,
                         host: PluginHost | None = None,
                         ) -> tuple[list[Trajectory], HarvestStats]:
    """Passing candidates of every source, deduplicated per task by normalised code hash.

    Archives are read with ``host``'s ``sqlite`` archive plugin.
    """
    from rtlforge.rewards.guards import code_hash

    stats = HarvestStats()
    seen: set[tuple[str, str]] = set()
    out: list[Trajectory] = []
    streams: list[Iterable[tuple[str, str | None, str]]] = []
    if data.archives:
        if host is None:
            from rtlforge.core.plugins import PluginHost

            host = PluginHost.default()
        streams += [_from_archive(Path(p), host) for p in data.archives]
    streams += [_from_eval(src, tasks) for src in data.eval_results]
    streams += [_from_refine(Path(p)) for p in data.refine_runs]
    for stream in streams:
        for task_id, code, origin in stream:
            stats.seen += 1
            if code is None:
                continue
            stats.passing += 1
            if task_id not in tasks:
                stats.unknown_task += 1
                continue
            if not code.strip():
                stats.unextractable += 1
                continue
            key = (task_id, code_hash(code))
            if key in seen:
                stats.duplicates += 1
                continue
            seen.add(key)
            out.append(Trajectory(task_id, code, origin))
            stats.per_source[origin] = stats.per_source.get(origin, 0) + 1
    stats.kept = len(out)
    return out, stats


def render_trajectories(trajs: Sequence[Trajectory], tasks: dict[str, Task], *,
                        template: str = "spec", chat: bool = True) -> list[dict[str, Any]]:
    """Prompt/completion rows rendered with the same template generation uses."""
    from rtlforge.generation.prompts import load_template

    tmpl = load_template(template)
    rows: list[dict[str, Any]] = []
    for t in trajs:
        req = tmpl.request(tasks[t.task_id])
        answer = f"```verilog\n{t.code.strip()}\n```"
        if chat:
            prompt = ([{"role": "system", "content": req.system}] if req.system else [])
            prompt.append({"role": "user", "content": req.prompt})
            rows.append({"prompt": prompt,
                         "completion": [{"role": "assistant", "content": answer}]})
        else:
            head = f"{req.system}\n\n" if req.system else ""
            rows.append({"prompt": f"{head}{req.prompt}\n", "completion": answer})
    return rows


def _load_task_map(data: TrajectoryData) -> dict[str, Task]:
    import rtlforge.tasks.loader as taskio

    try:
        loaded = taskio.load_tasks(data.tasks, data.tasks_format)
    except RtlforgeError as exc:
        raise TrainerInfraError(f"cannot load tasks from {data.tasks}: {exc}") from exc
    return {t.id: t for t in loaded}


def harvest(data: TrajectoryData, *, host: PluginHost | None = None,
            ) -> tuple[list[dict[str, Any]], HarvestStats]:
    """Training rows for trajectory distillation, plus what was kept and dropped."""
    if not data.archives and not data.eval_results and not data.refine_runs:
        raise TrainerConfigError("data.archives and data.eval_results are both empty, and so "
                                 "is data.refine_runs")
    tasks = _load_task_map(data)
    trajs, stats = collect_trajectories(data, tasks, host=host)
    if not trajs:
        sources = [*data.archives, *(e.results for e in data.eval_results),
                   *data.refine_runs]
        raise TrainerInfraError(f"no passing candidates found in {sources}")
    return render_trajectories(trajs, tasks, template=data.template, chat=data.chat), stats


# --------------------------------------------------------------------------------------------
# Trainer
# --------------------------------------------------------------------------------------------


class SFTTrainer(Trainer):
    """Supervised fine-tuning (full or LoRA/QLoRA) of a causal LM on corpus text or trajectories.

    ``progress`` is called with every metrics record after it is written (the CLI draws its bar
    from it). ``train()`` resumes by itself when ``checkpoint.resume_from`` is set.
    """

    name: ClassVar[str] = "sft"
    config_class: ClassVar[type[SFTConfig]] = SFTConfig
    reports_progress: ClassVar[bool] = True

    def __init__(self, config: SFTConfig, *, host: PluginHost | None = None,
                 out_dir: str | Path | None = None,
                 progress: ProgressCallback | None = None) -> None:
        """Args:
            config: the validated training config (the YAML file's ``SFTConfig``).
            host: where the reward, validators and estimators the config names come from
                (default: ``PluginHost.default()``).
            out_dir: the run folder; wins over the config's ``out_dir`` (the CLI's ``--out``).
            progress: called with each metrics record once it is written (the CLI draws
                its progress bar with it).
        """
        if not isinstance(config, SFTConfig):
            raise TrainerConfigError(f"SFTTrainer needs an SFTConfig, not "
                                     f"{type(config).__name__}")
        self.config = config
        self.host = host
        self.out_dir = resolve_out_dir(config, out_dir)
        self.progress = progress
        self._hf: Any = None  # the TRL trainer, built lazily
        self._resume_from: Path | None = None
        self._token_offset = 0
        self._metrics: Any = None
        self.harvest_stats: HarvestStats | None = None

    # ---------------------------------------------------------------- set-up

    @property
    def checkpoint_root(self) -> Path:
        return self.out_dir / "checkpoints"

    def _datasets(self) -> tuple[Any, Any]:
        from datasets import Dataset

        data = self.config.data
        if isinstance(data, CorpusData):
            rows: list[dict[str, Any]] = load_corpus(data)
        elif isinstance(data, PairsData):
            rows = load_pairs(data)
        else:
            rows, self.harvest_stats = harvest(data, host=self.host)
            log.info("sft_harvest", **{k: v for k, v in vars(self.harvest_stats).items()})
        dataset = Dataset.from_list(rows)
        if self.config.eval_fraction > 0 and len(rows) >= 2:
            split = dataset.train_test_split(test_size=self.config.eval_fraction,
                                             seed=self.config.seed)
            return split["train"], split["test"]
        return dataset, None

    def _build(self) -> Any:
        if self._hf is not None:
            return self._hf
        try:
            from transformers import PrinterCallback, TrainerCallback
            from trl import SFTConfig as TRLConfig
            from trl import SFTTrainer as TRLTrainer
        except ImportError as exc:
            raise TrainerInfraError(f"SFT needs the [train] extra ({exc.name} is missing): "
                                    "pip install 'rtlforge[train]'") from exc
        cfg = self.config
        self.out_dir.mkdir(parents=True, exist_ok=True)
        seed_everything(cfg.seed)
        model, tokenizer = build_model_and_tokenizer(cfg.model, self.out_dir, seed=cfg.seed)
        train_ds, eval_ds = self._datasets()
        on_cpu = cfg.model.device == "cpu"
        args = TRLConfig(
            output_dir=str(self.out_dir / "hf"),
            max_steps=cfg.steps,
            per_device_train_batch_size=cfg.batch_size,
            per_device_eval_batch_size=cfg.batch_size,
            gradient_accumulation_steps=cfg.grad_accum,
            learning_rate=cfg.learning_rate,
            lr_scheduler_type=cfg.lr_scheduler,
            warmup_steps=cfg.warmup_steps,
            weight_decay=cfg.weight_decay,
            max_grad_norm=cfg.max_grad_norm,
            max_length=cfg.max_length,
            packing=cfg.packing,
            seed=cfg.seed,
            data_seed=cfg.seed,
            logging_steps=cfg.logging.every,
            save_strategy="no",  # checkpoints are ours (atomic), written by the callback
            report_to=[],
            disable_tqdm=True,
            use_cpu=on_cpu,
            bf16=not on_cpu and cfg.model.dtype == "bfloat16",
            fp16=not on_cpu and cfg.model.dtype == "float16",
            dataloader_num_workers=0,
            dataset_num_proc=None,
        )
        outer = self

        class _Bridge(TrainerCallback):  # type: ignore[misc]
            """Metrics lines and periodic checkpoints from inside the HF loop."""

            def on_log(self, args: Any, state: Any, control: Any, logs: Any = None,
                       **kw: Any) -> None:
                if logs and "loss" in logs:
                    outer._log_step(state.global_step, logs)

            def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                every = outer.config.checkpoint.every
                if every and state.global_step % every == 0 and \
                        state.global_step < outer.config.steps:
                    outer.save(checkpoint_path(outer.checkpoint_root, state.global_step))
                    prune_checkpoints(outer.checkpoint_root, outer.config.checkpoint.keep)

        self._hf = TRLTrainer(model=model, args=args, train_dataset=train_ds,
                              eval_dataset=eval_ds, processing_class=tokenizer,
                              callbacks=[_Bridge()])
        self._hf.remove_callback(PrinterCallback)  # metrics go to metrics.jsonl, not stdout
        if len(self._hf.train_dataset) == 0:
            raise TrainerInfraError(f"no training example survived tokenisation: every one lost "
                                    f"its completion to truncation (max_length={cfg.max_length})")
        return self._hf

    def _log_step(self, step: int, logs: dict[str, Any]) -> None:
        tokens = logs.get("num_tokens")
        record = {"step": step, "loss": logs.get("loss"),
                  "learning_rate": logs.get("learning_rate"),
                  "tokens": None if tokens is None else int(tokens) + self._token_offset,
                  "grad_norm": logs.get("grad_norm"),
                  "mean_token_accuracy": logs.get("mean_token_accuracy"),
                  "time": time.time()}
        self._last_tokens = record["tokens"]
        self._metrics.write(record)

    # ---------------------------------------------------------------- Trainer API

    def train(self) -> dict[str, Any]:
        """Train to ``config.steps`` (resuming first when configured); save the final model."""
        from rtlforge.trainers.metrics import MetricsWriter

        cfg = self.config
        hf = self._build()
        resume = self._resume_from or self._configured_resume()
        resume_step = None
        if resume is not None:
            ckpt = load_checkpoint(resume, restore_rng=False)  # HF restores RNG itself
            resume_step = ckpt.step
            self._token_offset = int(ckpt.state.get("tokens") or 0)
        self._last_tokens: int | None = self._token_offset or None
        metrics_path = self.out_dir / cfg.logging.metrics_file
        # a fresh run starts a fresh file; a resumed one drops lines logged after the checkpoint
        self._metrics = MetricsWriter(
            metrics_path, truncate_after=resume_step if resume is not None else -1,
            callback=self.progress)
        started = time.perf_counter()
        try:
            out = hf.train(resume_from_checkpoint=str(resume) if resume is not None else None)
        finally:
            self._metrics.close()
        elapsed = time.perf_counter() - started
        final = self.out_dir / "final"
        self.save(final)
        records = [r for r in read_metrics(metrics_path) if r.get("loss") is not None]
        summary = {
            "steps": int(hf.state.global_step),
            "resumed_from_step": resume_step,
            "train_loss": float(out.training_loss),
            "final_loss": records[-1]["loss"] if records else None,
            "tokens": self._last_tokens,
            "seconds": round(elapsed, 3),
            "seconds_per_step": round(elapsed / max(1, hf.state.global_step - (resume_step or 0)),
                                      4),
            "final_checkpoint": str(final),
            "metrics_file": str(metrics_path),
        }
        if self.harvest_stats is not None:
            summary["harvest"] = vars(self.harvest_stats)
        (self.out_dir / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        return summary

    def _configured_resume(self) -> Path | None:
        spec = self.config.checkpoint.resume_from
        if spec is None:
            return None
        if spec == "latest":
            return latest_checkpoint(self.checkpoint_root)  # none yet: a fresh start
        return Path(spec)

    def evaluate(self) -> dict[str, Any]:
        """Mean loss on the held-out split (``eval_fraction``), else on the training data."""
        hf = self._build()
        dataset = hf.eval_dataset if hf.eval_dataset is not None else hf.train_dataset
        result = hf.evaluate(eval_dataset=dataset)
        return {k.removeprefix("eval_"): v for k, v in result.items()}

    def save(self, path: Path) -> None:
        """Atomic checkpoint: weights/adapter + tokenizer, optimizer, scheduler, RNG, HF state."""
        hf = self._build()

        def write_model(staging: Path) -> None:
            hf.save_model(str(staging))
            hf.state.save_to_json(str(staging / "trainer_state.json"))

        save_checkpoint(
            Path(path), step=int(hf.state.global_step),
            state={"trainer": self.name, "tokens": self._tokens_so_far(),
                   "config": self.config.model_dump(mode="json")},
            optimizer=hf.optimizer, scheduler=hf.lr_scheduler, save_model=write_model)

    def _tokens_so_far(self) -> int:
        """Tokens trained on up to now; TRL's counter restarts with each process, ours does not."""
        counted = getattr(self._hf, "_total_train_tokens", None)  # TRL's running total
        if counted is None:
            return getattr(self, "_last_tokens", None) or self._token_offset
        return self._token_offset + int(counted)

    def resume(self, path: Path) -> None:
        """Continue from ``path`` on the next :meth:`train` call (checked now, loaded then)."""
        state = load_checkpoint(path, restore_rng=False)
        if state.state.get("trainer") not in (None, self.name):
            raise TrainerConfigError(f"{path} is a {state.state.get('trainer')!r} checkpoint, "
                                     "not an SFT one")
        self._resume_from = Path(path)
