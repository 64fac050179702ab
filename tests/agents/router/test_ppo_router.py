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


def _one_update(behaviour: tuple[float, float, float] | None, *, weight_shift: float = 0.0):
    """The agent and continuous heads' parameter change after one plain-SGD PPO step on a
    single transition (value and entropy terms off, so only the surrogate moves them)."""
    torch = pytest.importorskip("torch")
    from rtlforge.agents.router.nets import ActorCritic
    from rtlforge.agents.router.policy import Step, ppo_update
    from rtlforge.agents.router.trainer import PPOSettings

    torch.manual_seed(0)
    net = ActorCritic(hidden=16)
    state = tuple([0.5] * 168)
    raw = (0.1,) * 7
    if behaviour == ():  # on-policy: the behaviour log-probs are the policy's own
        with torch.no_grad():
            lp = net(torch.tensor([state])).head_log_probs(
                torch.tensor([1]), torch.tensor([2]), torch.tensor([raw]))[0].tolist()
        behaviour = (lp[0] + weight_shift, lp[1] + weight_shift, lp[2] + weight_shift)
    before = [p.detach().clone() for p in (net.agent_head.bias, net.unit_head.bias)]
    settings = PPOSettings(epochs=1, value_coef=0.0, entropy_coef=0.0)
    ppo_update(net, torch.optim.SGD(net.parameters(), lr=0.1),
               [[Step(state, 1, 2, raw, reward=100.0, behaviour=behaviour)]], settings,
               torch.Generator().manual_seed(0))
    return [(p.detach() - b) for p, b in zip((net.agent_head.bias, net.unit_head.bias),
                                             before, strict=True)]


def test_off_policy_steps_are_weighted_by_pi_old_over_mu() -> None:
    torch = pytest.importorskip("torch")
    on_agent, on_units = _one_update(())
    # behaviour 4x as likely as the policy (an epsilon pick): the surrogate weighs 1/4
    off_agent, off_units = _one_update((), weight_shift=torch.log(torch.tensor(4.0)).item())
    assert on_agent.abs().sum() > 0 and on_units.abs().sum() > 0
    assert torch.allclose(off_agent, on_agent / 4, atol=1e-6)
    assert torch.allclose(off_units, on_units / 4, atol=1e-6)
    # a deterministic behaviour (heuristic warm-up, replayed decision): the discrete heads
    # learn with weight pi_old(a), the continuous head, whose values were not sampled, not
    det_agent, det_units = _one_update(None)
    assert det_agent.abs().sum() > 0 and det_units.abs().sum() == 0
