"""PPO trainer: the arithmetic by hand, the plumbing on the tiny model, and two learning runs.

The random-weight tiny model cannot be taught much by a LoRA adapter alone: its tied embeddings
are so small that no adapter lifts one token above a few percent. The learning tests therefore
warm-start it with a few full fine-tuning steps on four short modules (one prompt), so the policy
samples a mixture of them; PPO must then move the mixture towards what the reward prefers.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from rtlforge.core.hookspecs import Register, hookimpl  # noqa: E402
from rtlforge.core.interfaces import Reward  # noqa: E402
from rtlforge.core.plugins import PluginHost  # noqa: E402
from rtlforge.trainers.metrics import read_metrics  # noqa: E402
from rtlforge.trainers.ppo import (  # noqa: E402
    PPOConfig,
    PPOTrainer,
    clipped_policy_loss,
    clipped_value_loss,
    gae,
    masked_whiten,
    shape_rewards,
)

torch.set_num_threads(1)

PROMPT = "Write a two-input gate."
MODULES = (
    "module and2(input a, input b, output y);\n  assign y = a & b;\nendmodule\n",
    "module or2(input a, input b, output y);\n  assign y = a | b;\nendmodule\n",
    "module inv(input a, output y);\n  assign y = ~a;\nendmodule\n",
    "module dff(input c, input d, output reg q);\n  always @(posedge c) q <= d;\nendmodule\n",
)


# --------------------------------------------------------------------------------------------
# fixtures: rewards registered in-process, the tiny model, the warm-started tiny model
# --------------------------------------------------------------------------------------------


class ScriptedReward(Reward):
    """A reward computed by a Python function set per test (via the class attribute)."""

    name: ClassVar[str] = "test-scripted"
    fn: ClassVar[Callable[[Sequence[str]], list[float | None]]] = staticmethod(
        lambda completions: [0.0] * len(completions))

    def score(self, prompts: Sequence[str], completions: Sequence[str],
              **columns: Sequence[Any]) -> list[float | None]:
        return type(self).fn(completions)


class _Plugin:
    @hookimpl
    def register_rewards(self, register: Register) -> None:
        register(ScriptedReward)


def scripted_host(fn: Callable[[Sequence[str]], list[float | None]]) -> PluginHost:
    ScriptedReward.fn = staticmethod(fn)  # type: ignore[assignment]
    return PluginHost(load_entrypoints=False, plugins=[("test-ppo", _Plugin())])


@pytest.fixture(scope="module")
def tiny(tiny_model: Path) -> Path:
    return tiny_model  # the session's tiny model, from rtlforge.testing


@pytest.fixture(scope="module")
def warm(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model fully fine-tuned to answer PROMPT with one of MODULES (about 2 s)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny)
    model = AutoModelForCausalLM.from_pretrained(tiny)
    prompt = tok.apply_chat_template([{"role": "user", "content": PROMPT}],
                                     add_generation_prompt=True, tokenize=False)
    head = tok(prompt, add_special_tokens=False).input_ids
    seqs = [head + tok(m + "<|im_end|>", add_special_tokens=False).input_ids for m in MODULES]
    width = max(map(len, seqs))
    ids = torch.tensor([s + [tok.pad_token_id] * (width - len(s)) for s in seqs])
    labels = ids.clone()
    labels[:, : len(head)] = -100
    labels[ids == tok.pad_token_id] = -100
    torch.manual_seed(0)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(150):
        loss = model(input_ids=ids, attention_mask=(ids != tok.pad_token_id).long(),
                     labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    out = tmp_path_factory.mktemp("ppo") / "warm"
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def make_config(out: Path, model: Path, **overrides: Any) -> PPOConfig:
    data: dict[str, Any] = {
        "out_dir": str(out), "model": {"path": str(model)}, "steps": 3, "seed": 0,
        "reward": {"name": "test-scripted"}, "prompts": [{"prompt": PROMPT}],
        "batch_size": 4, "minibatch_size": 2, "max_new_tokens": 6, "ppo_epochs": 2,
    }
    data.update(overrides)
    return PPOConfig.model_validate(data)


# --------------------------------------------------------------------------------------------
# arithmetic, by hand
# --------------------------------------------------------------------------------------------


def test_gae_matches_hand_computation() -> None:
    rewards = torch.tensor([[0.0, 0.0, 1.0], [0.0, 2.0, 5.0]])
    values = torch.tensor([[0.5, 0.2, 0.1], [1.0, 1.0, 9.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    adv, ret = gae(rewards, values, mask, gamma=0.9, lam=0.8)
    # row 0: d2 = 1 - .1 = .9; d1 = .9*.1 - .2 = -.11; d0 = .9*.2 - .5 = -.32; gl = .72
    a2 = 0.9
    a1 = -0.11 + 0.72 * a2
    a0 = -0.32 + 0.72 * a1
    # row 1 ends at t=1 (the padded step's reward and value are ignored)
    b1 = 2.0 - 1.0
    b0 = 0.9 * 1.0 - 1.0 + 0.72 * b1
    expected = torch.tensor([[a0, a1, a2], [b0, b1, 0.0]])
    torch.testing.assert_close(adv, expected)
    torch.testing.assert_close(ret, (expected + values) * mask)


def test_clipped_policy_loss_matches_hand_computation() -> None:
    ratios = torch.tensor([[1.5, 0.5, 1.1]])
    old = torch.tensor([[-1.0, -2.0, -0.5]])
    new = old + ratios.log()
    adv = torch.tensor([[1.0, -1.0, 2.0]])
    mask = torch.ones(1, 3)
    loss, clipfrac, approx_kl = clipped_policy_loss(new, old, adv, mask, clip=0.2)
    # per token max(-A r, -A clip(r)): max(-1.5, -1.2) = -1.2 (clipped), max(.5, .8) = .8
    # (clipped), max(-2.2, -2.2) = -2.2 (not clipped)
    assert loss.item() == pytest.approx((-1.2 + 0.8 - 2.2) / 3)
    assert clipfrac.item() == pytest.approx(2 / 3)
    k3 = [(r - 1) - math.log(r) for r in (1.5, 0.5, 1.1)]
    assert approx_kl.item() == pytest.approx(sum(k3) / 3, rel=1e-5)
    # masked tokens count for nothing
    loss_m, _, _ = clipped_policy_loss(new, old, adv, torch.tensor([[1.0, 1.0, 0.0]]), 0.2)
    assert loss_m.item() == pytest.approx((-1.2 + 0.8) / 2)


def test_clipped_value_loss_matches_hand_computation() -> None:
    values, old = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.5, 0.0]])
    returns = torch.tensor([[2.0, 1.0]])
    loss, clipfrac = clipped_value_loss(values, old, returns, torch.ones(1, 2), clip=0.2)
    # token 0: clipped value .7 -> max((1-2)^2, (.7-2)^2) = 1.69; token 1: 1
    assert loss.item() == pytest.approx(0.5 * (1.69 + 1.0) / 2)
    assert clipfrac.item() == pytest.approx(0.5)


def test_whitening_does_not_scale_up_when_told_not_to() -> None:
    x, mask = torch.tensor([[1.0, 1.02, 7.0]]), torch.tensor([[1.0, 1.0, 0.0]])
    torch.testing.assert_close(masked_whiten(x, mask, scale=False),
                               torch.tensor([[-0.01, 0.01, 0.0]]))
    torch.testing.assert_close(masked_whiten(x, mask), torch.tensor([[-1.0, 1.0, 0.0]]),
                               atol=1e-4, rtol=0)


def test_kl_shaping_puts_the_score_on_the_last_real_token() -> None:
    logp = torch.tensor([[-1.0, -2.0, -3.0], [-1.0, -1.0, -7.0]])
    ref = torch.tensor([[-1.5, -2.0, -2.0], [-1.2, -0.5, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    rewards, kl = shape_rewards(logp, ref, mask, torch.tensor([1.0, 2.0]), beta=0.1)
    torch.testing.assert_close(kl, torch.tensor([[0.5, 0.0, -1.0], [0.2, -0.5, 0.0]]))
    torch.testing.assert_close(rewards, torch.tensor([[-0.05, 0.0, 1.1], [-0.02, 2.05, 0.0]]))


# --------------------------------------------------------------------------------------------
# plumbing on the tiny model
# --------------------------------------------------------------------------------------------


def test_importing_the_module_does_not_import_torch() -> None:
    code = ("import sys, rtlforge.trainers.ppo; "
            "sys.exit(1 if {'torch', 'transformers', 'peft'} & set(sys.modules) else 0)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_abstained_samples_are_dropped_and_counted(tmp_path: Path, tiny: Path) -> None:
    calls: list[int] = []

    def half_abstain(completions: Sequence[str]) -> list[float | None]:
        calls.append(len(completions))
        return [None if i % 2 else 1.0 for i in range(len(completions))]

    trainer = PPOTrainer(make_config(tmp_path, tiny), host=scripted_host(half_abstain))
    batch, stats = trainer.rollout()
    assert batch is not None and calls == [4]
    assert stats["abstained"] == 2 and len(batch.completions) == 2
    assert batch.input_ids.shape[0] == 2 and batch.rewards == [1.0, 1.0]
    assert stats["reward_mean"] == 1.0  # the abstentions are not zeros


def test_all_abstained_skips_the_update(tmp_path: Path, tiny: Path) -> None:
    trainer = PPOTrainer(make_config(tmp_path, tiny, steps=1),
                         host=scripted_host(lambda cs: [None] * len(cs)))
    before = [p.detach().clone() for p in trainer.params]
    record = trainer.train()
    assert record["abstained"] == 4 and record["reward_mean"] is None
    assert "policy_loss" not in record
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.params, strict=True))
    (line,) = read_metrics(tmp_path / "metrics.jsonl")
    assert line["step"] == 1 and line["reward_mean"] is None and line["abstained"] == 4


def test_reference_is_the_base_model_with_shared_weights(tmp_path: Path, tiny: Path) -> None:
    from transformers import AutoModelForCausalLM

    trainer = PPOTrainer(make_config(tmp_path, tiny, steps=2, learning_rate=1e-2),
                         host=scripted_host(lambda cs: [float(len(c)) for c in cs]))
    trainer.train()
    batch, _ = trainer.rollout()
    assert batch is not None
    ref = trainer.reference_logits(batch.input_ids, batch.attention_mask, batch.prompt_len)
    with torch.no_grad():
        policy, _ = trainer._forward(batch.input_ids, batch.attention_mask, batch.prompt_len)
        base = AutoModelForCausalLM.from_pretrained(tiny).eval()
        positions = (batch.attention_mask.cumsum(-1) - 1).clamp(min=0)
        expected = base(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                        position_ids=positions).logits[:, batch.prompt_len - 1: -1]
    mask = batch.mask.bool()
    torch.testing.assert_close(ref[mask], expected[mask] / trainer.config.temperature)
    assert not torch.allclose(policy[mask], ref[mask])  # the adapter did learn something
    # One copy of the weights: the trainer holds no other model, and the parameter count is
    # base + LoRA, with every base weight frozen (shared by the policy and the reference).
    modules = [v for v in vars(trainer).values() if isinstance(v, torch.nn.Module)]
    assert modules == [trainer.model, trainer.value_head]
    n_base = sum(p.numel() for p in base.parameters())
    n_lora = sum(p.numel() for n, p in trainer.model.named_parameters() if "lora_" in n)
    assert sum(p.numel() for p in trainer.model.parameters()) == n_base + n_lora
    assert all(not p.requires_grad for n, p in trainer.model.named_parameters()
               if "lora_" not in n)


def test_kill_and_resume_matches_an_uninterrupted_run(tmp_path: Path, tiny: Path) -> None:
    def reward(completions: Sequence[str]) -> list[float | None]:
        return [sum(ch == " " for ch in c) / max(len(c), 1) for c in completions]

    overrides = {"steps": 4, "checkpoint": {"every": 2}, "learning_rate": 1e-2}
    full = PPOTrainer(make_config(tmp_path / "full", tiny, **overrides),
                      host=scripted_host(reward))
    full.train()

    class Killed(Exception):
        pass

    def kill_at_3(record: Any) -> None:
        if record["step"] == 3:
            raise Killed

    out = tmp_path / "killed"
    first = PPOTrainer(make_config(out, tiny, **overrides), host=scripted_host(reward),
                       progress=kill_at_3)
    with pytest.raises(Killed):
        first.train()
    assert (out / "checkpoints" / "checkpoint-2").is_dir()
    resume = {**overrides, "checkpoint": {"every": 2, "resume_from": "latest"}}
    resumed = PPOTrainer(make_config(out, tiny, **resume), host=scripted_host(reward))
    assert resumed.step == 2
    resumed.train()

    a, b = read_metrics(tmp_path / "full" / "metrics.jsonl"), read_metrics(out / "metrics.jsonl")
    assert [r["step"] for r in b] == [1, 2, 3, 4]
    for ra, rb in zip(a, b, strict=True):
        for key in ("reward_mean", "kl", "policy_loss", "value_loss", "entropy"):
            assert rb[key] == pytest.approx(ra[key], rel=1e-4, abs=1e-6), (ra["step"], key)
    for pa, pb in zip(full.params, resumed.params, strict=True):
        torch.testing.assert_close(pa, pb, rtol=1e-4, atol=1e-6)
    assert (out / "final" / "adapter" / "adapter_model.safetensors").is_file()


# --------------------------------------------------------------------------------------------
# learning
# --------------------------------------------------------------------------------------------


def _curve(path: Path) -> list[float]:
    return [r["reward_mean"] for r in read_metrics(path / "metrics.jsonl")]


def test_learns_a_synthetic_preference(tmp_path: Path, warm: Path) -> None:
    """Reward 1 for choosing the ``or2`` module (one of four the warm model offers), else 0."""
    host = scripted_host(lambda cs: [float(c.startswith("module or2")) for c in cs])
    trainer = PPOTrainer(make_config(tmp_path, warm, steps=12, batch_size=8, minibatch_size=4,
                                     max_new_tokens=4, ppo_epochs=4, learning_rate=3e-4),
                         host=host)
    before = trainer.evaluate(batches=4)["reward_mean"]
    trainer.train()
    after = trainer.evaluate(batches=4)["reward_mean"]
    curve = _curve(tmp_path)
    assert after >= before + 0.3, (before, after, curve)
    assert sum(curve[-3:]) / 3 > sum(curve[:3]) / 3 + 0.2, curve


@pytest.mark.slow
def test_learns_the_ast_reward(tmp_path: Path, warm: Path) -> None:
    """The real VeriSeek reward against ``and2``: the policy shifts towards that structure."""
    config = make_config(
        tmp_path, warm, steps=20, batch_size=16, minibatch_size=8, max_new_tokens=40,
        ppo_epochs=2, learning_rate=3e-4, kl_coef=0.05, temperature=0.7, reward_scale=0.1,
        reward={"name": "ast-similarity", "options": {"backend": "pyslang"}},
        prompts=[{"prompt": PROMPT, "reference": MODULES[0]}])
    trainer = PPOTrainer(config)
    before = trainer.evaluate(batches=4)["reward_mean"]
    trainer.train()
    after = trainer.evaluate(batches=4)["reward_mean"]
    curve = _curve(tmp_path)
    (tmp_path / "curve.json").write_text(json.dumps({"before": before, "after": after,
                                                     "curve": curve}))
    assert after >= before + 1.0, (before, after, curve)
    assert sum(curve[-5:]) / 5 > sum(curve[:5]) / 5 + 0.75, curve
