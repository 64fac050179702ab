"""A tiny, randomly initialised causal LM built offline, for tests and examples.

Tests of generators and trainers need a real Hugging Face model directory, but no weights can be
downloaded in CI or on air-gapped machines. This builds one from scratch in about a second: a
byte-level BPE tokenizer trained on local Verilog, and a Llama-style model with random weights.
Its outputs are gibberish; what matters is that every code path (tokenizer, chat template,
padding, sampling, adapters, saving) is the real one.

A Llama config is used on purpose: for some architectures (e.g. Qwen2) ``AutoTokenizer`` swaps
in the architecture's own tokenizer class, and the token ids stop matching the trained vocabulary.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

#: Bump when the on-disk layout or the recipe changes, so cached builds are rebuilt.
_RECIPE_VERSION = 1
_STAMP = "rtlforge-tiny-model.json"

PAD, EOS, BOS = "<|pad|>", "<|endoftext|>", "<|startoftext|>"
IM_START, IM_END = "<|im_start|>", "<|im_end|>"
SPECIAL_TOKENS = (PAD, EOS, BOS, IM_START, IM_END)

#: ChatML; generation stops at the end-of-turn token, which is why IM_END is also an eos id.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

#: Used when the example tasks are not next to the package (an installed wheel).
_BUILTIN_CORPUS = (
    "module and2(input a, input b, output y);\n  assign y = a & b;\nendmodule\n",
    "module mux2(input [7:0] a, input [7:0] b, input sel, output [7:0] y);\n"
    "  assign y = sel ? b : a;\nendmodule\n",
    "module counter(input clk, input rst, input en, output reg [7:0] q);\n"
    "  always @(posedge clk) begin\n    if (rst) q <= 8'd0;\n    else if (en) q <= q + 8'd1;\n"
    "  end\nendmodule\n",
    "module adder #(parameter W = 8) (input [W-1:0] a, b, output [W:0] s);\n"
    "  assign s = a + b;\nendmodule\n",
    "module dff(input wire clk, input wire d, output reg q);\n"
    "  always @(posedge clk) q <= d;\nendmodule\n",
    "module shift(input clk, input din, output reg [3:0] sr);\n"
    "  always @(posedge clk) sr <= {sr[2:0], din};\nendmodule\n",
    "module enc(input [3:0] x, output reg [1:0] y);\n  always @* begin\n    casez (x)\n"
    "      4'b1???: y = 2'd3;\n      4'b01??: y = 2'd2;\n      4'b001?: y = 2'd1;\n"
    "      default: y = 2'd0;\n    endcase\n  end\nendmodule\n",
)


#: The bundled tasks whose Verilog trains the tiny tokenizer. A fixed list: a task added to the
#: examples must not change every tiny model, and with it every test calibrated on one (adding
#: add32 once moved the PPO learning test below its threshold).
CORPUS_TASKS = ("add8_carry", "cmp8s", "counter8_en", "mul8u", "mux4", "popcount16", "prio_enc8",
                "ram16x8", "regfile8x16", "rv_accum4", "seq_det_1011", "shift_reg8",
                "skid_buffer", "sync_fifo8", "traffic_light")


def default_corpus() -> list[str]:
    """Verilog from :data:`CORPUS_TASKS` of the bundled examples (a checkout's or the wheel's),
    else a few built-in snippets."""
    from rtlforge.examples import examples_dir

    try:
        tasks = examples_dir() / "tasks"
    except FileNotFoundError:
        return list(_BUILTIN_CORPUS)
    files = sorted(p for name in CORPUS_TASKS for p in (tasks / name).glob("*")
                   if p.suffix in (".v", ".sv") and p.is_file())
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in files]
    return texts or list(_BUILTIN_CORPUS)


def _build_key(corpus: list[str], **params: int) -> dict[str, object]:
    digest = hashlib.sha256()
    for text in corpus:
        digest.update(text.encode("utf-8", "surrogatepass") + b"\0")
    return {"recipe": _RECIPE_VERSION, "corpus_sha256": digest.hexdigest(), **params}


def _cached(out: Path, key: dict[str, object]) -> bool:
    stamp = out / _STAMP
    try:
        return json.loads(stamp.read_text(encoding="utf-8")) == key
    except (OSError, ValueError):
        return False


def build_tiny_model(
    out_dir: str | Path,
    *,
    corpus: Iterable[str] | None = None,
    vocab_size: int = 512,
    hidden: int = 128,
    layers: int = 2,
    heads: int = 4,
    seed: int = 0,
) -> Path:
    """Build (or reuse) a tiny Llama-style model + tokenizer in ``out_dir``; return its path.

    The directory loads with ``AutoModelForCausalLM`` / ``AutoTokenizer``, has a ChatML chat
    template and pad/eos tokens, and is reused as is when it already holds a build with the same
    corpus and parameters. ``vocab_size`` is an upper bound: a small corpus yields fewer merges
    (the model's vocabulary always equals the tokenizer's). Needs the ``[train]`` extra.
    """
    texts = list(default_corpus() if corpus is None else corpus)
    if not texts:
        raise ValueError("the tokenizer corpus is empty")
    if hidden % heads:
        raise ValueError(f"hidden ({hidden}) must be a multiple of heads ({heads})")
    out = Path(out_dir)
    key = _build_key(texts, vocab_size=vocab_size, hidden=hidden, layers=layers, heads=heads,
                     seed=seed)
    if _cached(out, key):
        return out

    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    (out / _STAMP).unlink(missing_ok=True)  # a half-written build must never look cached

    # Byte-level BPE: every string round-trips, so random generations still decode.
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    ))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, pad_token=PAD, eos_token=EOS, bos_token=BOS,
        additional_special_tokens=[IM_START, IM_END], clean_up_tokenization_spaces=False,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    ids = {tok: tokenizer.convert_tokens_to_ids(tok) for tok in SPECIAL_TOKENS}

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        pad_token_id=ids[PAD],
        bos_token_id=ids[BOS],
        eos_token_id=ids[EOS],
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = ids[PAD]
    model.generation_config.bos_token_id = ids[BOS]
    model.generation_config.eos_token_id = [ids[EOS], ids[IM_END]]
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / _STAMP).write_text(json.dumps(key, indent=2) + "\n", encoding="utf-8")
    return out
