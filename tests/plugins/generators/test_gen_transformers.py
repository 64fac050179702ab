"""Local-model generators: ``transformers`` on a tiny offline model, ``vllm`` against a stand-in.

The tiny model has random weights, so its text is noise; the tests check the mechanics
(seeding, batching, n, stop strings, token limits, templates, adapters, errors), not quality.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest

import rtlforge.plugins.generators.transformers as gen_transformers
import rtlforge.plugins.generators.vllm as gen_vllm
from rtlforge.core.errors import RtlforgeError, ToolMissingError
from rtlforge.core.interfaces import GenerationRequest, SamplingParams
from rtlforge.core.plugins import PluginHost
from rtlforge.generation.base import GenerationCancelled, GenerationError
from rtlforge.generation.local import ExtraMissingError, ModelLoadError
from rtlforge.plugins.generators.transformers import TransformersGenerator
from rtlforge.plugins.generators.vllm import VLLMGenerator


def _have(*modules: str) -> bool:
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except (ImportError, ValueError):  # a module blocked via sys.modules[name] = None
        return False


needs_train = pytest.mark.skipif(
    not _have("torch", "transformers", "tokenizers"),
    reason="needs the [train] extra (torch, transformers): pip install 'rtlforge[train]'",
)
needs_peft = pytest.mark.skipif(
    not _have("peft"), reason="needs peft from the [train] extra: pip install 'rtlforge[train]'"
)

PROMPTS = ["Write an 8-bit adder.", "mux", "A counter module with an enable input, please."]


@pytest.fixture(scope="session")
def tiny_model(tiny_model: Path) -> Path:
    """rtlforge.testing's tiny model, with torch on one thread."""
    import torch

    torch.set_num_threads(1)  # 10-40x faster than the default on small CPU boxes
    return tiny_model


@pytest.fixture(scope="session")
def generator(tiny_model: Path) -> TransformersGenerator:
    gen = TransformersGenerator(tiny_model, device="cpu", num_threads=1)
    gen.load()
    return gen


def _texts(result: list[list[Any]]) -> list[list[str]]:
    return [[g.text for g in samples] for samples in result]


def _requests(prompts: list[str] = PROMPTS) -> list[GenerationRequest]:
    return [GenerationRequest(prompt=p) for p in prompts]


# ------------------------------------------------------------------------------ import cost


