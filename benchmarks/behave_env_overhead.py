"""Per-tool overhead of the BEHAVE agent environment: a scripted 10-turn episode on rv_accum.

The script writes a design, a behaviour model and a testbench, lists/reads/edits, lints with
Icarus and Verilator, runs its testbench, self-checks against its model, synthesises
(yosys-abc) and submits; then the hidden check runs against B*. One plugin host and one sandbox
runner serve every episode (as a rollout loop would); the first episode pays the cold starts
(gate workers, pipelines, estimator). Reports wall seconds per tool: the first episode and the
median over the rest. Usage:
    python benchmarks/behave_env_overhead.py [--episodes 4] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "behave" / "env"))

from _agent_fixtures import GOOD_MODEL, GOOD_RTL, RV_ACCUM, TESTBENCH  # noqa: E402

from rtlforge.behave.env import AgentEnv, EnvConfig, ScriptedAgent, ScriptedCall  # noqa: E402
from rtlforge.behave.sim.task import load_behave_task  # noqa: E402
from rtlforge.core.plugins import PluginHost  # noqa: E402
from rtlforge.sandbox.runner import SandboxRunner  # noqa: E402

C = ScriptedCall
SCRIPT = [
    [C(name="write_file", arguments={"path": "rv_accum.v", "content": GOOD_RTL}),
     C(name="write_file", arguments={"path": "model.py", "content": GOOD_MODEL}),
     C(name="write_file", arguments={"path": "tb_rv_accum.v", "content": TESTBENCH})],
    [C(name="list_files")],
    [C(name="read_file", arguments={"path": "rv_accum.v"})],
    [C(name="edit_file", arguments={"path": "rv_accum.v", "old_text": "wire take",
                                    "new_text": "wire take /* accepted */"})],
    [C(name="compile", arguments={"linter": "icarus"})],
    [C(name="compile", arguments={"linter": "verilator"})],
    [C(name="run_testbench", arguments={"testbench": "tb_rv_accum.v"})],
    [C(name="behave_self_check", arguments={})],
    [C(name="synthesise", arguments={})],
    [C(name="submit", arguments={})],
]


def episode(task, host, runner) -> dict[str, float]:
    times: dict[str, float] = defaultdict(float)
    agent = ScriptedAgent(SCRIPT)
    start = time.perf_counter()
    with AgentEnv(task, host=host, runner=runner, config=EnvConfig()) as env:
        env.reset()
        while not env.done:
            t = time.perf_counter()
            reply = agent.respond(env.context(), env.tools)
            times["agent (scripted)"] += time.perf_counter() - t
            env.step(reply)
        t = time.perf_counter()
        result = env.finish()
        times["hidden check (RTL + model vs B*)"] = time.perf_counter() - t
    times["episode total"] = time.perf_counter() - start
    assert result.rtl.status == "pass" and result.model.status == "pass", result
    linter = {c.id: json.loads(c.arguments).get("linter", "icarus")
              for m in result.transcript for c in m.tool_calls if c.name == "compile"}
    for record in result.tool_calls:
        name = record.name
        if name == "compile":
            name = f"compile ({linter[record.call_id]})"
        times[name] += record.seconds
    stepped = sum(r.seconds for r in result.tool_calls)
    times["environment bookkeeping"] = (times["episode total"] - stepped
                                        - times["agent (scripted)"]
                                        - times["hidden check (RTL + model vs B*)"])
    return dict(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    task = load_behave_task(RV_ACCUM)
    t = time.perf_counter()
    host = PluginHost.default()
    host_s = time.perf_counter() - t
    with SandboxRunner() as runner:
        runs = [episode(task, host, runner) for _ in range(max(2, args.episodes))]
    keys = list(runs[0])
    rows = {k: (runs[0][k], statistics.median(r[k] for r in runs[1:])) for k in keys}
    if args.json:
        print(json.dumps({"host_s": host_s, "episodes": runs}, indent=1))
        return
    load = os.getloadavg()[0]
    print(f"plugin host (once): {host_s:.2f} s; episodes: {len(runs)}; load average {load:.1f} "
          f"on {os.cpu_count()} cores")
    print("| step | first episode s | median of the rest s |")
    print("|---|---:|---:|")
    for k, (first, rest) in rows.items():
        print(f"| {k} | {first:.3f} | {rest:.3f} |")


if __name__ == "__main__":
    main()
