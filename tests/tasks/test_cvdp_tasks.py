"""CVDP JSONL records as tasks (rtlforge.tasks.cvdp): every fixture category loads, the harness
travels in a digested support file, and what cannot run without Docker is skipped with why.

The expected values come from the records as written in tests/fixtures/cvdp (the shape
NVlabs/cvdp_benchmark distributes), not from the loader's output."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rtlforge.core.answers import answer_files
from rtlforge.core.errors import TaskFormatError
from rtlforge.tasks.cvdp import (
    HARNESS_FILE,
    CvdpHarness,
    container_roots,
    harness_of,
    is_cvdp,
    is_cvdp_task,
    load_cvdp,
    map_container_paths,
    parse_env_file,
    scan_cvdp,
)
from rtlforge.tasks.loader import NoTasksError, find_tasks, load_tasks, task_format

FIXTURES = Path(__file__).parents[1] / "fixtures" / "cvdp"
DATASET = FIXTURES / "cvdp_fixtures.jsonl"
RECORDS = [json.loads(line) for line in DATASET.read_text().splitlines() if line.strip()]
BY_ID = {r["id"]: r for r in RECORDS}
COMPOSE = ("harness", "files", "docker-compose.yml")


def write(tmp_path: Path, *records: dict) -> Path:
    path = tmp_path / "cvdp.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def variant(task_id: str, edits: dict[tuple[str, ...], object]) -> dict:
    """A copy of a fixture record with ``edits`` ({key path: value}, None deletes) applied."""
    record = copy.deepcopy(BY_ID[task_id])
    record["id"] = f"{task_id}_v"
    for path, value in edits.items():
        target = record
        for part in path[:-1]:
            target = target[part]
        if value is None:
            target.pop(path[-1], None)
        else:
            target[path[-1]] = value
    return record


def test_the_fixture_file_is_what_its_builder_writes(tmp_path: Path) -> None:
    # make_fixtures.py is the readable source of the JSONL: they must not drift apart
    script = FIXTURES / "make_fixtures.py"
    code = script.read_text().replace("HERE = Path(__file__).resolve().parent",
                                      f"HERE = Path({str(tmp_path)!r})")
    (tmp_path / "make.py").write_text(code)
    subprocess.run([sys.executable, str(tmp_path / "make.py")], check=True)
    assert (tmp_path / "cvdp_fixtures.jsonl").read_text() == DATASET.read_text()
    assert (tmp_path / "solutions.jsonl").read_text() == \
        (FIXTURES / "solutions.jsonl").read_text()


def test_load_tasks_recognises_a_cvdp_file() -> None:
    assert is_cvdp(DATASET) and task_format(DATASET) == "cvdp"
    found = find_tasks(DATASET)
    assert found.format == "cvdp" and found.skipped == ()
    assert [t.id for t in load_tasks(DATASET)] == sorted(BY_ID)
    assert [t.id for t in load_tasks(DATASET, fmt="cvdp")] == sorted(BY_ID)


def test_every_category_of_the_fixtures_loads() -> None:
    tasks = {t.id: t for t in load_cvdp(DATASET)}
    assert {t.category for t in tasks.values()} == {"cid002", "cid003", "cid004", "cid007",
                                                   "cid016"}
    for task_id, record in BY_ID.items():
        task = tasks[task_id]
        category, difficulty = record["categories"]
        assert task.category == category
        assert task.metadata["difficulty"] == difficulty
        assert task.metadata["source"] == "cvdp"
        assert is_cvdp_task(task)
        wanted = list(record["output"]["context"])
        assert [f.path for f in answer_files(task)] == wanted
        assert task.golden == ()  # the public shape withholds the solutions
        # the prompt carries the request, every input context file and the files to return
        assert record["input"]["prompt"] in task.spec
        for path, text in record["input"]["context"].items():
            assert f"File {path}:" in task.spec and text.strip() in task.spec
        assert all(path in task.spec for path in wanted)
        env = parse_env_file(record["harness"]["files"]["src/.env"], "src/.env")
        assert task.top == env["TOPLEVEL"]


def test_the_harness_travels_as_a_support_file_in_the_task_digest(tmp_path: Path) -> None:
    task = next(t for t in load_cvdp(DATASET) if t.id == "cvdp_copilot_max4_qor_0001")
    record = BY_ID[task.id]
    harness = harness_of(task)
    assert isinstance(harness, CvdpHarness)
    assert [s.name for s in harness.services] == ["direct", "synth"]
    direct, synth = harness.services
    assert direct.kind == "pytest" and direct.args[-2:] == ("/src/test_runner.py", "-v")
    assert synth.args[-1] == "/src/test_synth.py"
    assert synth.env["IMPROVEMENTS"] == "cells wires" and synth.env["CELLS"] == "261"
    assert set(harness.files) == {p for p in record["harness"]["files"]
                                  if p.startswith("src/")}
    assert harness.outputs == ("rtl/max4.sv",) and harness.placed == {"rtl/max4.sv": "max4.sv"}
    # the replaced context file is neither support nor context: the answer takes its place
    assert [f.name for f in task.support] == [HARNESS_FILE] and harness.context == {}
    # a different harness is a different task for the cache
    env = record["harness"]["files"]["src/.env"].replace("261", "260")
    changed = variant(task.id, {("harness", "files", "src/.env"): env})
    changed["id"] = task.id
    assert load_cvdp(write(tmp_path, changed))[0].digest() != task.digest()


def test_context_files_go_where_the_framework_puts_them() -> None:
    tasks = {t.id: t for t in load_cvdp(DATASET)}
    spec_only = harness_of(tasks["cvdp_copilot_sat_adder_0001"])
    assert spec_only is not None
    assert spec_only.context == {"docs/spec.md": BY_ID["cvdp_copilot_sat_adder_0001"]["input"][
        "context"]["docs/spec.md"]}
    counter = tasks["cvdp_copilot_updown_counter_0001"]
    assert [f.path for f in answer_files(counter)] == ["rtl/counter.sv", "rtl/counter_top.sv"]
    assert [f.name for f in counter.support] == [HARNESS_FILE]


def test_hdl_context_kept_is_gated_support_and_clashing_names_are_flattened(
        tmp_path: Path) -> None:
    record = variant("cvdp_copilot_updown_counter_0001", {
        ("input", "context", "rtl/pkg/defs.svh"): "`define W 4\n",
        ("input", "context", "verif/defs.svh"): "// other\n",
        ("input", "context", "docs/notes.txt"): "notes",
        ("output", "context", "rtl/counter_top.sv"): None})
    task = load_cvdp(write(tmp_path, record))[0]
    names = {f.name for f in task.support}
    assert names == {HARNESS_FILE, "counter_top.sv", "cvdp_rtl_pkg_defs.svh",
                     "cvdp_verif_defs.svh"}
    harness = harness_of(task)
    assert harness is not None
    assert harness.context == {"docs/notes.txt": "notes"}
    assert harness.placed["rtl/pkg/defs.svh"] == "cvdp_rtl_pkg_defs.svh"


@pytest.mark.parametrize(("edits", "reason"), [
    ({COMPOSE: None}, "no docker-compose.yml"),
    ({COMPOSE: "services:\n  x:\n    command: bash -c 'make'\n"},
     "runs neither pytest nor a Python script"),
    ({COMPOSE: "services:\n  x:\n    entrypoint: sh\n"
      "    command: pytest /src/t.py\n"}, "unsupported key"),
    ({COMPOSE: "services:\n  x: &a\n    command: pytest\n"
      "  y: *a\n"}, "anchors and aliases"),
    ({COMPOSE: "services:\n  x:\n    command: pytest\n"
      "    env_file: ./src/missing.env\n"}, "is not a harness file"),
    ({COMPOSE: "services:\n  x:\n    command: pytest\n"
      "    volumes:\n      - /etc:/etc\n"}, "other than a project folder"),
    ({COMPOSE: "[" * 50 + "]" * 50}, "nests deeper"),
    ({("harness", "files", "src/.env"): "SIM icarus\n"}, "expected KEY=VALUE"),
    ({("output", "context"): {"../etc/passwd": ""}}, "not a relative path"),
    ({("output", "context"): {"docs/answer.md": ""}}, "not HDL"),
    ({("output", "context"): {}}, "names no file"),
    ({("categories",): ["comprehension"]}, "'categories'"),
    ({("input",): None, ("context",): {}, ("patch",): {}}, "agentic"),
])
def test_records_that_cannot_run_are_skipped_with_why(tmp_path: Path, edits: dict,
                                                      reason: str) -> None:
    good = BY_ID["cvdp_copilot_bin2gray_0001"]
    bad = variant("cvdp_copilot_bin2gray_0001", edits)
    found = scan_cvdp(write(tmp_path, good, bad))
    assert [t.id for t in found.tasks] == [good["id"]]
    assert len(found.skipped) == 1 and reason in found.skipped[0].reason
    assert found.skipped[0].record == bad["id"]
    with pytest.raises(TaskFormatError, match=reason.split("'")[0] or reason):
        load_cvdp(write(tmp_path, good, bad), skip_unsupported=False)


def test_a_broken_file_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "cvdp.jsonl"
    path.write_text(json.dumps(RECORDS[0]) + "\n{not json\n")
    with pytest.raises(TaskFormatError, match=r"cvdp.jsonl:2: not a JSON record"):
        scan_cvdp(path)
    path.write_text(json.dumps(RECORDS[0]) + "\n" + json.dumps(RECORDS[0]) + "\n")
    with pytest.raises(TaskFormatError, match="duplicate CVDP record id"):
        scan_cvdp(path)
    path.write_text("[1, 2]\n")
    assert not is_cvdp(path)
    with pytest.raises(NoTasksError, match="not a CVDP JSONL file"):
        find_tasks(path)


def test_a_file_of_only_unsupported_records_says_why(tmp_path: Path) -> None:
    bad = variant("cvdp_copilot_bin2gray_0001", {COMPOSE: None})
    with pytest.raises(NoTasksError, match=r"1 skipped, first: .*no docker-compose\.yml"):
        find_tasks(write(tmp_path, bad))


def test_env_files_are_read_as_docker_compose_reads_them() -> None:
    text = ("# comment\n\nSIM             = icarus\nVERILOG_SOURCES = /code/rtl/a.sv "
            "/code/rtl/b.sv\nexport MODULE=test_a\nQUOTED = \"a # b\"\nCUT = value # note\n"
            "EMPTY=\n")
    assert parse_env_file(text, ".env") == {
        "SIM": "icarus", "VERILOG_SOURCES": "/code/rtl/a.sv /code/rtl/b.sv", "MODULE": "test_a",
        "QUOTED": "a # b", "CUT": "value", "EMPTY": ""}
    with pytest.raises(TaskFormatError, match=r"\.env:1: expected KEY=VALUE"):
        parse_env_file("1BAD = x", ".env")


def test_container_paths_move_into_the_run_and_nothing_else_does() -> None:
    roots = container_roots("/run/w")
    text = ('VERILOG_SOURCES = /code/rtl/a.sv /code/rtl/b.sv\nPYTHONPATH=/src\n'
            'open("/code/rundir/x.txt") "/src/t.py" cache_dir=/rundir/harness/.cache\n'
            '/home/src /usr/src/x rtl/src/y /codex /srcs $x/src')
    assert map_container_paths(text, roots) == (
        'VERILOG_SOURCES = /run/w/code/rtl/a.sv /run/w/code/rtl/b.sv\n'
        'PYTHONPATH=/run/w/code/src\nopen("/run/w/code/rundir/x.txt") "/run/w/code/src/t.py" '
        'cache_dir=/run/w/rundir/harness/.cache\n/home/src /usr/src/x rtl/src/y /codex /srcs '
        '$x/src')


def test_a_service_volume_adds_a_container_folder(tmp_path: Path) -> None:
    record = variant("cvdp_copilot_bin2gray_0001", {
        COMPOSE: "services:\n  direct:\n    env_file: ./src/.env\n"
        "    volumes:\n      - ./src/:/src/:ro\n      - ./rundir:/results\n"
        "      - ./rtl:/code/rtl\n    command: python3 /src/test_runner.py\n"})
    task = load_cvdp(write(tmp_path, record))[0]
    harness = harness_of(task)
    assert harness is not None
    (service,) = harness.services
    assert service.kind == "python" and service.args == ("/src/test_runner.py",)
    assert service.mounts == {"/results": "rundir"}
    roots = container_roots("/w", service)
    assert map_container_paths("/results/a.log", roots) == "/w/code/rundir/a.log"


def test_a_record_with_its_solution_carries_a_golden(tmp_path: Path) -> None:
    # the *_with_solutions files fill output.context with the reference answer
    solutions = {r["id"]: r["files"] for r in map(
        json.loads, (FIXTURES / "solutions.jsonl").read_text().splitlines())}
    record = copy.deepcopy(BY_ID["cvdp_copilot_updown_counter_0001"])
    record["output"]["context"] = solutions[record["id"]]
    task = load_cvdp(write(tmp_path, record))[0]
    assert {f.name: f.content for f in task.golden} == {
        "counter.sv": solutions[record["id"]]["rtl/counter.sv"],
        "counter_top.sv": solutions[record["id"]]["rtl/counter_top.sv"]}
