"""``transformers`` generator: sample from a local Hugging Face model (optionally + a LoRA).

The point is an in-process generator for small and fine-tuned models (a policy being trained, a
distilled checkpoint) with the same contract as the hosted ones: ``params.n`` samples per
request, token accounting, typed errors. torch/transformers/peft are imported only when a model
is loaded, because the plugin host imports every plugin module at start-up.

What the local-model generators share (errors, prompt rendering, stop handling, cancellation)
is in :mod:`rtlforge.generation.local`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.interfaces import (
    Generation,
    GenerationRequest,
    SamplingParams,
)
from rtlforge.generation.base import (
    CancelToken,
    GenerationError,
    make_generation,
)
from rtlforge.generation.local import (
    TRAIN_HINT,
    LocalGenerator,
    ModelLoadError,
    batched,
    check_model_dir,
    cut_at_stop,
    render_prompt,
    require,
    wants_chat,
)

_DTYPES = ("auto", "float32", "float16", "bfloat16")


class TransformersGenerator(LocalGenerator):
    """Sample with ``model.generate`` from a local model directory, batched with left padding.

    ``batch_size`` counts prompts per forward pass; each expands to ``params.n`` sequences.
    ``dtype="auto"`` is float32 on CPU (half precision is slow or unsupported there) and
    bfloat16 (float16 where unsupported) on GPUs. A PEFT ``adapter`` is merged into the weights
    by default, which makes sampling as fast as with the base model. ``num_threads`` calls
    ``torch.set_num_threads``, which is process-wide.
    """

    name: ClassVar[str] = "transformers"

    def __init__(
        self,
        model: str | Path,
        *,
        adapter: str | Path | None = None,
        merge_adapter: bool = True,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 8,
        chat_template: bool | None = None,
        num_threads: int | None = None,
        trust_remote_code: bool = False,
        model_name: str | None = None,
    ) -> None:
        """Args:
            model: a local model directory (a ``save_pretrained`` output); hub ids are not
                resolved.
            adapter: a PEFT adapter directory loaded on top of ``model``.
            merge_adapter: merge the adapter into the weights after loading (sampling as fast
                as the base model).
            device: ``auto`` (CUDA when available, else CPU), ``cpu``, ``cuda``, ``cuda:1``, ...
            dtype: ``auto`` (float32 on CPU, bfloat16 or float16 on GPU), ``float32``,
                ``bfloat16`` or ``float16``.
            batch_size: prompts per forward pass (each expands to ``n`` sequences).
            chat_template: None uses the tokenizer's template when it has one; False sends the
                system text and prompt as plain text; True requires a template.
            num_threads: ``torch.set_num_threads`` when the model loads (process-wide).
            trust_remote_code: passed to ``from_pretrained``.
            model_name: what generations and provenance record as the model (default: the
                path).
        """
        super().__init__()
        if dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {_DTYPES}, not {dtype!r}")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.model_path = check_model_dir(model)
        self.adapter_path = check_model_dir(adapter, "adapter") if adapter else None
        self.merge_adapter = merge_adapter
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self.chat_template = chat_template
        self.num_threads = num_threads
        self.trust_remote_code = trust_remote_code
        self.model_name = model_name or str(self.model_path)
        self._model: Any = None
        self._tokenizer: Any = None
        self._device: Any = None
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- loading

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        """Load tokenizer and model now (``generate`` does it on first use)."""
        with self._lock:
            if self._scope.closed:
                raise GenerationError("the generator is closed")
            if self._model is None:
                self._load()

    def _release(self) -> None:
        with self._lock:
            on_gpu = self._device is not None and self._device.type == "cuda"
            self._model = self._tokenizer = None
        if on_gpu:
            import torch

            torch.cuda.empty_cache()

    def _load(self) -> None:
        torch = require("torch", TRAIN_HINT)
        transformers = require("transformers", TRAIN_HINT)
        if self.num_threads:
            torch.set_num_threads(self.num_threads)
        device = self._resolve_device(torch)
        dtype = self._resolve_dtype(torch, device)
        # transformers 4.56 renamed torch_dtype to dtype; older releases only know the first.
        major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
        dtype_kw = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(
                self.model_path, trust_remote_code=self.trust_remote_code)
            model = transformers.AutoModelForCausalLM.from_pretrained(
                self.model_path, trust_remote_code=self.trust_remote_code, **{dtype_kw: dtype})
        except (OSError, ValueError, KeyError) as exc:
            raise ModelLoadError(f"cannot load a causal LM from {str(self.model_path)!r}: "
                                 f"{type(exc).__name__}: {exc}") from exc
        if self.adapter_path is not None:
            peft = require("peft", TRAIN_HINT)
            try:
                model = peft.PeftModel.from_pretrained(model, self.adapter_path)
            except (OSError, ValueError, KeyError, RuntimeError) as exc:
                raise ModelLoadError(f"cannot load adapter {str(self.adapter_path)!r}: "
                                     f"{type(exc).__name__}: {exc}") from exc
            if self.merge_adapter:
                model = model.merge_and_unload()
        model.to(device).eval()
        tokenizer.padding_side = "left"  # decoder-only: new tokens must follow the prompt
        if tokenizer.pad_token_id is None:
            if tokenizer.eos_token_id is None:
                raise ModelLoadError(f"tokenizer of {str(self.model_path)!r} has neither a pad "
                                     "nor an eos token; cannot pad a batch")
            tokenizer.pad_token = tokenizer.eos_token
        self._device, self._model, self._tokenizer = device, model, tokenizer

    def _resolve_device(self, torch: Any) -> Any:
        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        device = torch.device(self.device)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise GenerationError(f"device {self.device!r} requested but CUDA is not available")
        return device

    def _resolve_dtype(self, torch: Any, device: Any) -> Any:
        if self.dtype != "auto":
            return getattr(torch, self.dtype)
        if device.type != "cuda":
            return torch.float32
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16

    # ---------------------------------------------------------------- sampling

    def generate(
        self, requests: Sequence[GenerationRequest], params: SamplingParams
    ) -> list[list[Generation]]:
        with self._scope.call() as token:
            self.load()
            import torch

            done: list[list[Generation]] = []
            with self._rng(torch, params.seed), torch.inference_mode():
                for batch in batched(requests, self.batch_size):
                    self._stop_if_cancelled(token, done)
                    start = time.perf_counter()
                    results = self._generate_batch(batch, params, token)
                    # A batch cut short by cancel() is dropped, not returned as if complete.
                    self._stop_if_cancelled(token, done)
                    self._record(results, time.perf_counter() - start)
                    done.extend(results)
            return done

    def _rng(self, torch: Any, seed: int | None) -> contextlib.AbstractContextManager[Any]:
        """A private RNG stream for seeded calls: reproducible, and the caller's RNG untouched.

        Unseeded calls use the global stream, so consecutive calls differ.
        """
        if seed is None:
            return contextlib.nullcontext()
        devices = [self._device] if self._device.type == "cuda" else []
        forked = torch.random.fork_rng(devices=devices)

        @contextlib.contextmanager
        def seeded() -> Iterator[None]:
            with forked:
                torch.manual_seed(seed)
                yield

        return seeded()

    def _generate_batch(self, batch: Sequence[GenerationRequest], params: SamplingParams,
                        token: CancelToken) -> list[list[Generation]]:
        tok, model = self._tokenizer, self._model
        chat = wants_chat(tok, self.chat_template)
        texts = [render_prompt(tok, r, chat) for r in batch]
        # A chat template already writes any BOS it wants; adding special tokens would double it.
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=not chat)
        enc = {k: v.to(self._device) for k, v in enc.items()}
        greedy = params.temperature == 0.0
        # Greedy decoding gives one answer per prompt: decode once and repeat it n times.
        per_prompt = 1 if greedy else params.n
        kwargs: dict[str, Any] = {
            "max_new_tokens": params.max_tokens,
            "do_sample": not greedy,
            "num_return_sequences": per_prompt,
            "pad_token_id": tok.pad_token_id,
            "stopping_criteria": _cancel_criteria(token),
        }
        if not greedy:
            # top_k=0 turns off transformers' default top-k, matching vLLM and hosted APIs.
            kwargs.update(temperature=params.temperature, top_p=params.top_p, top_k=0)
        if params.stop:
            kwargs.update(stop_strings=list(params.stop), tokenizer=tok)
        start = time.perf_counter()
        try:
            out = model.generate(**enc, **kwargs)
        except RuntimeError as exc:  # out of memory, device errors: infrastructure, typed
            self._usage.add(failures=1)
            raise GenerationError(f"model.generate failed: {type(exc).__name__}: {exc}") from exc
        latency = time.perf_counter() - start
        new = out[:, enc["input_ids"].shape[1]:].tolist()
        prompt_lens = enc["attention_mask"].sum(dim=1).tolist()
        eos = self._eos_ids()
        meta = {"adapter": str(self.adapter_path)} if self.adapter_path else {}
        results: list[list[Generation]] = []
        for i, request in enumerate(batch):
            samples = []
            for j in range(params.n):
                text, used, finish = self._decode(new[i * per_prompt + j % per_prompt], eos,
                                                  params)
                samples.append(make_generation(
                    text, generator=self.name, request=request, sample_index=j,
                    model=self.model_name, prompt_tokens=int(prompt_lens[i]),
                    completion_tokens=used, latency_s=latency, finish_reason=finish,
                    metadata=meta))
            results.append(samples)
        return results

    def _eos_ids(self) -> set[int]:
        ids = self._model.generation_config.eos_token_id
        ids = [ids] if isinstance(ids, int) else list(ids or [])
        if self._tokenizer.eos_token_id is not None:
            ids.append(self._tokenizer.eos_token_id)
        return set(ids)

    def _decode(self, ids: list[int], eos: set[int],
                params: SamplingParams) -> tuple[str, int, str]:
        """Text, tokens generated, and finish reason ("stop" or "length") of one sequence."""
        # A row ends at its first eos (inclusive); later positions are batch padding.
        end = next((k + 1 for k, t in enumerate(ids) if t in eos), None)
        hit_eos = end is not None
        ids = ids[:end] if hit_eos else ids
        pad = self._tokenizer.pad_token_id
        if not hit_eos and pad not in eos:
            while ids and ids[-1] == pad:  # a row halted by a stop string is padded, no eos
                ids = ids[:-1]
        text = self._tokenizer.decode(ids, skip_special_tokens=True)
        text, hit_stop = cut_at_stop(text, params.stop)
        stopped = hit_eos or hit_stop or len(ids) < params.max_tokens
        return text, len(ids), "stop" if stopped else "length"


def _cancel_criteria(token: CancelToken) -> Any:
    """Halt a running batch as soon as the call is cancelled (its samples are then dropped)."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    class _Cancelled(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            return torch.full((input_ids.shape[0],), token.cancelled, dtype=torch.bool,
                              device=input_ids.device)

    return StoppingCriteriaList([_Cancelled()])


@hookimpl
def register_generators(register: Register) -> None:
    register(TransformersGenerator)
