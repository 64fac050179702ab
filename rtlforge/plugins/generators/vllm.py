"""``vllm`` generator: the offline ``vllm.LLM`` engine, optionally serving one LoRA adapter.

For throughput on a GPU (RL rollouts, pass@k sweeps) where the ``transformers`` generator is too
slow. vLLM schedules a whole call at once, so by default every request goes in one
``LLM.generate``; set ``batch_size`` to make cancellation possible between chunks. vllm is
imported only when the engine starts (``[vllm]`` extra).

Tested against a stand-in ``vllm`` module only (no GPU where it was written): the mapping of
parameters and outputs is checked, the engine itself was not run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.interfaces import Generation, GenerationRequest, SamplingParams
from rtlforge.generation.base import GenerationError, make_generation
from rtlforge.generation.local import (
    LocalGenerator,
    batched,
    check_model_dir,
    render_prompt,
    require,
    wants_chat,
)

VLLM_HINT = "pip install 'rtlforge[vllm]'"


class VLLMGenerator(LocalGenerator):
    """Sample with ``vllm.LLM`` from a local model directory.

    ``adapter`` enables LoRA in the engine and sends every request through that adapter
    (``max_lora_rank`` must be at least the adapter's rank). ``engine_args`` are passed to
    ``vllm.LLM`` unchanged, for anything not covered here. Prompts are rendered with the model's
    chat template (unless ``chat_template=False``) so both local generators see the same text.
    """

    name: ClassVar[str] = "vllm"

    def __init__(
        self,
        model: str | Path,
        *,
        adapter: str | Path | None = None,
        adapter_name: str = "adapter",
        max_lora_rank: int = 16,
        dtype: str = "auto",
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.9,
        max_model_len: int | None = None,
        seed: int = 0,
        batch_size: int | None = None,
        chat_template: bool | None = None,
        engine_args: dict[str, Any] | None = None,
        model_name: str | None = None,
    ) -> None:
        """Args:
            model: a local model directory (a ``save_pretrained`` output).
            adapter: a LoRA adapter directory; turns on vLLM's LoRA support for every request.
            adapter_name: the name the adapter is requested under (``LoRARequest``).
            max_lora_rank: vLLM's ``max_lora_rank``; at least the adapter's rank.
            dtype: the engine's dtype (``auto``, ``float16``, ``bfloat16``, ``float32``).
            tensor_parallel_size: GPUs the model is split across.
            gpu_memory_utilization: fraction of GPU memory the engine may take.
            max_model_len: the engine's context length (None: the model's).
            seed: the engine's seed.
            batch_size: requests per ``LLM.generate`` call (None: all at once); smaller lets
                ``cancel()`` stop between chunks.
            chat_template: None uses the tokenizer's template when it has one; False sends the
                system text and prompt as plain text; True requires a template.
            engine_args: more ``vllm.LLM`` keyword arguments; they win over the ones above.
            model_name: what generations and provenance record as the model (default: the
                path).
        """
        super().__init__()
        self.model_path = check_model_dir(model)
        self.adapter_path = check_model_dir(adapter, "adapter") if adapter else None
        self.adapter_name = adapter_name
        self.max_lora_rank = max_lora_rank
        self.dtype = dtype
        self.tensor_parallel_size = tensor_parallel_size
        self.gpu_memory_utilization = gpu_memory_utilization
        self.max_model_len = max_model_len
        self.seed = seed
        self.batch_size = batch_size
        self.chat_template = chat_template
        self.engine_args = dict(engine_args or {})
        self.model_name = model_name or str(self.model_path)
        self._llm: Any = None
        self._lora: Any = None
        self._vllm: Any = None
        self._lock = threading.Lock()

    def load(self) -> None:
        """Start the engine now (``generate`` does it on first use); it holds the GPU."""
        with self._lock:
            if self._scope.closed:
                raise GenerationError("the generator is closed")
            if self._llm is None:
                self._start()

    def _release(self) -> None:
        # vLLM frees GPU memory only when the engine is garbage-collected; drop every reference.
        with self._lock:
            self._llm = None
        import gc

        gc.collect()

    def _start(self) -> None:
        vllm = require("vllm", VLLM_HINT)
        args: dict[str, Any] = {
            "model": str(self.model_path),
            "dtype": self.dtype,
            "tensor_parallel_size": self.tensor_parallel_size,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "seed": self.seed,
        }
        if self.max_model_len is not None:
            args["max_model_len"] = self.max_model_len
        if self.adapter_path is not None:
            from vllm.lora.request import LoRARequest

            args.update(enable_lora=True, max_lora_rank=self.max_lora_rank)
            # Positional: the path keyword was renamed across vLLM releases.
            self._lora = LoRARequest(self.adapter_name, 1, str(self.adapter_path))
        args.update(self.engine_args)
        try:
            self._llm = vllm.LLM(**args)
        except (OSError, ValueError, RuntimeError) as exc:
            raise GenerationError(f"vLLM could not start on {str(self.model_path)!r}: "
                                  f"{type(exc).__name__}: {exc}") from exc
        self._vllm = vllm

    def sampling_params(self, params: SamplingParams) -> Any:
        """The ``vllm.SamplingParams`` a call uses (public so the mapping can be inspected)."""
        vllm = self._vllm or require("vllm", VLLM_HINT)
        return vllm.SamplingParams(
            n=params.n,
            temperature=params.temperature,
            top_p=params.top_p,
            max_tokens=params.max_tokens,
            seed=params.seed,
            stop=list(params.stop) or None,
        )

    def generate(
        self, requests: Sequence[GenerationRequest], params: SamplingParams
    ) -> list[list[Generation]]:
        with self._scope.call() as token:
            self.load()
            tokenizer = self._llm.get_tokenizer()
            chat = wants_chat(tokenizer, self.chat_template)
            sampling = self.sampling_params(params)
            done: list[list[Generation]] = []
            for chunk in batched(requests, self.batch_size):
                self._stop_if_cancelled(token, done)
                # Token ids, not text: a templated prompt already holds its BOS, and vLLM would
                # add a second one when it tokenizes text itself.
                prompts = [
                    {"prompt_token_ids": tokenizer(render_prompt(tokenizer, r, chat),
                                                   add_special_tokens=not chat).input_ids}
                    for r in chunk
                ]
                start = time.perf_counter()
                outputs = self._llm.generate(prompts, sampling, lora_request=self._lora,
                                             use_tqdm=False)
                latency = time.perf_counter() - start
                results = [self._convert(r, out, latency)
                           for r, out in zip(chunk, outputs, strict=True)]
                self._record(results, latency)
                done.extend(results)
            return done

    def _convert(self, request: GenerationRequest, out: Any, latency: float) -> list[Generation]:
        meta = {"adapter": str(self.adapter_path)} if self.adapter_path else {}
        return [
            make_generation(
                c.text, generator=self.name, request=request, sample_index=j,
                model=self.model_name, prompt_tokens=len(out.prompt_token_ids or ()),
                completion_tokens=len(c.token_ids), latency_s=latency,
                finish_reason=c.finish_reason, metadata=meta,
            )
            for j, c in enumerate(out.outputs)
        ]


@hookimpl
def register_generators(register: Register) -> None:
    register(VLLMGenerator)
