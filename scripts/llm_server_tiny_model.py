"""Build the tiny model that ``scripts/llm-server-test.sh`` serves with vLLM.

Run with the vLLM venv's Python (it has torch, transformers and tokenizers)::

    .venv-vllm/bin/python scripts/llm_server_tiny_model.py OUT_DIR

Uses the project's own builder, ``rtlforge/testing/tiny_model.py``: a randomly initialised
Llama-style model plus a byte-level BPE tokenizer trained on the bundled Verilog, saved with
``save_pretrained`` (reused when already built). The module is loaded by file path rather than
imported as ``rtlforge.testing.tiny_model``, because importing the ``rtlforge`` package would
pull in the SDK's own dependencies (pluggy, structlog, ...), which the vLLM venv does not have
and should not need. Prints the model directory on stdout.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
BUILDER = REPO / "rtlforge" / "testing" / "tiny_model.py"


def load_builder(path: Path = BUILDER) -> ModuleType:
    """Load ``tiny_model.py`` as a standalone module (it imports only stdlib + ML libraries)."""
    if not path.is_file():
        raise SystemExit(f"error: {path} not found; is this an rtlforge checkout?")
    spec = importlib.util.spec_from_file_location("_rtlforge_tiny_model", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"error: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def has_chat_template(model_dir: Path) -> bool:
    """Whether the saved tokenizer carries a chat template (vLLM's chat endpoint needs one)."""
    if any((model_dir / name).is_file() for name in ("chat_template.jinja", "chat_template.json")):
        return True
    cfg = model_dir / "tokenizer_config.json"
    return cfg.is_file() and bool(json.loads(cfg.read_text(encoding="utf-8")).get("chat_template"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the tiny model for the server test.")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    builder = load_builder()
    path = Path(builder.build_tiny_model(args.out_dir, seed=args.seed))
    if not has_chat_template(path):
        print(f"error: {path} has no chat template; /v1/chat/completions would fail",
              file=sys.stderr)
        return 1
    weights = sum(p.stat().st_size for p in path.glob("*.safetensors"))
    print(f"[tiny-model] {path} ({weights / 1e6:.1f} MB of weights)", file=sys.stderr)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
