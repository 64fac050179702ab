"""The orchestration contract: role templates, role settings, the agent_role/router kinds."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from rtlforge.agents.base import (
    AgentContext,
    AgentRole,
    RoleSettings,
    RoleTemplate,
    RoleTemplateError,
    Router,
)
from rtlforge.agents.models import AgentAction, Focus, IterationRecord, RouterContext, SolveResult
from rtlforge.core.hookspecs import hookimpl
from rtlforge.core.models import Port, Task, Verdict
from rtlforge.core.plugins import PluginHost

TASK = Task(id="adder", spec="Add a and b.", top="adder",
            ports=(Port(name="a", direction="input", width=8),
                   Port(name="y", direction="output", width=9)))


class EchoRole(AgentRole):
    name: ClassVar[str] = "echo"
    defaults: ClassVar[RoleSettings] = RoleSettings(temperature=0.3, retrieval_k=4)


def ctx(**kw: object) -> AgentContext:
    base = {"task": TASK, "spec": TASK.spec, "action": AgentAction(agent="echo"),
            "iteration": 0, "max_iterations": 5}
    return AgentContext(**{**base, **kw})  # type: ignore[arg-type]


def test_template_refuses_unknown_fields() -> None:
    with pytest.raises(RoleTemplateError, match="golden"):
        RoleTemplate(name="bad", user="Write {top} like {golden}")


def test_template_refuses_unknown_toml_keys(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text('name = "r"\nuser = "x"\ntemperature = 1\n', encoding="utf-8")
    with pytest.raises(RoleTemplateError, match="a role template has"):
        RoleTemplate.load(path)


def test_missing_bundled_template_is_a_config_error() -> None:
    with pytest.raises(RoleTemplateError, match="no bundled role template 'nope'"):
        RoleTemplate.load("nope")


def test_generic_role_prompt_carries_spec_ports_feedback_and_drops_empty_fields() -> None:
    request = EchoRole().build_request(ctx(feedback="lint: adder.v:3: syntax error"),
                                       request_id="r1")
    assert "module named `adder`" in request.prompt
    assert "Add a and b." in request.prompt
    assert "lint: adder.v:3: syntax error" in request.prompt
    assert "\n\n\n" not in request.prompt  # empty code/knowledge/waveform leave no blank runs
    assert request.metadata["agent"] == "echo"
    assert request.request_id == "r1" and request.task == TASK


def test_ports_field_renders_directions_and_widths() -> None:
    fields = EchoRole().fields(ctx())
    assert fields["ports"] == "input [7:0] a\noutput [8:0] y"


def test_action_overrides_role_sampling_and_depth() -> None:
    role = EchoRole()
    plain = role.sampling(AgentAction(agent="echo"))
    assert (plain.temperature, role.retrieval_k(AgentAction(agent="echo"))) == (0.3, 4)
    tuned = AgentAction(agent="echo", temperature=0.9, max_tokens=300, retrieval_k=12)
    params = role.sampling(tuned, n=3)
    assert (params.temperature, params.max_tokens, params.n) == (0.9, 300, 3)
    assert role.retrieval_k(tuned) == 12


def test_overrides_are_validated() -> None:
    assert EchoRole(temperature=0.1).settings.temperature == 0.1
    with pytest.raises(ValueError, match="temperature"):
        EchoRole(temperature=5.0)


def test_action_bounds_follow_the_paper() -> None:
    with pytest.raises(ValueError):
        AgentAction(agent="fast", retrieval_k=2)
    with pytest.raises(ValueError):
        AgentAction(agent="fast", retry_budget=1.5)
    assert AgentAction(agent="fast", focus="synthesis").focus is Focus.SYNTHESIS


def test_records_and_results_round_trip_through_json() -> None:
    record = IterationRecord(iteration=0, tier="router", agent="fast", verdict=Verdict.FAIL,
                             stages_passed=("security", "lint"), prompt_tokens=10,
                             completion_tokens=5)
    assert (record.tokens, record.lint_passed, record.sim_passed) == (15, True, False)
    result = SolveResult(task_id="adder", verdict=Verdict.FAIL, iterations=1, llm_calls=1,
                         tokens=15, agents=("fast",), tiers=("router",), records=(record,))
    again = SolveResult.model_validate_json(result.model_dump_json())
    assert again == result
    assert again.summary() == {"task_id": "adder", "verdict": "fail", "iterations": 1,
                               "llm_calls": 1, "tokens": 15, "agents": ["fast"],
                               "tiers": ["router"], "trace": None, "judge": "real"}


class FirstRouter(Router):
    name: ClassVar[str] = "first"

    def decide(self, ctx: RouterContext, agents: object) -> AgentAction:
        return AgentAction(agent=next(iter(agents)))  # type: ignore[call-overload]


class ThirdParty:
    @hookimpl
    def register_agent_roles(self, register):  # type: ignore[no-untyped-def]
        register(EchoRole)

    @hookimpl
    def register_routers(self, register):  # type: ignore[no-untyped-def]
        register(FirstRouter)


def test_third_party_roles_and_routers_register_through_the_agents_hooks() -> None:
    from rtlforge.agents import plugin as agents_plugin

    host = PluginHost(load_entrypoints=False,
                      plugins=[("agents", agents_plugin), ("third", ThirdParty())])
    assert "echo" in host.names("agent_role") and "first" in host.names("router")
    role = host.create("agent_role", "echo", retrieval_k=7)
    assert role.settings.retrieval_k == 7
    router = host.create("router", "first")
    action = router.decide(RouterContext(task_id="t", spec="s"), ["echo"])
    assert action.agent == "echo"
