"""The host never trusts a file a jailed run wrote (issue 22, items 2 and 3).

Every kind of object a run can leave in its run directory (a link to a host secret, a link to a
host directory, a FIFO, a socket, a hard link, a huge file) is planted in front of each host-side
read, copy and write: the unit layer (:mod:`rtlforge.sandbox.runfiles`), then the real readers
after real tool runs (the cocotb validator's results, a pipeline bundle), gate on and off. The
oracle is the host: the secret never shows up, nothing appears outside the run directory,
nothing blocks, and the verdict is never ``pass``.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from rtlforge.core.errors import SecurityViolation
from rtlforge.core.models import Candidate, SourceFile, Task, Verdict
from rtlforge.plugins.validators.cocotb import CocotbValidator
from rtlforge.sandbox import runfiles
from rtlforge.sandbox.runfiles import PlantedFileError
from rtlforge.sandbox.runner import Limits, SandboxRunner
from rtlforge.validate.pipeline import Pipeline

SECRET = "HOST-SECRET-7f3a91"
FIXTURES = Path(__file__).parents[1] / "fixtures" / "validators"
HUGE = 5 * 1024 * 1024  # over the cocotb results bound (4 MB)


@pytest.fixture
def host(tmp_path: Path) -> dict[str, Path]:
    """A host secret file and a host directory, outside every run directory."""
    outside = tmp_path / "host"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text(SECRET)
    return {"secret": secret, "dir": outside}


def _plant(kind: str, target: Path, host: dict[str, Path]) -> None:
    """Put ``kind`` at ``target`` the way code inside the run could."""
    target.unlink(missing_ok=True)
    if kind == "link_to_secret":
        target.symlink_to(host["secret"])
    elif kind == "link_to_dir":
        target.symlink_to(host["dir"])
    elif kind == "dangling_link_outside":  # a write through it would create a host file
        target.symlink_to(host["dir"] / "created-by-host.txt")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "socket":
        # bound relative to its directory: a run directory's path can exceed AF_UNIX's 108
        # bytes (pooled jails nest it one level deeper), a socket file's name cannot
        here = os.getcwd()
        os.chdir(target.parent)
        try:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.bind(target.name)
        finally:
            os.chdir(here)
    elif kind == "hard_link":
        # Inside a jail only a run-dir file can be linked; the host's own secret stands in for
        # what isolation="none" would allow.
        os.link(host["secret"], target)
    elif kind == "huge":
        with open(target, "wb") as fh:
            fh.write(SECRET.encode() + b"x" * HUGE)
    else:  # pragma: no cover - a typo in the parametrisation
        raise AssertionError(kind)


KINDS = ["link_to_secret", "link_to_dir", "dangling_link_outside", "fifo", "socket",
         "hard_link", "huge"]


def _outside_untouched(host: dict[str, Path]) -> None:
    assert sorted(p.name for p in host["dir"].iterdir()) == ["secret.txt"]
    assert host["secret"].read_text() == SECRET


# ------------------------------------------------------------------ the helper, kind by kind

@pytest.mark.parametrize("kind", KINDS)
def test_reads_refuse_every_planted_kind_without_blocking(kind: str, tmp_path: Path,
                                                          host: dict[str, Path]) -> None:
    run = tmp_path / "run"
    run.mkdir()
    _plant(kind, run / "out.txt", host)
    start = time.monotonic()
    if kind == "dangling_link_outside":
        with pytest.raises(PlantedFileError):
            runfiles.read_text(run, "out.txt", 1024 * 1024)
    else:
        with pytest.raises(PlantedFileError) as info:
            runfiles.read_text(run, "out.txt", 1024 * 1024)
        assert SECRET not in str(info.value)
        assert isinstance(info.value, SecurityViolation)  # the run's doing: never infra, never pass
    assert time.monotonic() - start < 2
    _outside_untouched(host)


def test_huge_file_may_be_read_as_a_bounded_head(tmp_path: Path, host: dict[str, Path]) -> None:
    run = tmp_path / "run"
    run.mkdir()
    _plant("huge", run / "log.txt", host)
    head = runfiles.read_head(run, "log.txt", 100)
    assert head is not None and len(head[0]) == 100 and head[1]


def test_a_link_in_a_directory_component_is_not_followed(tmp_path: Path,
                                                         host: dict[str, Path]) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "obj_dir").symlink_to(host["dir"])
    with pytest.raises(PlantedFileError):
        runfiles.read_bytes(run, "obj_dir/secret.txt")


@pytest.mark.parametrize("kind", KINDS)
def test_host_writes_replace_a_planted_object_never_write_through_it(
        kind: str, tmp_path: Path, host: dict[str, Path]) -> None:
    run = tmp_path / "run"
    run.mkdir()
    _plant(kind, run / "config.json", host)
    runfiles.replace_file(run, "config.json", "{}")
    assert (run / "config.json").read_text() == "{}"
    assert not (run / "config.json").is_symlink() and os.stat(run / "config.json").st_nlink == 1
    _outside_untouched(host)


def test_copy_keeps_only_regular_files_and_directories(tmp_path: Path,
                                                      host: dict[str, Path]) -> None:
    run = tmp_path / "run"
    (run / "sub").mkdir(parents=True)
    (run / "design.v").write_text("module m; endmodule\n")
    (run / "sub" / "keep.txt").write_text("kept")
    for i, kind in enumerate(KINDS):
        _plant(kind, run / f"planted{i}", host)
    (run / "sub" / "up").symlink_to(host["dir"])
    (run / "stages.json").symlink_to(host["dir"] / "stages.json")
    dest = tmp_path / "bundle"
    report = runfiles.copy_tree(run, dest, limit=HUGE, exclude=frozenset({"stages.json"}))
    copied = {str(p.relative_to(dest)) for p in dest.rglob("*")}
    assert copied == {"design.v", "sub", "sub/keep.txt"}
    assert not any(p.is_symlink() for p in dest.rglob("*"))
    assert len(report.skipped) == len(KINDS) + 2
    runfiles.write_new(dest, "stages.json", "[]")  # the host's file, in the host's directory
    _outside_untouched(host)


# --------------------------------------------------- the real readers, after real tool runs

def _task(module: str) -> Task:
    return Task(id="adder-cocotb", spec="adder", top="adder",
                cocotb_module=SourceFile(name="test_adder.py", content=module))


def _adder(name: str = "adder_wrong.v") -> Candidate:
    return Candidate.from_source((FIXTURES / name).read_text(), name="design.v")


def _pipeline(gate: bool, bundle: Path | None = None) -> Pipeline:
    runner = SandboxRunner(Limits(timeout_s=60), unsafe_skip_gate=not gate)
    return Pipeline([CocotbValidator(build_timeout=120)], runner=runner, timeout=60,
                    bundle_dir=bundle)


def _everything_said(report: object) -> str:
    return report.model_dump_json()  # type: ignore[attr-defined]


#: A cocotb module (code that runs in the jail) that plants links named like what the host
#: reads or writes afterwards, then fails its test so the pipeline keeps a bundle.
_PLANTING_MODULE = '''
import os
import cocotb

@cocotb.test()
async def plants(dut):
    os.symlink({secret!r}, "stolen.txt")
    os.symlink({dir!r}, "hostdir")
    os.symlink({created!r}, "stages.json")
    os.mkfifo("pipe")
    assert False, "planted"
'''


@pytest.mark.tools
@pytest.mark.parametrize("gate", [True, False], ids=["gate_on", "gate_off"])
def test_bundle_of_a_run_that_planted_links_touches_nothing_outside(
        gate: bool, tmp_path: Path, host: dict[str, Path]) -> None:
    created = host["dir"] / "created-by-bundle.json"
    module = _PLANTING_MODULE.format(secret=str(host["secret"]), dir=str(host["dir"]),
                                     created=str(created))
    bundles = tmp_path / "bundles"
    start = time.monotonic()
    report = _pipeline(gate, bundles).validate(_task(module), _adder("adder.v"))
    assert time.monotonic() - start < 120
    assert report.verdict is not Verdict.PASS
    assert SECRET not in _everything_said(report)
    _outside_untouched(host)
    (bundle,) = bundles.iterdir()
    assert not any(p.is_symlink() for p in bundle.rglob("*"))
    assert not (bundle / "pipe").exists()
    stages = bundle / "stages.json"
    assert stages.is_file() and '"cocotb"' in stages.read_text()
    assert all(SECRET not in p.read_text(errors="replace")
               for p in bundle.rglob("*") if p.is_file())


@pytest.mark.tools
@pytest.mark.parametrize("gate", [True, False], ids=["gate_on", "gate_off"])
@pytest.mark.parametrize("kind", KINDS)
def test_object_planted_as_the_cocotb_results_is_never_a_pass(
        kind: str, gate: bool, host: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Between the simulation and the host's read, the results file becomes ``kind``."""
    real_run = SandboxRunner.run

    def run_then_plant(self: SandboxRunner, argv: list[str], cwd: Path, **kw: object):  # type: ignore[no-untyped-def]
        result = real_run(self, argv, cwd, **kw)  # type: ignore[arg-type]
        if argv[-1] == "test":
            (found,) = Path(cwd).glob(".rtlforge-cocotb-*.xml")
            _plant(kind, found, host)
        return result

    monkeypatch.setattr(SandboxRunner, "run", run_then_plant)
    start = time.monotonic()
    report = _pipeline(gate).validate(_task((FIXTURES / "test_adder.py").read_text()),
                                      _adder("adder.v"))
    assert time.monotonic() - start < 120
    cocotb = next(s for s in report.stages if s.name == "cocotb")
    assert cocotb.verdict is Verdict.FAIL, cocotb.feedback
    assert SECRET not in _everything_said(report)
    _outside_untouched(host)


