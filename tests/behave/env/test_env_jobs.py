"""An episode's tool jobs run where its executor puts them, with the same verdicts.

A remote executor (``ray``) gets each tool job as data plus an :class:`EnvToolWork` spec and
rebuilds the tools from it. The stand-in below does what a remote worker does, in this process:
every job, spec and outcome crosses a pickle round trip, and the tools are rebuilt from the spec
(their own plugin host and sandbox runner), never the episode's. The expected verdicts are the
local run's, which tests/behave/env/test_env_episodes.py pins against the designs themselves.
The Ray executor itself runs an episode in tests/plugins/executors/test_ray_executor.py.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar, TypeVar

import pytest
from _agent_fixtures import GOOD_MODEL, GOOD_RTL, RV_ACCUM, TESTBENCH, THREE_MODEL, THREE_RTL

from rtlforge.behave.env import AgentEnv, EnvConfig, ScriptedAgent, ScriptedCall, run_episode
from rtlforge.behave.env.jobs import EnvToolWork
from rtlforge.behave.sim.stimulus import StimulusConfig
from rtlforge.behave.sim.task import load_behave_task
from rtlforge.core.errors import ConfigError
from rtlforge.core.executor import Executor, Work, WorkerServices
from rtlforge.core.plugins import PluginHost

pytestmark = [pytest.mark.tools, pytest.mark.requires_tools("iverilog", "vvp", "yosys",
                                                             "yosys-abc")]

T = TypeVar("T")
R = TypeVar("R")
C = ScriptedCall
CONFIG = EnvConfig(hidden_stimulus=StimulusConfig(sequences=10, transactions=50))
SELF = {"sequences": 4, "transactions": 40}


class PickledWorker(Executor):
    """A remote worker's view, in-process: only pickled data and the spec arrive."""

    name: ClassVar[str] = "pickled-worker"

    def __init__(self) -> None:
        self.built: dict[str, Callable[[Any], Any]] = {}
        self.jobs: list[str] = []

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        return map(fn, items)

    def run(self, work: Work[T, R], items: Sequence[T]) -> list[R]:
        assert work.spec is not None, "the work must be able to travel"
        spec = pickle.loads(pickle.dumps(work.spec))
        fn = self.built.get(spec.key())
        if fn is None:
            fn = self.built[spec.key()] = spec.build(WorkerServices())
        out = []
        for item in items:
            job = pickle.loads(pickle.dumps(item))
            self.jobs.append(job.kind)
            out.append(pickle.loads(pickle.dumps(fn(job))))
        return out


class LosingWorker(PickledWorker):
    """Every worker dies on every job: each comes back as the work's ``lost`` outcome."""

    def run(self, work: Work[T, R], items: Sequence[T]) -> list[R]:
        assert work.lost is not None
        return [work.lost(item, "killed by the test") for item in items]


def _write(name: str, content: str) -> ScriptedCall:
    return C(name="write_file", arguments={"path": name, "content": content})


def _script(rtl: str, model: str) -> list[list[ScriptedCall]]:
    return [
        [_write("rv_accum.v", rtl), _write("model.py", model),
         _write("tb_rv_accum.v", TESTBENCH)],
        [C(name="compile", arguments={})],
        [C(name="run_testbench", arguments={"testbench": "tb_rv_accum.v"})],
        [C(name="behave_self_check", arguments=SELF)],
        [C(name="synthesise", arguments={})],
        [C(name="submit", arguments={})],
    ]


def _outcomes(result: Any) -> list[tuple[str, bool, str | None, str | None]]:
    """(tool, ok, error, verdict) of every call, from the transcript the agent saw."""
    by_id = {m.tool_call_id: json.loads(m.content) for m in result.transcript
             if m.role == "tool"}
    return [(c.name, by_id[c.id]["ok"], by_id[c.id].get("error"), by_id[c.id].get("verdict"))
            for m in result.transcript if m.role == "assistant" for c in m.tool_calls]


@pytest.fixture(scope="module")
def task():
    return load_behave_task(RV_ACCUM)


@pytest.mark.parametrize(("rtl", "model", "status"), [(GOOD_RTL, GOOD_MODEL, "pass"),
                                                      (THREE_RTL, THREE_MODEL, "fail")])
def test_tool_jobs_on_a_worker_give_the_verdicts_of_a_local_run(task, rtl: str, model: str,
                                                                 status: str) -> None:
    host = PluginHost.default()
    local = run_episode(task, ScriptedAgent(_script(rtl, model)), host=host, config=CONFIG)
    worker = PickledWorker()
    with AgentEnv(task, host=host, config=CONFIG, executor=worker) as env:
        agent = ScriptedAgent(_script(rtl, model))
        env.reset()
        while not env.done:
            env.step(agent.respond(env.context(), env.tools))
        remote = env.finish()
        assert env._tools_here is None  # nothing ran on the episode's own tools
    assert worker.jobs == ["validate", "validate", "check_rtl", "synth", "check_rtl",
                           "check_model"]
    assert _outcomes(remote) == _outcomes(local)
    assert (remote.rtl.status, remote.model.status) == (local.rtl.status, local.model.status)
    assert local.rtl.status == local.model.status == status
    (synth,) = [json.loads(m.content) for m in remote.transcript
                if m.role == "tool" and m.name == "synthesise"]
    assert synth["ok"] and synth["area_um2"] > 0 and synth["cells"] > 0


def test_a_job_whose_worker_is_lost_is_infrastructure_never_a_verdict(task) -> None:
    result = run_episode(task, ScriptedAgent(_script(GOOD_RTL, GOOD_MODEL)),
                         host=PluginHost.default(), config=CONFIG, executor=LosingWorker())
    errors = {name: error for name, _ok, error, _verdict in _outcomes(result)
              if name not in ("write_file", "submit")}
    assert errors == {"compile": "infra_error", "run_testbench": "infra_error",
                      "behave_self_check": "infra_error", "synthesise": "infra_error"}
    assert result.rtl.status == result.model.status == "unresolved" and result.unresolved


def test_a_host_that_cannot_travel_is_refused_when_the_episode_starts(task) -> None:
    class InMemoryPlugin:  # an object, not a module: another process cannot import it
        pass

    host = PluginHost(plugins=[("in-memory", InMemoryPlugin())])
    with pytest.raises(ConfigError, match="in-memory"):
        AgentEnv(task, host=host, config=CONFIG, executor=PickledWorker())


def test_the_spec_is_plain_data() -> None:
    spec = EnvToolWork(estimator="yosys-abc", tool_timeout_s=30.0)
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert EnvToolWork.model_validate_json(spec.model_dump_json()) == spec