def test_importing_plugins_does_not_load_torch() -> None:
    code = (
        "import sys, rtlforge, rtlforge.plugins.generators.transformers, "
        "rtlforge.plugins.generators.vllm, "
        "rtlforge.testing\n"
        "heavy = [m for m in ('torch', 'transformers', 'peft', 'vllm') if sys.modules.get(m)]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_both_generators_register() -> None:
    host = PluginHost(load_entrypoints=False,
                      plugins=[("transformers", gen_transformers), ("vllm", gen_vllm)])
    assert {"transformers", "vllm"} <= set(host.names("generator"))
    assert host.get("generator", "transformers") is TransformersGenerator
    assert host.get("generator", "vllm") is VLLMGenerator


# ------------------------------------------------------------------------------ tiny model


@needs_train
def test_tiny_model_builds_loads_and_is_cached(tiny_model: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rtlforge.testing import build_tiny_model

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    tok = AutoTokenizer.from_pretrained(tiny_model)
    assert model.config.model_type == "llama"
    assert 300_000 < model.num_parameters() < 500_000
    assert len(tok) == model.config.vocab_size == 512
    assert tok.pad_token_id is not None and tok.eos_token_id is not None
    assert tok.chat_template
    text = "module m(input a, output y); assign y = ~a; endmodule\n"
    assert tok.decode(tok(text).input_ids) == text  # byte-level: lossless round trip

    weights = tiny_model / "model.safetensors"
    before = weights.stat().st_mtime_ns
    assert build_tiny_model(tiny_model) == tiny_model
    assert weights.stat().st_mtime_ns == before  # same recipe: reused, not rebuilt

    other = build_tiny_model(tmp_path / "m", corpus=["module a; endmodule\n"] * 4, vocab_size=300,
                             hidden=32, layers=1, heads=2, seed=3)
    assert AutoModelForCausalLM.from_pretrained(other).num_parameters() < 100_000


# ------------------------------------------------------------------------------ sampling


@needs_train
def test_seeded_batch_is_deterministic(generator: TransformersGenerator) -> None:
    params = SamplingParams(n=2, temperature=1.0, max_tokens=16, seed=7)
    first = generator.generate(_requests(), params)
    second = generator.generate(_requests(), params)
    assert [len(samples) for samples in first] == [2, 2, 2]
    assert _texts(first) == _texts(second)
    assert _texts(first) != _texts(generator.generate(_requests(), params.model_copy(
        update={"seed": 8})))
    for samples in first:
        assert samples[0].text != samples[1].text  # n samples are drawn, not copied
        for g in samples:
            assert g.generator == "transformers"
            assert g.prompt_tokens and g.prompt_tokens > 0
            assert g.completion_tokens is not None and 0 < g.completion_tokens <= 16
            assert g.latency_s is not None and g.latency_s > 0
            assert g.finish_reason in ("stop", "length")


@needs_train
def test_unseeded_calls_differ_and_seeding_leaves_global_rng_alone(
    generator: TransformersGenerator,
) -> None:
    import torch

    params = SamplingParams(n=1, temperature=1.0, max_tokens=16)
    assert _texts(generator.generate(_requests(), params)) != _texts(
        generator.generate(_requests(), params))
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    generator.generate(_requests(), params.model_copy(update={"seed": 1}))
    assert torch.equal(torch.rand(3), expected)


@needs_train
def test_max_tokens_is_respected(generator: TransformersGenerator) -> None:
    result = generator.generate(_requests(), SamplingParams(n=2, temperature=1.0, max_tokens=5,
                                                            seed=0))
    for g in (g for samples in result for g in samples):
        assert g.completion_tokens is not None and g.completion_tokens <= 5
        if g.finish_reason == "length":
            assert g.completion_tokens == 5
    assert any(g.finish_reason == "length" for samples in result for g in samples)


@needs_train
def test_stop_string_truncates_and_reports_stop(generator: TransformersGenerator) -> None:
    request = _requests(PROMPTS[:1])
    params = SamplingParams(n=1, temperature=1.0, max_tokens=48, seed=3)
    free = generator.generate(request, params)[0][0]
    stop = next(ch for ch in free.text[4:] if ch.isascii() and ch.isalnum())
    cut = generator.generate(request, params.model_copy(update={"stop": (stop,)}))[0][0]
    assert cut.text == free.text[: free.text.index(stop)]
    assert cut.finish_reason == "stop"
    assert cut.completion_tokens is not None and free.completion_tokens is not None
    assert cut.completion_tokens < free.completion_tokens  # generation halted early


@needs_train
def test_greedy_repeats_one_answer(generator: TransformersGenerator) -> None:
    result = generator.generate(_requests(), SamplingParams(n=3, temperature=0.0, max_tokens=8))
    assert all(len(set(samples)) == 1 and len(samples) == 3 for samples in _texts(result))


@needs_train
def test_chat_template_vs_raw_prompt(tiny_model: Path, generator: TransformersGenerator,
                                     tmp_path: Path) -> None:
    params = SamplingParams(n=1, temperature=1.0, max_tokens=12, seed=5)
    requests = [GenerationRequest(prompt=p, system="You write Verilog.") for p in PROMPTS]
    chat = generator.generate(requests, params)
    raw_gen = TransformersGenerator(tiny_model, device="cpu", chat_template=False)
    raw = raw_gen.generate(requests, params)
    # The template wraps the prompt in role markers, so the model sees more tokens.
    assert all(c[0].prompt_tokens > r[0].prompt_tokens  # type: ignore[operator]
               for c, r in zip(chat, raw, strict=True))

    plain = tmp_path / "no-template"
    shutil.copytree(tiny_model, plain)
    (plain / "chat_template.jinja").unlink(missing_ok=True)
    config = json.loads((plain / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (plain / "tokenizer_config.json").write_text(json.dumps(config))
    # Without a template the default falls back to raw prompts: same text as forcing raw.
    fallback = TransformersGenerator(plain, device="cpu").generate(requests, params)
    assert _texts(fallback) == _texts(raw)
    with pytest.raises(GenerationError, match="no chat template"):
        TransformersGenerator(plain, device="cpu", chat_template=True).generate(requests, params)


@needs_train
@needs_peft
def test_lora_adapter_loads_and_changes_outputs(tiny_model: Path,
                                                generator: TransformersGenerator,
                                                tmp_path: Path) -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(tiny_model)
    # init_lora_weights=False: random B too, so the adapter is not a no-op.
    lora = get_peft_model(base, LoraConfig(r=4, lora_alpha=16, target_modules=["q_proj", "v_proj"],
                                           init_lora_weights=False))
    lora.save_pretrained(tmp_path / "adapter")

    params = SamplingParams(n=2, temperature=1.0, max_tokens=12, seed=11)
    plain = generator.generate(_requests(), params)
    merged = TransformersGenerator(tiny_model, adapter=tmp_path / "adapter", device="cpu")
    unmerged = TransformersGenerator(tiny_model, adapter=tmp_path / "adapter", device="cpu",
                                     merge_adapter=False)
    with_adapter = merged.generate(_requests(), params)
    assert _texts(with_adapter) != _texts(plain)
    assert _texts(with_adapter) == _texts(merged.generate(_requests(), params))
    assert len(unmerged.generate(_requests(), params)) == 3

    with pytest.raises(ModelLoadError, match="adapter"):
        TransformersGenerator(tiny_model, adapter=tmp_path / "missing")
    with pytest.raises(ModelLoadError, match=r"adapter_config\.json"):
        TransformersGenerator(tiny_model, adapter=tiny_model)  # a model, not an adapter


@needs_train
def test_cancel_between_batches_usage_and_close(tiny_model: Path) -> None:
    gen = TransformersGenerator(tiny_model, device="cpu", batch_size=1)
    params = SamplingParams(n=2, temperature=1.0, max_tokens=8, seed=0)
    gen.cancel()  # nothing in progress: no effect on later calls
    result = gen.generate(_requests(), params)
    usage = gen.usage()
    assert (usage.requests, usage.generations, usage.cancelled) == (3, 6, 0)
    assert usage.completion_tokens == sum(g.completion_tokens or 0 for s in result for g in s)
    assert usage.prompt_tokens == sum(s[0].prompt_tokens or 0 for s in result)

    real = gen._generate_batch
    calls = 0

    def cancel_during_second(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            gen.cancel()  # the stopping criterion halts this batch; it is then dropped
        return real(*args)

    gen._generate_batch = cancel_during_second  # type: ignore[method-assign]
    with pytest.raises(GenerationCancelled) as during:
        gen.generate(_requests(), params)
    assert during.value.partial is not None and len(during.value.partial) == 1
    assert calls == 2 and gen.usage().cancelled == 1
    assert len(gen.generate(_requests(), params)) == 3  # later calls work normally

    with gen:
        pass  # leaving the context closes it
    assert not gen.loaded
    with pytest.raises(GenerationError, match="closed"):
        gen.generate(_requests(), params)


@needs_train
def test_generations_carry_model_and_extracted_candidate(tiny_model: Path,
                                                         generator: TransformersGenerator,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (g,) = generator.generate(_requests(PROMPTS[:1]), SamplingParams(n=1, max_tokens=4))[0]
    assert g.model == str(tiny_model) and g.candidate is None  # noise has no module in it
    assert "extraction_error" in g.metadata

    verilog = "module m(input a, output y);\n  assign y = a;\nendmodule\n"
    monkeypatch.setattr(generator, "_decode", lambda ids, eos, params: (verilog, 3, "stop"))
    (g,) = generator.generate(_requests(PROMPTS[:1]), SamplingParams(n=1, max_tokens=4))[0]
    assert g.candidate is not None and g.candidate.provenance is not None
    assert g.candidate.provenance.generator == "transformers"


@needs_train
def test_device_failure_is_a_typed_error(generator: TransformersGenerator,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def oom(**kwargs: Any) -> Any:
        raise RuntimeError("CUDA out of memory")

    monkeypatch.setattr(generator._model, "generate", oom)
    failures = generator.usage().failures
    with pytest.raises(GenerationError, match="out of memory"):
        generator.generate(_requests(), SamplingParams(max_tokens=4))
    assert generator.usage().failures == failures + 1


# ------------------------------------------------------------------------------ errors


def test_missing_model_path_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="does not exist"):
        TransformersGenerator(tmp_path / "nope")
    with pytest.raises(ModelLoadError, match=r"config\.json"):
        TransformersGenerator(tmp_path)
    assert issubclass(ModelLoadError, GenerationError)
    assert issubclass(GenerationError, RtlforgeError)


@needs_train
def test_invalid_model_dir_is_a_typed_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "no-such-architecture"}')
    gen = TransformersGenerator(tmp_path, device="cpu")
    with pytest.raises(ModelLoadError, match="cannot load"):
        gen.generate(_requests(), SamplingParams(max_tokens=4))


def test_missing_torch_names_the_extra(tiny_model_dir_stub: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    gen = TransformersGenerator(tiny_model_dir_stub)
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    with pytest.raises(ExtraMissingError, match=r"pip install 'rtlforge\[train\]'") as info:
        gen.generate(_requests(), SamplingParams())
    assert isinstance(info.value, ToolMissingError) and info.value.tool == "torch"


@pytest.fixture
def tiny_model_dir_stub(tmp_path: Path) -> Path:
    """A directory that passes the cheap path check (no torch needed to make it)."""
    (tmp_path / "config.json").write_text("{}")
    return tmp_path


# ------------------------------------------------------------------------------ vLLM


class _FakeTokenizer:
    """Characters as token ids; a visible chat template so rendering can be checked."""

    def __init__(self, chat_template: str | None = "fake") -> None:
        self.chat_template = chat_template
        self.calls: list[tuple[str, bool]] = []

    def apply_chat_template(self, messages: list[dict[str, str]], *, tokenize: bool,
                            add_generation_prompt: bool) -> str:
        assert not tokenize and add_generation_prompt
        return "".join(f"[{m['role']}]{m['content']}" for m in messages) + "[assistant]"

    def __call__(self, text: str, *, add_special_tokens: bool) -> types.SimpleNamespace:
        self.calls.append((text, add_special_tokens))
        return types.SimpleNamespace(input_ids=[ord(c) for c in text])


class _FakeLLM:
    instances: ClassVar[list[_FakeLLM]] = []

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.tokenizer = _FakeTokenizer()
        self.calls: list[dict[str, Any]] = []
        _FakeLLM.instances.append(self)

    def get_tokenizer(self) -> _FakeTokenizer:
        return self.tokenizer

    def generate(self, prompts: list[dict[str, Any]], sampling: Any, *, lora_request: Any = None,
                 use_tqdm: bool = True) -> list[Any]:
        self.calls.append({"prompts": prompts, "sampling": sampling, "lora": lora_request})
        return [
            types.SimpleNamespace(
                prompt_token_ids=p["prompt_token_ids"],
                outputs=[types.SimpleNamespace(text=f"out{i}.{j}", token_ids=[1] * (j + 1),
                                               finish_reason="length" if j else "stop")
                         for j in range(sampling.n)],
            )
            for i, p in enumerate(prompts)
        ]


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A stand-in ``vllm`` package: records what the generator asks the engine for."""
    vllm = types.ModuleType("vllm")
    vllm.LLM = _FakeLLM  # type: ignore[attr-defined]
    vllm.SamplingParams = lambda **kw: types.SimpleNamespace(**kw)  # type: ignore[attr-defined]
    lora = types.ModuleType("vllm.lora")
    request = types.ModuleType("vllm.lora.request")
    request.LoRARequest = lambda *args: ("LoRARequest", *args)  # type: ignore[attr-defined]
    for name, module in (("vllm", vllm), ("vllm.lora", lora), ("vllm.lora.request", request)):
        monkeypatch.setitem(sys.modules, name, module)
    _FakeLLM.instances.clear()
    return vllm


def test_vllm_maps_params_prompts_and_outputs(fake_vllm: types.ModuleType,
                                              tiny_model_dir_stub: Path) -> None:
    gen = VLLMGenerator(tiny_model_dir_stub, tensor_parallel_size=2, max_model_len=4096,
                        engine_args={"enforce_eager": True})
    params = SamplingParams(n=2, temperature=0.7, top_p=0.9, max_tokens=64, seed=5,
                            stop=("endmodule",))
    result = gen.generate([GenerationRequest(prompt="add", system="sys"),
                           GenerationRequest(prompt="mux")], params)

    (llm,) = _FakeLLM.instances
    assert llm.kwargs == {"model": str(tiny_model_dir_stub), "dtype": "auto",
                          "tensor_parallel_size": 2, "gpu_memory_utilization": 0.9, "seed": 0,
                          "max_model_len": 4096, "enforce_eager": True}
    (call,) = llm.calls
    assert vars(call["sampling"]) == {"n": 2, "temperature": 0.7, "top_p": 0.9, "max_tokens": 64,
                                      "seed": 5, "stop": ["endmodule"]}
    assert call["lora"] is None
    # Rendered with the chat template, tokenized without extra special tokens.
    assert llm.tokenizer.calls == [("[system]sys[user]add[assistant]", False),
                                   ("[user]mux[assistant]", False)]
    assert _texts(result) == [["out0.0", "out0.1"], ["out1.0", "out1.1"]]
    first = result[0][1]
    assert (first.generator, first.prompt_tokens, first.completion_tokens, first.finish_reason) \
        == ("vllm", len("[system]sys[user]add[assistant]"), 2, "length")
    assert vars(gen.sampling_params(SamplingParams()))["stop"] is None


def test_vllm_lora_raw_prompts_and_chunks(fake_vllm: types.ModuleType,
                                          tiny_model_dir_stub: Path, tmp_path: Path) -> None:
    adapter = tmp_path / "lora"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    gen = VLLMGenerator(tiny_model_dir_stub, adapter=adapter, adapter_name="rtl",
                        max_lora_rank=32, chat_template=False, batch_size=2)
    result = gen.generate(_requests(), SamplingParams(n=1))
    (llm,) = _FakeLLM.instances
    assert llm.kwargs["enable_lora"] is True and llm.kwargs["max_lora_rank"] == 32
    assert [len(c["prompts"]) for c in llm.calls] == [2, 1]
    assert all(c["lora"] == ("LoRARequest", "rtl", 1, str(adapter)) for c in llm.calls)
    assert llm.tokenizer.calls[0] == (PROMPTS[0], True)
    assert len(result) == 3

    assert gen.usage().requests == 2 and gen.usage().generations == 3
    assert result[0][0].metadata["adapter"] == str(adapter)

    real = llm.generate

    def cancel_during_first(*args: Any, **kwargs: Any) -> Any:
        gen.cancel()  # vLLM cannot be interrupted: this chunk finishes, the next never starts
        return real(*args, **kwargs)

    llm.generate = cancel_during_first  # type: ignore[method-assign]
    with pytest.raises(GenerationCancelled) as info:
        gen.generate(_requests(), SamplingParams())
    assert info.value.partial is not None and len(info.value.partial) == 2
    gen.close()
    with pytest.raises(GenerationError, match="closed"):
        gen.generate(_requests(), SamplingParams())


def test_vllm_missing_names_the_extra(tiny_model_dir_stub: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)
    gen = VLLMGenerator(tiny_model_dir_stub)
    with pytest.raises(ExtraMissingError, match=r"pip install 'rtlforge\[vllm\]'"):
        gen.generate(_requests(), SamplingParams())
    with pytest.raises(ModelLoadError):
        VLLMGenerator(tiny_model_dir_stub / "absent")
