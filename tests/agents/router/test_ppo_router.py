"""PPO pieces: GAE against its definition, the action mapping, the router with a checkpoint."""

from __future__ import annotations

import pytest

from rtlforge.agents.models import AgentAction, Focus, RouterContext
from rtlforge.agents.router.actions import from_action, to_action
from rtlforge.agents.router.policy import PPORouter, gae
from rtlforge.core.errors import ConfigError


def test_gae_on_a_three_step_trajectory() -> None:
    # Hand-computed from delta_t = r_t + g V_{t+1} (1 - d_t) - V_t, A_t = delta_t + g l A_{t+1}:
    # r = (1, 0, 2), V = (0.5, 1.0, 1.5), done only at t=2, g = 0.9, l = 0.5
    # delta_2 = 2 - 1.5 = 0.5                A_2 = 0.5
    # delta_1 = 0 + 0.9*1.5 - 1.0 = 0.35     A_1 = 0.35 + 0.45*0.5 = 0.575
    # delta_0 = 1 + 0.9*1.0 - 0.5 = 1.4      A_0 = 1.4 + 0.45*0.575 = 1.65875
    adv, ret = gae([1.0, 0.0, 2.0], [0.5, 1.0, 1.5], [False, False, True], gamma=0.9, lam=0.5)
    assert adv == pytest.approx([1.65875, 0.575, 0.5])
    assert ret == pytest.approx([2.15875, 1.575, 2.0])


def test_outputs_map_onto_the_documented_ranges() -> None:
    low = to_action(0, 0, [0.0] * 7)
    high = to_action(3, 4, [1.0] * 7)
    assert (low.agent, low.focus, low.temperature, low.max_tokens, low.retrieval_k,
            low.retry_budget) == ("genius", Focus.FULL, 0.1, 256, 3, 0.0)
    assert not (low.lint_focus or low.timing_focus or low.area_focus)
    assert (high.agent, high.focus, high.temperature, high.max_tokens, high.retrieval_k,
            high.retry_budget) == ("optimize", Focus.ARCHITECTURE, 1.0, 4096, 20, 1.0)
    assert high.lint_focus and high.timing_focus and high.area_focus


def test_an_action_round_trips_through_its_encoding() -> None:
    action = AgentAction(agent="debug", focus=Focus.ERROR, temperature=0.55, max_tokens=2176,
                         retrieval_k=8, retry_budget=0.25, timing_focus=True)
    enc = from_action(action)
    back = to_action(enc.agent, enc.focus, enc.units)
    assert back.model_dump(exclude={"reason"}) == action.model_dump(exclude={"reason"})
    defaults = from_action(AgentAction(agent="genius"))  # None: the paper's genius defaults
    assert to_action(defaults.agent, defaults.focus, defaults.units).retrieval_k == 15


def test_the_untrained_router_is_the_heuristic_warm_up() -> None:
    action = PPORouter().decide(RouterContext(task_id="t", spec="An AND gate."),
                                ("genius", "fast", "debug", "optimize"))
    assert action.agent == "fast" and action.reason.startswith("ppo (untrained): heuristic")
    with pytest.raises(ConfigError, match="no checkpoint"):
        PPORouter(path="/nonexistent/router")


def test_a_saved_policy_loads_and_decides_among_the_offered_agents(tmp_path) -> None:
    torch = pytest.importorskip("torch")
    from rtlforge.agents.router.nets import ActorCritic, save_router

    torch.manual_seed(0)
    net = ActorCritic(hidden=16)
    with torch.no_grad():
        net.agent_head.bias.copy_(torch.tensor([5.0, 0.0, 0.0, 0.0]))  # prefers genius
    save_router(tmp_path / "ckpt", net, router="ppo", step=1)
    router = PPORouter(path=str(tmp_path / "ckpt"))
    ctx = RouterContext(task_id="t", spec="An AND gate.")
    assert router.decide(ctx, ("genius", "fast")).agent == "genius"
    assert router.decide(ctx, ("fast", "debug")).agent in ("fast", "debug")  # genius masked
    assert len(router.state(ctx)) == 168
    with pytest.raises(ConfigError, match="not 'mpc'"):
        from rtlforge.agents.router.nets import load_router

        load_router(tmp_path / "ckpt", "mpc")
