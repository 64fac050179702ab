"""The Ray executor on a local two-CPU cluster: verdicts, dead workers, the shared cache.

One cluster serves the module (starting Ray costs seconds). Expected verdicts come from the
designs themselves: a bundled golden passes its testbench, an adder whose carry is XOR'd instead
of OR'd fails it, a module with a syntax error does not compile.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rtlforge.core.errors import ConfigError
from rtlforge.core.executor import ThreadExecutor
from rtlforge.core.models import Candidate, Task, ValidationReport, Verdict
from rtlforge.core.plugins import PluginHost
from rtlforge.tasks.loader import load_task
from rtlforge.validate.pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
TASKS = ROOT / "examples" / "tasks"
ray = pytest.importorskip("ray", reason="the ray extra is not installed: pip install "
                                        "'rtlforge[ray]'")

#: Under pytest-xdist (`make test`), every test of this module runs on one worker, so the local
#: cluster below starts once and two clusters never compete for the two cores.
pytestmark = pytest.mark.xdist_group("ray-local-cluster")

import ray_worker_killer  # noqa: E402 - this folder is on sys.path (pytest's rootdir import)

from rtlforge.plugins.executors import ray_cluster  # noqa: E402
from rtlforge.plugins.executors.ray_cluster import RayExecutor  # noqa: E402

#: The workers import rtlforge and the test plugin from here, as the driver does.
RUNTIME_ENV = {"env_vars": {"PYTHONPATH": f"{ROOT}:{HERE}"}}
SYNTAX_ERROR = ("module add8_carry(input [7:0] a, output [7:0] sum);\n  assign sum = a +;\n"
                "endmodule\n")


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def executor(cluster: None) -> Iterator[RayExecutor]:
    """One worker for the module (starting workers costs seconds): each worker actor holds one
    of the cluster's two CPUs until it is closed, so the other CPU stays free for the tests
    that need an executor of their own. One item at a time per worker, one retry: only the
    item that kills its worker loses attempts."""
    with RayExecutor(workers=1, in_flight=1, max_retries=1, runtime_env=RUNTIME_ENV) as pool:
        yield pool


def host() -> PluginHost:
    """Icarus plus the worker killer, added as a module (so it travels); the allow list travels
    too, so a worker loads these two plugins only (a quicker start than every entry point)."""
    return PluginHost(allow=["iverilog", "ray_worker_killer"],
                      plugins=[("ray_worker_killer", ray_worker_killer)])


def batch() -> list[tuple[Task, Candidate]]:
    adder, mux = load_task(TASKS / "add8_carry"), load_task(TASKS / "mux4")
    golden = Candidate(files=adder.golden)
    wrong = Candidate.from_source(golden.files[0].content.replace(
        "(a[i] & b[i]) | (carry[i]", "(a[i] & b[i]) ^ ~(carry[i]"))
    return [(adder, golden), (mux, Candidate(files=mux.golden)), (adder, wrong),
            (adder, Candidate.from_source(SYNTAX_ERROR))]


def stages(report: ValidationReport) -> list[tuple[str, Verdict]]:
    return [(s.name, s.verdict) for s in report.stages]


def test_missing_ray_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # "import ray" now raises ImportError
    with pytest.raises(ConfigError, match=r"needs ray: pip install 'rtlforge\[ray\]'"):
        RayExecutor()


def test_registered_as_an_executor_plugin() -> None:
    plugins = PluginHost(load_entrypoints=False, plugins=[("ray", ray_cluster)])
    assert plugins.names("executor") == ["ray"]
    pool = plugins.create("executor", "ray", workers=1, max_retries=0)
    assert isinstance(pool, RayExecutor) and pool.max_retries == 0


def test_a_pipeline_without_a_spec_is_refused_before_anything_starts() -> None:
    built = Pipeline.build(PluginHost(allow=["iverilog"]), timeout=10)
    local_only = Pipeline(built.validators, timeout=10)  # validator instances: no recipe
    assert local_only.spec is None
    adder = load_task(TASKS / "add8_carry")
    with pytest.raises(ConfigError, match="no spec"):
        local_only.validate_many([(adder, Candidate(files=adder.golden))],
                                 executor=RayExecutor(workers=1))


@pytest.mark.tools
def test_verdicts_match_the_thread_pool(executor: RayExecutor) -> None:
    pipeline = Pipeline.build(host(), timeout=20)
    pairs = batch()
    with ThreadExecutor(2) as threads:
        local = pipeline.validate_many(pairs, executor=threads)
    remote = Pipeline.build(host(), timeout=20).validate_many(pairs, executor=executor)
    assert [r.verdict for r in remote] == [Verdict.PASS, Verdict.PASS, Verdict.FAIL,
                                           Verdict.ERROR]
    assert [stages(r) for r in remote] == [stages(r) for r in local]
    assert [r.candidate_digest for r in remote] == [c.digest() for _, c in pairs]


@pytest.mark.tools
def test_a_killed_worker_costs_a_retry_not_the_batch(executor: RayExecutor,
                                                     tmp_path: Path) -> None:
    pipeline = Pipeline.build(host(), timeout=20,
                              extra=[("worker-killer", {"marker_dir": str(tmp_path)})])
    adder = load_task(TASKS / "add8_carry")
    golden = adder.golden[0].content
    killed_once = Candidate.from_source(golden + "// KILL-ONCE\n")
    always = Candidate.from_source(golden + "// KILL-ALWAYS\n")
    wrong = batch()[2]
    pairs = [(adder, killed_once), wrong, (adder, always), (adder, Candidate(files=adder.golden))]
    before = set(executor.worker_pids())
    reports = pipeline.validate_many(pairs, executor=executor)
    after = set(executor.worker_pids())
    assert [r.verdict for r in reports] == [Verdict.PASS, Verdict.FAIL, Verdict.INFRA_ERROR,
                                            Verdict.PASS]
    assert "worker-killer" in [s.name for s in reports[0].stages]  # it did run, on a retry
    assert list(tmp_path.iterdir())  # ...after a first attempt that killed its worker
    lost = reports[2]
    assert lost.stages[-1].name == "executor"
    assert "died on this item 2 times" in lost.feedback[-1].message  # 1 try + 1 retry
    assert after != before  # Ray restarted the killed workers


@pytest.mark.tools
def test_a_candidate_validated_by_one_worker_is_a_hit_on_another(cluster: None,
                                                                 tmp_path: Path) -> None:
    adder = load_task(TASKS / "add8_carry")
    pair = (adder, Candidate(files=adder.golden))
    cache = str(tmp_path / "cache.sqlite")
    with RayExecutor(workers=1, cache_path=cache, runtime_env=RUNTIME_ENV) as first:
        [report] = Pipeline.build(host(), timeout=20).validate_many([pair], executor=first)
        pids = set(first.worker_pids())
    assert report.verdict is Verdict.PASS and not report.cached
    # new worker processes, and a fresh store actor reading the same SQLite file
    with RayExecutor(workers=1, cache_path=cache, runtime_env=RUNTIME_ENV) as second:
        again = Pipeline.build(host(), timeout=20).validate_many([pair, pair], executor=second)
        assert not set(second.worker_pids()) & pids
    assert [r.verdict for r in again] == [Verdict.PASS, Verdict.PASS]
    assert all(r.cached for r in again)


@pytest.mark.tools
def test_the_memory_store_outlives_a_worker(executor: RayExecutor) -> None:
    adder = load_task(TASKS / "add8_carry")
    unseen = Candidate.from_source(adder.golden[0].content + "// seen by one worker only\n")
    pair = (adder, unseen)
    [first] = Pipeline.build(host(), timeout=20).validate_many([pair], executor=executor)
    before = set(executor.worker_pids())
    for actor in executor._actors:  # every worker process replaced (Ray restarts them)
        ray.kill(actor, no_restart=False)
    deadline = time.monotonic() + 60
    while set(executor.worker_pids()) & before:  # the kill is asynchronous
        assert time.monotonic() < deadline, "Ray did not restart the killed worker"
        time.sleep(0.2)
    # a new pipeline: its own memory cache is empty, so a hit can only come from the store
    [second] = Pipeline.build(host(), timeout=20).validate_many([pair], executor=executor)
    assert not first.cached and second.cached and second.verdict is Verdict.PASS


def fenced(path: Path) -> str:
    return f"```verilog\n{path.read_text()}```"


@pytest.mark.tools
def test_behave_checks_run_on_the_workers(executor: RayExecutor) -> None:
    from rtlforge.behave.rewards import BehaveRTLReward

    udiv = ROOT / "examples" / "behave" / "udiv"
    # the golden passes B*; the divider that answers 0 on a zero divisor does not
    completions = [fenced(udiv / "golden.v"), fenced(udiv / "wrong_divzero.v"), "no code"]
    options = {"tasks": str(ROOT / "examples" / "behave"), "sequences": 4, "transactions": 20}
    local = BehaveRTLReward(**options).score_detailed([""] * 3, completions, task_id=["udiv"] * 3)
    remote = BehaveRTLReward(**options, executor=executor).score_detailed(
        [""] * 3, completions, task_id=["udiv"] * 3)
    assert [d.reward for d in remote] == [1.0, 0.0, 0.0]
    assert [(d.verdict, d.mismatches, d.reason) for d in remote] == [
        (d.verdict, d.mismatches, d.reason) for d in local]


@pytest.mark.tools
def test_a_reward_spec_scores_through_the_ray_executor(cluster: None) -> None:
    from rtlforge.rewards.adapters import RewardSpec

    plugins = PluginHost(plugins=[("ray", ray_cluster)])
    spec = RewardSpec(reward="testbench", tasks=str(TASKS), pipeline={"timeout": 20},
                      executor={"name": "ray", "options": {"workers": 1,
                                                           "runtime_env": RUNTIME_ENV}})
    reward = spec.build(plugins)
    try:
        assert isinstance(reward.executor, RayExecutor)
        pairs = batch()
        scores = reward.score([""] * len(pairs), [fenced_text(c) for _, c in pairs],
                              task_id=[t.id for t, _ in pairs])
    finally:
        reward.executor.close()
    assert scores == [1.0, 1.0, 0.0, 0.0]


def fenced_text(candidate: Candidate) -> str:
    return f"```verilog\n{candidate.files[0].content}```"


@pytest.mark.tools
def test_ppa_is_measured_on_the_workers(executor: RayExecutor) -> None:
    from rtlforge.core.options import PluginSpec
    from rtlforge.rewards.builtin import PPAScalarReward

    plugins = PluginHost(allow=["iverilog", "ppa"])
    mux = load_task(TASKS / "mux4")
    golden = mux.golden[0].content
    # the golden's own design (a comment apart) has the golden's PPA: (P_g/P)(A_g/A)(D_g/D) = 1
    completions = [f"```verilog\n{golden}// again\n```",
                   f"```verilog\n{golden.replace('sel[1] ? high : low', 'low')}```"]

    def score(pool: object) -> list[Any]:
        reward = PPAScalarReward([mux], Pipeline.build(plugins, timeout=20), host=plugins,
                                 estimator=PluginSpec(name="yosys-sta"), executor=pool)
        assert reward._remote_ppa() is (pool is executor)
        return reward.score_detailed([""] * 2, completions, task_id=["mux4"] * 2)

    remote, local = score(executor), score(None)
    assert [d.reward for d in remote] == [1.0, 0.0]
    # the measured numbers (the flat form a detail serialises), not the run's timings
    flat = [d.model_dump()["ppa"] for d in remote]
    assert flat == [d.model_dump()["ppa"] for d in local] and remote[0].ppa is not None


@pytest.mark.tools
def test_an_agent_episode_runs_its_tools_on_the_workers(executor: RayExecutor) -> None:
    """A BEHAVE agent episode with the Ray executor (what `trainer: behave-agent` with
    `executor: ray` gives each rollout): every tool job and the hidden check run on a worker,
    none on the episode's own tools, and the verdicts are the designs' own (udiv's golden passes
    B*, the divider that answers 0 on a zero divisor fails it)."""
    from rtlforge.behave.env import AgentEnv, EnvConfig, ScriptedAgent, ScriptedCall
    from rtlforge.behave.sim.stimulus import StimulusConfig
    from rtlforge.behave.sim.task import load_behave_task

    udiv = ROOT / "examples" / "behave" / "udiv"
    task = load_behave_task(udiv)
    config = EnvConfig(hidden_stimulus=StimulusConfig(sequences=4, transactions=20))
    plugins = PluginHost(allow=["iverilog", "ppa"])
    verdicts = []
    for design in ("golden.v", "wrong_divzero.v"):
        agent = ScriptedAgent([
            [ScriptedCall(name="write_file", arguments={
                "path": "udiv.v", "content": (udiv / design).read_text()})],
            [ScriptedCall(name="compile", arguments={})],
            [ScriptedCall(name="synthesise", arguments={})],
            [ScriptedCall(name="submit", arguments={})]])
        with AgentEnv(task, host=plugins, config=config, executor=executor) as env:
            env.reset()
            while not env.done:
                env.step(agent.respond(env.context(), env.tools))
            result = env.finish()
            assert env._tools_here is None  # nothing ran in this process
        calls = {r.name: (r.ok, r.error) for r in result.tool_calls}
        assert calls["compile"] == (True, None) and calls["synthesise"] == (True, None), calls
        verdicts.append(result.rtl.status)
    assert verdicts == ["pass", "fail"]
