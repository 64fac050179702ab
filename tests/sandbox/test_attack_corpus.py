"""The attack corpus (tests/sandbox/attacks/corpus/): every case refused or contained, twice.

Each case is a hostile design (sometimes with its own testbench or support files) written to
escape the sandbox, leak a secret, run a command, leave a process behind, exhaust the checker or
forge a pass; ``case.toml`` says which (see ``_task/README.md``). Placeholders are filled per
run: ``@OUTSIDE@`` is an empty directory outside the run directory, ``@SECRET@`` a file holding
a fresh token, ``@TAG@`` a token put in the command line of any process the attack starts.

The outcome is judged by looking, not by trusting the verdict: after every run the outside
directory must still be empty, the secret file unchanged, the token absent from everything the
run reported (logs, feedback, PPA figures, errors), and no process carrying the tag alive.

- With the gate (the default): every case runs through Icarus and Verilator simulation, yosys
  synthesis and PPA, and ``eval``; nothing escapes, no wrong design passes, bad text is a typed
  verdict and nothing is an infrastructure error.
- With the gate switched off (``SandboxRunner(unsafe_skip_gate=True)``): the paths a case
  attacks run the real tools on it; the jail alone must contain every escape. Forged passes
  from inside the simulation are the gate's job: the cases that achieve one are exactly
  ``GATE_ONLY``.
"""

from __future__ import annotations

import ast
import json
import secrets
import shutil
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _processes import tagged

from rtlforge.core.models import Candidate, SourceFile, Task, ValidationReport, Verdict
from rtlforge.evaluation.evaluate import evaluate_samples
from rtlforge.plugins.estimators.ppa import YosysAbcPPA
from rtlforge.plugins.validators.iverilog import IverilogLint, IverilogSim
from rtlforge.plugins.validators.verilator import VerilatorLint, VerilatorSim
from rtlforge.plugins.validators.yosys import YosysSynth
from rtlforge.sandbox.runner import Limits, SandboxRunner
from rtlforge.tasks.loader import load_task
from rtlforge.validate.cache import MemoryCache
from rtlforge.validate.pipeline import Pipeline

CORPUS = Path(__file__).parent / "attacks" / "corpus"
STANDARD_TB = CORPUS / "_task" / "tb.v"
CASES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir() and not p.name.startswith("_"))
SIM_TIMEOUT = 3.0
VERILATOR_BUILD = 60.0
YOSYS_TIMEOUT = 10.0
MEMORY_MB = 4096
PATHS = ("icarus", "verilator", "synth", "ppa")
SIMULATED = ("icarus", "verilator")  # where a verdict says the design works (synth: it builds)

#: Cases whose wrong design passes when the gate is off: they forge the verdict from inside the
#: simulation without naming anything of the testbench (the jail keeps them in their run
#: directory, but cannot judge a design). Every case that names something (``tb.errors``,
#: ``bind tb``, ``$root.tb``, ``tb.report()``, a ``$unit`` counter) stopped forging when the
#: testbench's modules and compilation-unit declarations began to carry a per-run tag (issue
#: 22): c4_bind_spy, c4_call_tb_task, c4_escaped_hier_force, c4_force_errors, c4_force_expected,
#: c4_force_generate_defparam, c4_force_ifndef_synthesis, c4_read_expected,
#: c4_unit_scope_counter.
GATE_ONLY = {"c4_read_tb_nonce"}

pytestmark = [pytest.mark.tools, pytest.mark.slow]


