"""The public facade (``from rtlforge import ...``) and the library's etiquette.

- ``import rtlforge`` is cheap: it loads no rtlforge submodule, no numpy, no ML framework;
- every public name resolves, to the very object its defining module holds;
- README's Python examples import only through the facade (and the runnable ones run);
- a script that validates, measures PPA and scores a reward through the facade prints nothing,
  unless it configures logging itself (then rtlforge's events do show: the check can fail).
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import rtlforge

ROOT = Path(__file__).resolve().parents[1]
SHARED_NANGATE = ROOT.parent / "shared" / "pdk" / "nangate45" / "nangate45_typ.lib.gz"
#: Stacks a plain ``import rtlforge`` must not pull in (each costs from 0.1 s to many seconds).
HEAVY = {"torch", "transformers", "vllm", "trl", "peft", "accelerate", "bitsandbytes", "ray",
         "pyslang", "pyverilog", "numpy", "moocore", "pygmo", "scipy", "cocotb", "structlog"}
ML = {"torch", "transformers", "vllm", "trl", "peft", "accelerate", "bitsandbytes", "ray"}


def _python(code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter that imports this checkout's rtlforge."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    environ.pop("PYTHONWARNINGS", None)  # the interpreter's own defaults, as a user has them
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=environ, text=True,
                          capture_output=True, timeout=600, check=False)


def _loaded(report: str) -> tuple[list[str], list[str]]:
    data = json.loads(report)
    return data["heavy"], data["rtlforge"]


PROBE = """
import json, sys
{before}
mods = list(sys.modules)
print(json.dumps({{"heavy": sorted({{m.split('.')[0] for m in mods}} & {heavy!r}),
                  "rtlforge": sorted(m for m in mods if m.startswith('rtlforge.'))}}))
"""


# ------------------------------------------------------------------------------ import cost


def test_import_rtlforge_loads_nothing_heavy(tmp_path: Path) -> None:
    run = _python(PROBE.format(before="import rtlforge", heavy=HEAVY), tmp_path)
    assert run.returncode == 0, run.stderr
    heavy, submodules = _loaded(run.stdout)
    assert heavy == []
    assert submodules == []  # every public name is resolved on first use, not at import


def test_resolving_every_public_name_loads_no_ml_framework(tmp_path: Path) -> None:
    before = "import rtlforge\nfor name in rtlforge.__all__: getattr(rtlforge, name)"
    run = _python(PROBE.format(before=before, heavy=ML), tmp_path)
    assert run.returncode == 0, run.stderr
    heavy, _ = _loaded(run.stdout)
    assert heavy == []


# ------------------------------------------------------------------------------ the names


def _type_checking_names() -> dict[str, str]:
    """name -> module of the ``if TYPE_CHECKING:`` imports in rtlforge/__init__.py."""
    tree = ast.parse((ROOT / "rtlforge" / "__init__.py").read_text())
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module
                out.update({alias.name: imp.module for alias in imp.names})
    return out


def test_every_public_name_resolves_to_its_defining_object() -> None:
    declared = _type_checking_names()
    assert set(rtlforge.__all__) == {*declared, "__version__"}
    for name, module in declared.items():
        assert getattr(rtlforge, name) is getattr(importlib.import_module(module), name), name
    assert set(rtlforge.__all__) <= set(dir(rtlforge))
    assert isinstance(rtlforge.__version__, str)
    with pytest.raises(AttributeError, match="no_such_name"):
        rtlforge.no_such_name  # noqa: B018


def test_facade_covers_the_common_path() -> None:
    from rtlforge import (  # the names issue 9 and the README promise
        Candidate,
        Explorer,
        Pipeline,
        PluginHost,
        SourceFile,
        Task,
        Verdict,
        hookimpl,
        load_task,
        load_tasks,
    )

    task = load_task(ROOT / "examples" / "tasks" / "mux4")
    assert isinstance(task, Task) and task in load_tasks(ROOT / "examples" / "tasks")
    assert isinstance(Candidate(files=(SourceFile(name="a.v", content="x"),)), Candidate)
    assert Verdict.INFRA_ERROR.value == "infra_error"
    assert callable(hookimpl) and callable(Pipeline.build) and callable(Explorer)
    assert PluginHost().create("validator", "iverilog-lint").name == "iverilog-lint"


# ------------------------------------------------------------------------------ README


def _readme_snippets() -> list[str]:
    # a fence of three or more backticks, closed by the same (a block may quote a ``` answer)
    return [body for _, body in re.findall(r"^(`{3,})python\n(.*?)^\1[ \t]*$",
                                           (ROOT / "README.md").read_text(), re.S | re.M)]


def test_readme_python_examples_import_only_through_the_facade() -> None:
    snippets = _readme_snippets()
    assert len(snippets) >= 3
    for snippet in snippets:
        for node in ast.walk(ast.parse(snippet)):
            if isinstance(node, ast.ImportFrom):
                assert node.module == "rtlforge", f"deep import in README: {ast.unparse(node)}"
                assert {a.name for a in node.names} <= set(rtlforge.__all__)
            assert not isinstance(node, ast.Import), ast.unparse(node)


def test_readme_plugin_example_runs() -> None:
    [snippet] = [s for s in _readme_snippets() if "@hookimpl" in s]
    namespace: dict[str, object] = {}
    exec(compile(snippet, "README.md", "exec"), namespace)  # our own README
    validator = namespace["NoInitialBlocks"]
    assert issubclass(validator, rtlforge.Validator)  # type: ignore[arg-type]


@pytest.mark.tools
def test_readme_quickstart_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [snippet] = [s for s in _readme_snippets() if "validate_many" in s]
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RTLFORGE_CACHE_DIR", str(tmp_path / "cache"))
    namespace: dict[str, object] = {}  # as written: nothing defined for it beforehand
    exec(compile(snippet, "README.md", "exec"), namespace)  # our own README
    assert namespace["report"].passed  # type: ignore[attr-defined]
    assert namespace["ppa"].area_um2 > 0  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------ etiquette

#: Validate, measure PPA and score a reward, through the facade only; results go to a file so
#: that stdout and stderr belong to the library alone.
SCRIPT = """\
{preamble}import json
import sys

