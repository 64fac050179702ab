"""The portcheck plugin pip-installed into a temporary directory and discovered through its
``rtlforge`` entry point in a fresh interpreter, the way a user gets it (slow: builds a wheel)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CONTRIB = Path(__file__).resolve().parents[1]

CONTRIB_SCRIPT = r"""
import json, sys
from rtlforge.core.models import Candidate, Port, Task
from rtlforge.validate.pipeline import Pipeline
from rtlforge.core.plugins import PluginHost
import rtlforge_portcheck

host = PluginHost()
info = {i.name: i for i in host.describe()}["portcheck"]
pipeline = Pipeline([host.create("validator", "portcheck")])
task = Task(id="contrib", spec="s", top="top", ports=(
    Port(name="clk", direction="input"), Port(name="d", direction="input", width=8),
    Port(name="q", direction="output", width=8)))
good = Candidate.from_source(
    "module top(input clk, input [7:0] d, output reg [7:0] q);\n"
    "  always @(posedge clk) q <= d;\nendmodule\n")
bad = Candidate.from_source(
    "module top(input clk, input [7:0] d,\n  output reg [3:0] q);\n"
    "  always @(posedge clk) q <= d[3:0];\nendmodule\n")
print(json.dumps({
    "module_file": rtlforge_portcheck.__file__,
    "validators": host.names("validator"),
    "distribution": info.distribution,
    "version": info.version,
    "registers": info.registers,
    "error": info.error,
    "pass": pipeline.validate(task, good).to_summary(),
    "fail": pipeline.validate(task, bad).to_summary(),
}))
"""


def _pip_install(source: Path, target: Path) -> None:
    base = [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet",
            "--disable-pip-version-check", "--target", str(target), str(source)]
    attempts = []
    if importlib.util.find_spec("hatchling") is not None:
        attempts.append([*base, "--no-build-isolation"])  # offline: use the venv's hatchling
    attempts.append(base)  # build isolation: pip fetches hatchling from the configured index
    errors = []
    for cmd in attempts:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, check=False)
        if proc.returncode == 0:
            return
        errors.append(f"$ {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
    joined = "\n".join(errors)
    if "hatchling" in joined and "No matching distribution" in joined:
        pytest.skip("hatchling is neither installed nor reachable; cannot build the plugin")
    pytest.fail(f"pip could not install the contrib plugin:\n{joined}")


@pytest.mark.slow
def test_contrib_plugin_installs_and_is_discovered(tmp_path: Path) -> None:
    source = tmp_path / "src-copy"  # build from a copy: leave no build artefacts in the repo
    shutil.copytree(CONTRIB, source, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info",
                                                                  "build", "dist"))
    target = tmp_path / "site"
    _pip_install(source, target)
    dist_infos = list(target.glob("rtlforge_portcheck-*.dist-info"))
    assert len(dist_infos) == 1
    assert "portcheck = rtlforge_portcheck" in (dist_infos[0] / "entry_points.txt").read_text()

    env = {k: v for k, v in os.environ.items()
           if k not in ("RTLFORGE_PLUGINS_ALLOW", "RTLFORGE_PLUGINS_BLOCK")}
    env["PYTHONPATH"] = str(target)
    proc = subprocess.run([sys.executable, "-c", CONTRIB_SCRIPT], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])

    assert Path(out["module_file"]).is_relative_to(target)
    assert "portcheck" in out["validators"]
    assert out["distribution"] == "rtlforge-portcheck"
    assert out["version"] == "0.1.0"
    assert out["error"] is None
    assert out["registers"] == {"validator": ["portcheck"]}

    good = out["pass"]
    assert good["verdict"] == "pass"
    assert [s["name"] for s in good["stages"]][-1] == "portcheck"
    assert all(s["verdict"] == "pass" for s in good["stages"])

    bad = out["fail"]
    assert bad["verdict"] == "fail"
    assert (bad["stages"][-1]["name"], bad["stages"][-1]["verdict"]) == ("portcheck", "fail")
    (fb,) = [f for f in bad["feedback"] if f["category"] == "port_mismatch"]
    assert fb["file"] == "design.v"
    assert fb["line"] == 2
    assert "'q'" in fb["message"] and "requires 8" in fb["message"]
    assert fb["stage"] == "portcheck"
    assert "output reg [3:0] q" in fb["context"]  # make_feedback attached the source lines
    assert "exactly these ports" in fb["hint"]