# ------------------------------------------- item 3: no candidate code on an import path

#: Python that forges a passing results file, whatever imports it.
_FORGER = '''
import os
name = os.environ.get("COCOTB_RESULTS_FILE")
if name:
    open(name, "w").write('<testsuites><testsuite><testcase name="t"/></testsuite></testsuites>')
open("FORGER_RAN", "w").write("x")
'''

_ATTACK_NAMES = ["json.py", "cocotb.py", "os.py", "test_adder.py", "sitecustomize.py",
                 "usercustomize.py", "rtlforge-cocotb-driver.py", "cocotb_tools.py",
                 "evil.pth", "importlib.py"]


@pytest.mark.tools
@pytest.mark.parametrize("gate", [True, False], ids=["gate_on", "gate_off"])
@pytest.mark.parametrize("name", _ATTACK_NAMES)
def test_candidate_python_is_renamed_and_never_runs(name: str, gate: bool) -> None:
    content = "import forged_by_pth\n" if name.endswith(".pth") else _FORGER
    wrong = Candidate(files=(SourceFile(name="design.v",
                                        content=(FIXTURES / "adder_wrong.v").read_text()),
                             SourceFile(name=name, content=content)), top="adder")
    report = _pipeline(gate).validate(_task((FIXTURES / "test_adder.py").read_text()), wrong)
    assert report.verdict is not Verdict.PASS
    cocotb = [s for s in report.stages if s.name == "cocotb"]
    if cocotb:  # the gate may refuse a Python file as a design before any tool runs
        assert cocotb[0].verdict is Verdict.FAIL, cocotb[0].feedback