from rtlforge import Candidate, Pipeline, PluginHost, load_task

task_dir, liberty, out = sys.argv[1:4]
host = PluginHost()
task = load_task(task_dir)
pipeline = Pipeline.build(host, timeout=60)
candidate = Candidate(files=task.golden)
report = pipeline.validate(task, candidate)
estimator = host.create("ppa_estimator", "yosys-sta", liberty=liberty)
try:
    ppa = estimator.estimate(candidate, task.top, pipeline.runner)
    reward = host.create("reward", "ppa-scalar", tasks=[task], pipeline=pipeline,
                         estimator=estimator)
    [score] = reward.score([task.spec], [task.golden[0].content], task_id=[task.id])
finally:
    estimator.close()
with open(out, "w") as f:
    json.dump({{"verdict": report.verdict.value, "area": ppa.area_um2, "score": score}}, f)
"""


def _liberty() -> Path:
    """Nangate45 from ../shared when present, else the liberty rtlforge ships (always there)."""
    if SHARED_NANGATE.is_file():
        return SHARED_NANGATE
    from rtlforge.eda.liberty import GENERIC_LIBERTY

    return GENERIC_LIBERTY


def _run_script(tmp_path: Path, preamble: str = "") -> tuple[subprocess.CompletedProcess[str],
                                                             dict[str, object]]:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT.format(preamble=preamble))
    out = tmp_path / "out.json"
    environ = {**os.environ, "PYTHONPATH": str(ROOT),
               "RTLFORGE_CACHE_DIR": str(tmp_path / "cache")}
    environ.pop("PYTHONWARNINGS", None)
    run = subprocess.run(
        [sys.executable, str(script), str(ROOT / "examples" / "tasks" / "add8_carry"),
         str(_liberty()), str(out)],
        cwd=tmp_path, env=environ, text=True, capture_output=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr
    return run, json.loads(out.read_text())


@pytest.mark.tools
def test_library_is_silent_until_the_host_configures_logging(tmp_path: Path) -> None:
    run, result = _run_script(tmp_path)
    # the work was really done: a pass, a measured area, the golden scoring 1 against itself
    assert result["verdict"] == "pass"
    assert isinstance(result["area"], float) and result["area"] > 0
    assert result["score"] == pytest.approx(1.0, rel=1e-6)
    assert run.stdout == ""
    assert run.stderr == ""


@pytest.mark.tools
def test_configured_logging_shows_rtlforge_events(tmp_path: Path) -> None:
    preamble = "import logging\nlogging.basicConfig(level=logging.DEBUG)\n"
    run, result = _run_script(tmp_path, preamble)
    assert result["verdict"] == "pass"
    assert run.stdout == ""  # events go to the host's handlers (stderr here), never stdout
    assert re.search(r"^INFO:rtlforge\.pipeline:.*validated", run.stderr, re.M), run.stderr
