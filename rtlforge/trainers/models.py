"""The model and tokenizer a trainer starts from: loaded from a directory or hub id, or the offline
tiny model built for tests, on the configured device and dtype, wrapped with LoRA (or QLoRA) when
the config asks for it.

torch, transformers and peft are imported inside the functions, so importing this module stays
light; a missing one is a :class:`~rtlforge.trainers.errors.TrainerInfraError` (exit code 3).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rtlforge.trainers.errors import QLoRAUnavailableError, TrainerInfraError

if TYPE_CHECKING:
    from rtlforge.trainers.config import LoraSpec, ModelConfig

__all__ = ["build_model_and_tokenizer"]


def _torch_dtype(name: str) -> Any:
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
            "auto": "auto"}[name]


def build_model_and_tokenizer(model_cfg: ModelConfig, out_dir: str | Path, *,
                              seed: int = 0) -> tuple[Any, Any]:
    """Load (or build the tiny) causal LM and its tokenizer; wrap it with LoRA when configured.

    With ``build_tiny`` the model is built in ``out_dir/base-model`` (reused when identical). The
    returned model is on ``model_cfg.device``; a pad token is guaranteed. QLoRA raises
    :class:`QLoRAUnavailableError` unless bitsandbytes and CUDA are both present.
    """
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise TrainerInfraError(f"training needs the [train] extra ({exc.name} is missing): "
                                "pip install 'rtlforge[train]'") from exc

    if model_cfg.threads is not None:
        torch.set_num_threads(model_cfg.threads)
    if model_cfg.build_tiny is not None:
        from rtlforge.testing.tiny_model import build_tiny_model

        spec = model_cfg.build_tiny
        source: str | Path = build_tiny_model(
            Path(out_dir) / "base-model", hidden=spec.hidden, layers=spec.layers,
            heads=spec.heads, vocab_size=spec.vocab_size,
            seed=spec.seed if spec.seed is not None else seed)
    else:
        source = model_cfg.path  # type: ignore[assignment]  # validated: exactly one is set

    lora = model_cfg.lora
    kwargs: dict[str, Any] = {"dtype": _torch_dtype(model_cfg.dtype)}
    if lora is not None and lora.qlora:
        kwargs.update(_qlora_kwargs(model_cfg))
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = AutoModelForCausalLM.from_pretrained(source, **kwargs)
    except OSError as exc:
        raise TrainerInfraError(f"cannot load model {source}: {exc}") from exc
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not (lora is not None and lora.qlora):  # 4-bit models are placed by device_map
        try:
            model.to(model_cfg.device)
        except (RuntimeError, AssertionError) as exc:
            raise TrainerInfraError(f"cannot use device {model_cfg.device!r}: {exc}") from exc
    if lora is not None:
        model = _apply_lora(model, lora)
    return model, tokenizer


def _qlora_kwargs(model_cfg: ModelConfig) -> dict[str, Any]:
    import importlib.util

    import torch

    missing = []
    if importlib.util.find_spec("bitsandbytes") is None:
        missing.append("the bitsandbytes package")
    if not torch.cuda.is_available():
        missing.append("a CUDA device")
    if missing:
        raise QLoRAUnavailableError(
            f"QLoRA needs {' and '.join(missing)}; use plain LoRA (lora.qlora: false) here")
    from transformers import BitsAndBytesConfig

    compute = torch.bfloat16 if model_cfg.dtype in ("bfloat16", "auto") else torch.float16
    return {"quantization_config": BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=compute), "device_map": {"": model_cfg.device}}


def _apply_lora(model: Any, lora: LoraSpec) -> Any:
    try:
        from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
    except ImportError as exc:
        raise TrainerInfraError("LoRA needs peft: pip install 'rtlforge[train]'") from exc
    if lora.qlora:
        model = prepare_model_for_kbit_training(model)
    config = LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                        target_modules=lora.target_modules, task_type="CAUSAL_LM")
    return get_peft_model(model, config)
