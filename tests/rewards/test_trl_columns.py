"""Every dataset column reaches a reward through TRL's own trainer (issue 23): VeriSeek's
``ast-similarity`` needs a ``reference`` column the adapter used to drop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rtlforge.rewards import adapters

REFERENCE = "module inv(input a, output y);\n  assign y = ~a;\nendmodule\n"


def test_the_trl_adapter_passes_every_column_but_the_trainers_own() -> None:
    fn = adapters.trl_reward("ast-similarity")
    same = f"```verilog\n{REFERENCE}```"
    scores = fn(["p", "p"], [same, "no code here"], reference=[REFERENCE, REFERENCE],
                extra=["kept", "kept"], trainer_state=object(), completion_ids=[[1], [2]],
                log_metric=print, log_extra=print)
    # identical structure scores the reward's top; no code scores below it
    assert scores[1] is not None and scores[0] is not None and scores[1] < scores[0]


def test_ast_similarity_as_a_reward_inside_trls_grpo_trainer(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    trl = pytest.importorskip("trl")
    datasets = pytest.importorskip("datasets")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rtlforge.testing.tiny_model import build_tiny_model

    source = build_tiny_model(tmp_path / "model", hidden=32, layers=1, heads=2, vocab_size=320,
                              seed=0)
    tokenizer = AutoTokenizer.from_pretrained(source)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(source)
    rows = {"prompt": ["Write an inverter:", "Write an inverter:"],
            "reference": [REFERENCE, REFERENCE]}
    seen: list[dict[str, Any]] = []
    reward = adapters.trl_reward("ast-similarity")

    def recording(prompts: list[Any], completions: list[Any], **columns: Any) -> list[Any]:
        seen.append(columns)
        return reward(prompts, completions, **columns)

    recording.__name__ = "ast_similarity"
    args = trl.GRPOConfig(output_dir=str(tmp_path / "out"), max_steps=1,
                          per_device_train_batch_size=2, num_generations=2,
                          max_completion_length=8, report_to=[], logging_steps=1,
                          use_cpu=True, save_strategy="no", seed=0)
    trainer = trl.GRPOTrainer(model=model, reward_funcs=[recording], args=args,
                              train_dataset=datasets.Dataset.from_dict(rows),
                              processing_class=tokenizer)
    trainer.train()
    assert seen and seen[0]["reference"] == [REFERENCE, REFERENCE]
    logged = [h for h in trainer.state.log_history if "rewards/ast_similarity/mean" in h]
    assert logged, trainer.state.log_history  # TRL scored the rollouts with our reward