def _have_tools() -> None:
    for tool in ("iverilog", "vvp", "verilator", "yosys", "bwrap"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (scripts/install-tools.sh installs it)")


# ------------------------------------------------------------------------------ materialise


@dataclass
class Scene:
    """One case, filled in for one run, and what to look at afterwards."""

    name: str
    meta: dict[str, Any]
    task: Task
    candidate: Candidate
    outside: Path
    secret_file: Path
    secret: str
    tag: str

    @property
    def cls(self) -> int:
        return int(self.meta["class"])

    def leaks(self, text: str) -> bool:
        return self.secret in text

    def escaped(self) -> list[str]:
        """Anything the run left outside its directory (files created, the secret changed)."""
        problems = [f"created {p}" for p in self.outside.rglob("*")]
        if self.secret_file.read_text() != self.secret:
            problems.append("the secret file was modified")
        siblings = {p.name for p in self.secret_file.parent.iterdir()}
        if siblings != {self.secret_file.name, self.outside.name}:
            problems.append(f"files appeared beside the secret: {sorted(siblings)}")
        return problems

    def survivors(self) -> list[str]:
        """Command lines of live processes that carry this run's tag."""
        deadline = time.monotonic() + 1.0
        while True:
            found = tagged(self.tag)
            if not found or time.monotonic() > deadline:
                return found
            time.sleep(0.1)


def _secret(fmt: str | None) -> str:
    if fmt == "hex":
        return secrets.token_hex(8)
    if fmt == "decimal":
        return str(100_000_000 + secrets.randbelow(899_999_999))
    return f"SECRET-{secrets.token_hex(8)}"


def _text(raw: bytes) -> str:
    # Bytes that are not UTF-8 arrive as lone surrogates, as a host decoding them leniently
    # (surrogateescape) would hand them over: the pipeline must refuse them, typed.
    return raw.decode("utf-8", "surrogateescape")


def scene(name: str, tmp: Path) -> Scene:
    case = CORPUS / name
    meta = tomllib.loads((case / "case.toml").read_text())
    base = tmp / "host"
    outside = base / "outside"
    outside.mkdir(parents=True)
    secret = _secret(meta.get("secret_format"))
    secret_file = base / "secret.txt"
    secret_file.write_text(secret)
    tag = f"rtlforgetag{secrets.token_hex(6)}"

    def fill(text: str) -> str:
        return (text.replace("@OUTSIDE@", str(outside)).replace("@SECRET@", str(secret_file))
                .replace("@TAG@", tag))

    if "design_text_py" in meta:
        text = ast.literal_eval(meta["design_text_py"])
        design = [SourceFile(name="design.v", content=fill(text))]
    else:
        design = [SourceFile(name=p.name, content=fill(_text(p.read_bytes())))
                  for p in sorted(case.glob("design*.v"))]
    if "design_size_mb" in meta:
        seed = design[0].content
        design[0] = SourceFile(name="design.v", content=seed * (
            int(meta["design_size_mb"]) * 1_000_000 // max(1, len(seed)) + 1))
    tb_path = case / "tb.v" if (case / "tb.v").exists() else STANDARD_TB
    testbench = (SourceFile(name="tb.v", content=fill(_text(tb_path.read_bytes()))),)
    support = tuple(SourceFile(name=p.name, content=fill(_text(p.read_bytes())))
                    for p in sorted((case / "support").glob("*")) if p.is_file())
    task = Task(id=name, spec="8-bit adder", top="top_module", testbench=testbench,
                support=support, testbench_top="tb")
    if "support_symlinks" in meta:
        task = _task_with_symlinks(tmp / "task", task, {
            k: fill(v) for k, v in meta["support_symlinks"].items()})
    return Scene(name, meta, task, Candidate(files=tuple(design)), outside, secret_file, secret,
                 tag)


def _task_with_symlinks(folder: Path, task: Task, links: dict[str, str]) -> Task:
    """Write the task as a task.toml folder whose support files are symlinks, and load it the
    way a user would; the loader must refuse a link that leaves the folder."""
    folder.mkdir()
    for f in (*task.testbench, *task.support):
        (folder / f.name).write_text(f.content)
    for name, target in links.items():
        (folder / name).symlink_to(target)
    support = [f.name for f in task.support] + list(links)
    (folder / "task.toml").write_text(
        f'id = "{task.id}"\ntop = "top_module"\nspec = "adder"\ntestbench = ["tb.v"]\n'
        f"support = {json.dumps(support)}\ntestbench_top = \"tb\"\n")
    from rtlforge.core.errors import TaskFormatError

    with pytest.raises(TaskFormatError, match="outside the task directory"):
        load_task(folder)
    return task  # the symlinked file never gets in; the rest of the case still runs


# ------------------------------------------------------------------------------ running


def _pipelines(runner: SandboxRunner) -> dict[str, Pipeline]:
    def build(*validators: Any) -> Pipeline:
        return Pipeline(list(validators), runner=runner, timeout=SIM_TIMEOUT,
                        cache=MemoryCache(0))

    return {
        "icarus": build(IverilogLint(), IverilogSim()),
        "verilator": build(VerilatorLint(), VerilatorSim(build_timeout=VERILATOR_BUILD)),
        "synth": build(IverilogLint(with_testbench=False), YosysSynth(timeout=YOSYS_TIMEOUT)),
    }


@pytest.fixture(scope="module")
def gated() -> Iterator[SandboxRunner]:
    _have_tools()
    with SandboxRunner(Limits(timeout_s=SIM_TIMEOUT, address_space_mb=MEMORY_MB)) as runner:
        yield runner


@pytest.fixture(scope="module")
def ungated() -> Iterator[SandboxRunner]:
    _have_tools()
    with SandboxRunner(Limits(timeout_s=SIM_TIMEOUT, address_space_mb=MEMORY_MB),
                       unsafe_skip_gate=True) as runner:
        yield runner


@dataclass
class Outcome:
    verdict: Verdict | None  # None for PPA, which has no verdict
    reported: str  # everything the run reported, as text
    refused: bool  # the gate refused the case before any tool ran


def _run(sc: Scene, runner: SandboxRunner, path: str) -> Outcome:
    if path == "ppa":
        try:
            result = YosysAbcPPA(timeout=YOSYS_TIMEOUT).estimate(sc.candidate, "top_module",
                                                                 runner)
        except Exception as exc:  # noqa: BLE001 - a refusal is an exception; its text is looked at
            refused = getattr(exc, "stage", None) == "security"
            return Outcome(None, f"{type(exc).__name__}: {exc} {getattr(exc, 'log', '')}",
                           refused)
        return Outcome(None, result.model_dump_json(), False)
    report: ValidationReport = _pipelines(runner)[path].validate(sc.task, sc.candidate)
    first = report.stages[0]
    return Outcome(report.verdict, report.model_dump_json(),
                   first.name == "security" and first.verdict is not Verdict.PASS)


def _wanted(sc: Scene) -> list[str]:
    """The paths a case attacks (yosys' PPA flow reads what synthesis reads)."""
    return [p for p in PATHS
            if p in sc.meta["paths"] or (p == "ppa" and "synth" in sc.meta["paths"])]


def _contained(sc: Scene, path: str, verdict: Verdict | None, reported: str) -> None:
    where = f"{sc.name} via {path}"
    assert not sc.escaped(), f"{where}: {sc.escaped()}"
    assert not sc.leaks(reported), f"{where}: the secret reached the report"
    assert not sc.survivors(), f"{where}: processes left behind: {sc.survivors()}"
    assert verdict is not Verdict.INFRA_ERROR, f"{where}: an attack became infra_error: " \
        f"{reported[:600]}"


def _expected_class(sc: Scene, path: str, verdict: Verdict | None, reported: str, *,
                    refused: bool) -> None:
    """``expect_verdict``: the verdict a simulation must give (a wrong design that prints a
    tool's words is still ``fail``, not ``error``); a case the gate refuses is not simulated."""
    want = sc.meta.get("expect_verdict")
    if want is not None and path in SIMULATED and not refused:
        assert verdict is not None and verdict.value == want, \
            f"{sc.name} via {path}: {verdict} instead of {want}: {reported[:600]}"


@pytest.mark.parametrize("name", CASES)
def test_case_is_refused_or_contained_with_the_gate(name: str, gated: SandboxRunner,
                                                    tmp_path: Path) -> None:
    sc = scene(name, tmp_path)
    # Every path while the gate refuses the case before any tool runs (cheap); once it gets
    # past the gate, the real tools run on the paths the case attacks.
    refused = True
    for path in PATHS:
        if not refused and path not in _wanted(sc):
            continue
        outcome = _run(sc, gated, path)
        refused = refused and outcome.refused
        verdict, reported = outcome.verdict, outcome.reported
        _contained(sc, path, verdict, reported)
        if sc.meta["goal"] == "forge_pass" and path in SIMULATED:
            assert verdict is not Verdict.PASS, f"{name} via {path}: a wrong design passed"
        _expected_class(sc, path, verdict, reported, refused=outcome.refused)
        if sc.meta["goal"] == "crash" and verdict is not None:  # typed, whatever it is
            assert verdict in (Verdict.ERROR, Verdict.FAIL, Verdict.TIMEOUT, Verdict.PASS), \
                (name, reported)


@pytest.mark.parametrize("name", CASES)
def test_case_is_contained_by_the_jail_alone(name: str, ungated: SandboxRunner,
                                             tmp_path: Path) -> None:
    sc = scene(name, tmp_path)
    forged = []
    for path in _wanted(sc):
        outcome = _run(sc, ungated, path)
        verdict, reported = outcome.verdict, outcome.reported
        _contained(sc, path, verdict, reported)
        _expected_class(sc, path, verdict, reported, refused=outcome.refused)
        if verdict is Verdict.PASS and sc.meta["goal"] == "forge_pass" and path in SIMULATED:
            forged.append(path)
    # Exactly the listed cases get past the jail with a forged pass: the list in the docs is
    # what happens, not what we hope.
    assert bool(forged) == (name in GATE_ONLY), (name, forged)


def test_gate_only_cases_are_forgeries_from_inside_the_simulation() -> None:
    metas = {n: tomllib.loads((CORPUS / n / "case.toml").read_text()) for n in CASES}
    assert set(CASES) >= GATE_ONLY
    assert all(metas[n]["goal"] == "forge_pass" and metas[n]["class"] == 4 for n in GATE_ONLY)


def test_corpus_covers_every_class() -> None:
    classes: dict[int, int] = {}
    for name in CASES:
        meta = tomllib.loads((CORPUS / name / "case.toml").read_text())
        classes[int(meta["class"])] = classes.get(int(meta["class"]), 0) + 1
    assert len(CASES) >= 82  # 60 of our own across the seven classes + the 22 old ones
    assert all(classes.get(c, 0) >= 5 for c in range(1, 8)), classes
    assert classes.get(0, 0) >= 10, classes


def test_eval_scores_the_corpus_without_aborting_or_forging(gated: SandboxRunner,
                                                            tmp_path: Path) -> None:
    """The whole corpus as one ``eval`` batch: every sample gets a typed verdict."""
    scenes = [scene(n, tmp_path / n) for n in CASES if "support_symlinks" not in
              tomllib.loads((CORPUS / n / "case.toml").read_text())]
    tasks = {sc.name: sc.task for sc in scenes}
    samples = [(sc.name, "```verilog\n" + "\n".join(f.content for f in sc.candidate.files)
                + "\n```") for sc in scenes]
    pipeline = _pipelines(gated)["icarus"]
    result = evaluate_samples(samples, tasks, pipeline, ks=(1,))
    assert len(result.samples) == len(scenes)
    by_name = {sc.name: sc for sc in scenes}
    for res in result.samples:
        sc = by_name[res.task_id]
        _contained(sc, "eval", res.report.verdict, res.report.model_dump_json())
        if sc.meta["goal"] == "forge_pass":
            assert not res.report.passed, f"{sc.name}: eval scored a forged pass"