@pytest.mark.tools
@pytest.mark.parametrize("gate", [True, False], ids=["gate_on", "gate_off"])
@pytest.mark.parametrize("name", ["json.py", "cocotb.py", "os.py", "sitecustomize.py",
                                  "usercustomize.py", "importlib.py", "test_adder.py"])
def test_python_written_into_the_run_directory_is_not_imported(
        name: str, gate: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that writes Python into its directory (a design with the gate off, an earlier
    tool) before the cocotb driver starts: isolation, not renaming, must hold."""
    real_run = SandboxRunner.run
    marker: list[Path] = []

    def plant_then_run(self: SandboxRunner, argv: list[str], cwd: Path, **kw: object):  # type: ignore[no-untyped-def]
        if argv[-1] in ("build", "test"):
            (Path(cwd) / name).write_text(_FORGER)
            self._workspace_of(cwd).record_all()  # written by "a tool": output, not input
            marker.append(Path(cwd) / "FORGER_RAN")
        result = real_run(self, argv, cwd, **kw)  # type: ignore[arg-type]
        if marker:
            assert not marker[-1].exists(), result.output[-2000:]
        return result

    monkeypatch.setattr(SandboxRunner, "run", plant_then_run)
    report = _pipeline(gate).validate(_task((FIXTURES / "test_adder.py").read_text()),
                                      _adder("adder_wrong.v"))
    cocotb = next(s for s in report.stages if s.name == "cocotb")
    assert cocotb.verdict is Verdict.FAIL, cocotb.feedback
    assert marker  # the plant happened


@pytest.mark.parametrize(("names", "taken", "expected"), [
    (["top.v", "json.py"], set(), ["top.v", "dut_json.py.txt"]),
    (["tb.v"], {"tb.v"}, ["dut_tb.v"]),
    ([".rtlforge-cocotb-build", "x.pth"], set(), ["dut_rtlforge-cocotb-build", "dut_x.pth.txt"]),
    (["sitecustomize.py", "dut_sitecustomize.py.txt"], set(),
     ["dut_dut_sitecustomize.py.txt", "dut_sitecustomize.py.txt"]),
    (["m.cpython-311-x86_64-linux-gnu.so", "rtlforge_netlist.v"], set(),
     ["dut_m.cpython-311-x86_64-linux-gnu.so.txt", "dut_rtlforge_netlist.v"]),
])
def test_design_file_names(names: list[str], taken: set[str], expected: list[str]) -> None:
    assert runfiles.design_file_names(names, taken) == expected



@pytest.mark.parametrize("gate", [True, False], ids=["gate_on", "gate_off"])
def test_put_after_a_jailed_tool_planted_links_writes_nothing_outside(
        gate: bool, host: dict[str, Path]) -> None:
    """A jailed tool (a real run of /bin/sh) plants a link and a FIFO under names the host puts
    next; the host replaces them and creates nothing outside."""
    created = host["dir"] / "created-by-put.v"
    with SandboxRunner(Limits(timeout_s=20), unsafe_skip_gate=not gate) as runner, \
            runner.workspace() as work:
        run = runner.run(["/bin/sh", "-c", f"ln -s {created} next.v && mkfifo tb.v"],
                         cwd=work)
        assert run.ok, run.output
        assert (work / "next.v").is_symlink()
        start = time.monotonic()
        runner.put(work, [SourceFile(name="next.v", content="module a; endmodule\n"),
                          SourceFile(name="tb.v", content="module b; endmodule\n")],
                   role="trusted")
        assert time.monotonic() - start < 5
        assert not (work / "next.v").is_symlink()
        assert (work / "tb.v").read_text() == "module b; endmodule\n"
    _outside_untouched(host)
