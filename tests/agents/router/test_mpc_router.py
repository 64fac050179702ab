"""MPC: the first action of the sequence with the best predicted return."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rtlforge.agents.router.features import STATE_DIM, STRUCTURAL_DIMS  # noqa: E402
from rtlforge.agents.router.mpc import plan  # noqa: E402


class AgentRewardModel(torch.nn.Module):
    """A world model whose reward depends only on the agent: 'debug' (index 2) pays 1."""

    def forward(self, states, actions):
        reward = actions[:, 2]  # one-hot agent columns come first
        return (torch.zeros(states.shape[0], STRUCTURAL_DIMS), reward,
                torch.full((states.shape[0],), -20.0))


def test_plan_picks_the_agent_the_model_rewards() -> None:
    state = [0.0] * STATE_DIM
    agent, focus, units, value = plan(AgentRewardModel(), state, (True,) * 4, seed=3)
    assert agent == 2 and 0 <= focus < 5 and len(units) == 7
    # the best of 64 random 3-step sequences is debug three times: 1 + 0.99 + 0.99^2
    assert value == pytest.approx(1 + 0.99 + 0.99 ** 2, rel=1e-3)
    masked, *_ = plan(AgentRewardModel(), state, (True, True, False, True), seed=3)
    assert masked != 2


def test_a_trained_world_model_routes_through_the_plugin(tmp_path) -> None:
    from rtlforge.agents.models import RouterContext
    from rtlforge.agents.router.mpc import MPCRouter
    from rtlforge.agents.router.nets import WorldModel, save_router

    save_router(tmp_path / "wm", WorldModel(hidden=16), router="mpc", step=1)
    router = MPCRouter(path=str(tmp_path / "wm"))
    ctx = RouterContext(task_id="t", spec="An AND gate.")
    first, second = router.decide(ctx, ("fast", "debug")), router.decide(ctx, ("fast", "debug"))
    assert first == second and first.agent in ("fast", "debug")
