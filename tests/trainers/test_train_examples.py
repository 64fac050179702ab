"""The shipped training examples run as documented and visibly learn (docs/training.md's curves).

The SFT -> PPO chain is run from the YAML files themselves (only the output directories are moved
to a temporary directory), so a change to an example that stops it learning fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rtlforge.core.plugins import PluginHost
from rtlforge.trainers import plugin
from rtlforge.trainers.config import load_config
from rtlforge.trainers.errors import TrainerInfraError
from rtlforge.trainers.metrics import read_metrics

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from rtlforge.trainers.sft import PairsData, load_pairs  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "train"


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost(load_entrypoints=False, plugins=[("trainers", plugin)])


def test_pairs_become_conversational_prompt_completion_rows(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"q": "Write an inverter.", "a": "module inv; endmodule"}\n\n'
                    '{"q": "Write a buffer.", "a": "module buf1; endmodule"}\n')
    rows = load_pairs(PairsData(kind="pairs", path=str(path), prompt_key="q", completion_key="a"))
    assert rows == [
        {"prompt": [{"role": "user", "content": "Write an inverter."}],
         "completion": [{"role": "assistant", "content": "module inv; endmodule"}]},
        {"prompt": [{"role": "user", "content": "Write a buffer."}],
         "completion": [{"role": "assistant", "content": "module buf1; endmodule"}]},
    ]
    plain = load_pairs(PairsData(kind="pairs", path=str(path), prompt_key="q",
                                 completion_key="a", chat=False))
    assert plain[0] == {"prompt": "Write an inverter.", "completion": "module inv; endmodule"}


def test_a_pairs_row_without_its_completion_is_named(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"prompt": "p", "completion": "c"}\n{"prompt": "p"}\n')
    with pytest.raises(TrainerInfraError, match=r"pairs.jsonl:2: .*'completion'"):
        load_pairs(PairsData(kind="pairs", path=str(path)))


def test_the_ppo_example_starts_from_the_sft_example_output(host: PluginHost) -> None:
    sft = load_config(EXAMPLES / "sft-warm.yaml", host=host)
    ppo = load_config(EXAMPLES / "ppo-ast.yaml", host=host)
    # the README/Makefile command writes step 1 to runs/sft-warm; step 2 loads its final model
    assert sft.model.lora is None  # full fine-tune: final/ holds whole weights PPO can load
    assert ppo.model.path == "runs/sft-warm/final"
    assert ppo.reward.name == "ast-similarity"


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


@pytest.mark.slow
def test_sft_then_ppo_example_learns(tmp_path: Path, host: PluginHost) -> None:
    """The chain as shipped (seed 0): the PPO reward per step rises, from parsable Verilog."""
    from rtlforge.trainers.config import create_trainer

    sft = load_config(EXAMPLES / "sft-warm.yaml", host=host)
    sft = sft.model_copy(update={"out_dir": str(tmp_path / "sft-warm")})
    create_trainer(sft, host=host).train()
    ppo = load_config(EXAMPLES / "ppo-ast.yaml", host=host)
    model = ppo.model.model_copy(update={"path": str(tmp_path / "sft-warm" / "final")})
    ppo = ppo.model_copy(update={"out_dir": str(tmp_path / "ppo-ast"), "model": model})
    create_trainer(ppo).train()  # the default host: the AST reward is a registered plugin

    curve = [r["reward_mean"] for r in read_metrics(tmp_path / "ppo-ast" / "metrics.jsonl")]
    (tmp_path / "curve.json").write_text(json.dumps(curve))
    assert len(curve) == ppo.steps
    first, last = _mean(curve[:5]), _mean(curve[-5:])
    # The AST reward: -10 no code, -5 unparsable, 10 x similarity otherwise. Starting above 0
    # means the warm model writes Verilog (the random model scores -10 on every sample); the
    # reference module scores 10 and the others 4.6-7.5 against it.
    assert first > 0, curve
    assert last >= first + 1.5, (first, last, curve)
