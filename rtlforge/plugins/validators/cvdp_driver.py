"""Runs one service of a CVDP harness inside the jail (``python -I cvdp_driver.py CONFIG NAME``).

The ``cvdp`` validator copies this file, unchanged, into a read-only harness folder and starts
it once per compose service; it needs only the standard library, pytest and cocotb. It lays out
the project the way the CVDP framework does (context, answer and harness files under
``code/``), sets the service's environment, and runs the service's pytest (or Python script) in
this process, so it can watch what happens instead of guessing from text the design may print:

- the cocotb runner's ``build`` and ``test`` are wrapped: a build whose simulator command failed
  (the design does not compile) is told apart from a harness calling the runner with arguments
  this cocotb does not take, and every ``test`` call's JUnit results file is read;
- the cocotb test modules named by ``MODULE`` are imported first, here, before any design runs:
  one that cannot be imported (a cocotb 1 module such as ``cocotb.binary``) is the harness's
  failure;
- ``cocotb.runner`` (cocotb 1's name of the runner) is an alias of ``cocotb_tools.runner``.

What it saw goes to a JSON report whose file name arrives on stdin: nothing the design can read
names it, and designs cannot write files. The host judges the verdict from that report only.
"""

import importlib
import inspect
import json
import os
import runpy
import sys
import traceback
import xml.etree.ElementTree as ET
from pathlib import Path

RESULTS_LIMIT = 4 * 1024 * 1024
LOG_TAIL = 3000
MESSAGE = 600
KEEP = 100


def last_line(text):
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    return lines[-1][:MESSAGE] if lines else ""


def short(nodeid):
    """A test's name without its file (``test_runner[8]``): the file lies outside the rootdir."""
    return nodeid.split("::", 1)[-1] if "::" in nodeid else nodeid


def first_line(value):
    """An exception's own message (pytest appends its assertion rewrite below it)."""
    lines = [line.strip() for line in str(value).strip().splitlines() if line.strip()]
    return lines[0][:MESSAGE] if lines else ""


class Recorder:
    """What the service did, as the host reads it (plain data, written as JSON)."""

    def __init__(self):
        self.items = {}
        self.failures = []
        self.collect_errors = []
        self.builds = []
        self.sims = []
        self.api = []
        self.harness = []
        self.unfound = []

    def current(self):
        return short(os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]) or "script"

    # pytest hooks (this object is handed to pytest.main as a plugin)
    def pytest_runtest_makereport(self, item, call):
        if call.excinfo is not None and call.excinfo.type.__name__ != "Skipped":
            self.failures.append({
                "nodeid": short(item.nodeid), "when": call.when, "type": call.excinfo.type.__name__,
                "message": first_line(call.excinfo.value) or call.excinfo.type.__name__,
                "import_error": issubclass(call.excinfo.type, ImportError)})

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.failed:
            self.items[short(report.nodeid)] = report.outcome

    def pytest_collectreport(self, report):
        if report.failed:
            self.collect_errors.append({"nodeid": report.nodeid or "the test file",
                                        "message": last_line(report.longreprtext)
                                        .removeprefix("E").strip()})

    def report(self):
        # bounded: a harness parametrised a thousand ways must not grow the report without end
        return {"items": dict(list(self.items.items())[:KEEP * 10]),
                "failures": self.failures[:KEEP], "collect_errors": self.collect_errors[:KEEP],
                "builds": self.builds[:KEEP], "sims": self.sims[:KEEP], "api": self.api[:KEEP],
                "harness": self.harness[:KEEP], "unfound": self.unfound[:KEEP]}

    def import_problem(self, module):
        """Why the cocotb test module ``module`` cannot be imported, or None.

        Imported here, before a simulator starts it: a module that fails (a cocotb 1 import,
        any error of its own) is the harness's failure. One not found at all is noted and left
        to the simulator, whose working folder may hold it."""
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and (module == exc.name or module.startswith(exc.name + ".")):
                self.unfound.append(module)
                return None
            return {"category": "cocotb_api" if "cocotb" in str(exc) else "harness",
                    "message": f"cocotb test module {module!r} cannot be imported: "
                               f"{type(exc).__name__}: {last_line(exc)}"}
        except BaseException as exc:  # noqa: BLE001 - task code: ImportError, SystemExit, ...
            return {"category": "cocotb_api" if "cocotb" in str(exc) else "harness",
                    "message": f"cocotb test module {module!r} cannot be imported: "
                               f"{type(exc).__name__}: {last_line(exc)}"}
        return None


def read_results(path):
    """(tests run, [failed test]) from a cocotb JUnit file, or None when there is none."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(RESULTS_LIMIT + 1)
    except OSError:
        return None
    if len(data) > RESULTS_LIMIT:
        return None
    try:
        root = ET.fromstring(data)
    except ET.ParseError:
        return None
    ran, failed = 0, []
    for case in root.iter("testcase"):
        if case.find("skipped") is not None:
            continue
        ran += 1
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            message = (problem.get("message") or last_line(problem.text or "")).strip()
            failed.append({"name": case.get("name", "?"), "type": problem.get("type", ""),
                           "message": message.splitlines()[0][:MESSAGE] if message else ""})
    return {"tests": ran, "failed": failed}


def tail(path):
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - LOG_TAIL))
            return fh.read(LOG_TAIL).decode("utf-8", errors="replace")
    except OSError:
        return ""


def watch_runner(recorder, runner_module):
    """Wrap the cocotb runner's build and test so their outcomes are recorded."""
    runner_class = runner_module.Runner
    original_build, original_test = runner_class.build, runner_class.test

    def binds(method, name, args, kwargs):
        try:
            inspect.signature(method).bind(*args, **kwargs)
        except TypeError as exc:
            recorder.api.append({"nodeid": recorder.current(),
                                 "message": f"Runner.{name}: {exc} (cocotb "
                                 f"{getattr(sys.modules.get('cocotb'), '__version__', '?')})"})
            raise

    def build(self, *args, **kwargs):
        binds(original_build, "build", (self, *args), kwargs)
        try:
            result = original_build(self, *args, **kwargs)
        except RuntimeError as exc:
            compile_failed = str(exc).startswith("Command failed")
            log = getattr(self, "log_file", None)
            entry = {"nodeid": recorder.current(), "ok": False, "message": last_line(exc),
                     "log": tail(log) if log else ""}
            (recorder.builds if compile_failed else recorder.harness).append(entry)
            raise
        except BaseException as exc:
            recorder.harness.append({"nodeid": recorder.current(),
                                     "message": f"Runner.build: {type(exc).__name__}: "
                                     f"{last_line(exc)}"})
            raise
        recorder.builds.append({"nodeid": recorder.current(), "ok": True})
        return result

    def test(self, *args, **kwargs):
        binds(original_test, "test", (self, *args), kwargs)
        modules = inspect.signature(original_test).bind(self, *args, **kwargs).arguments.get(
            "test_module", "")
        for module in modules.split(",") if isinstance(modules, str) else modules:
            problem = recorder.import_problem(str(module).strip())
            if problem is not None:
                recorder.harness.append({"nodeid": recorder.current(), **problem})
                raise ImportError(problem["message"])
        raised = None
        self.env = {}  # test() sets it afresh; no results file of an earlier call is read
        try:
            return original_test(self, *args, **kwargs)
        except BaseException as exc:
            raised = exc
            raise
        finally:
            env = getattr(self, "env", None) or {}
            results_file = env.get("COCOTB_RESULTS_FILE")
            results = read_results(results_file) if results_file else None
            entry = {"nodeid": recorder.current(), "results": results,
                     "raised": type(raised).__name__ if raised is not None else None,
                     "message": last_line(raised) if raised is not None else ""}
            if results is None and raised is not None and not isinstance(
                    raised, RuntimeError | SystemExit):
                recorder.harness.append({"nodeid": entry["nodeid"], "message":
                                         f"Runner.test: {type(raised).__name__}: "
                                         f"{entry['message']}"})
            else:
                recorder.sims.append(entry)

    runner_class.build, runner_class.test = build, test


def lay_out(config):
    """Folders first, then the files in the framework's order: context, answer, harness."""
    for folder in config["dirs"]:
        os.makedirs(folder, exist_ok=True)
    for kind, first, second in config["layout"]:
        if kind == "copy":  # a file put into the run directory, to its project path
            with open(first, "rb") as src:
                data, target = src.read(), second
        else:
            data, target = second.encode("utf-8"), first
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as dest:
            dest.write(data)


def run_service(config, service, recorder):
    """Run the service's command in this process; returns its exit status."""
    import pytest

    if service["kind"] == "pytest":
        args = [*service["args"], "-c", config["ini"], "--rootdir", service["cwd"]]
        return int(pytest.main(args, plugins=[recorder]))
    script, *rest = service["args"]
    sys.argv = [script, *rest]
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code is None or code == 0:
            return 0
        recorder.failures.append({"nodeid": "script", "when": "call", "type": "SystemExit",
                                  "message": str(code)[:MESSAGE], "import_error": False})
        return code if isinstance(code, int) else 1
    except BaseException as exc:  # noqa: BLE001 - the task's script failed, whatever it raised
        recorder.failures.append({"nodeid": "script", "when": "call",
                                  "type": type(exc).__name__, "message": last_line(exc),
                                  "import_error": isinstance(exc, ImportError)})
        return 1
    return 0


def logs(folder, since):
    """Tails of the log files the service wrote in its working folder (lint, synthesis)."""
    out = {}
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return out
    for name in names:
        path = os.path.join(folder, name)
        if name.endswith((".log", ".txt", ".rpt")) and os.path.isfile(path) \
                and not os.path.islink(path) and os.stat(path).st_mtime >= since:
            out[name] = tail(path)
        if len(out) >= 5:
            break
    return out


def main():
    config = json.loads(Path(sys.argv[1]).read_text())
    service = config["services"][sys.argv[2]]
    secret = sys.stdin.readline().strip()
    if not secret.isalnum():
        print("cvdp driver: no report name on stdin", file=sys.stderr)
        return 2
    report = {"service": sys.argv[2], "status": "ran"}
    recorder = Recorder()
    try:
        report.update(run(config, service, recorder))
    except BaseException as exc:  # noqa: BLE001 - the driver's own failure: infrastructure
        report.update(status="driver_error", message=f"{type(exc).__name__}: {last_line(exc)}",
                      trace=traceback.format_exc()[-2000:])
    report.update(recorder.report())
    path = os.path.join(config["workdir"], config["report_prefix"] + secret + ".json")
    with open(path, "x", encoding="utf-8") as fh:
        json.dump(report, fh)
    return 0


def run(config, service, recorder):
    import time

    try:
        lay_out(config)
    except OSError as exc:
        return {"status": "layout_failed", "message": f"{type(exc).__name__}: {exc}"}
    os.environ.update(service["env"])
    os.chdir(service["cwd"])
    extra = [p for p in service["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:0] = [*extra, *config["pythonpath"]]
    try:
        import cocotb_tools.runner as runner_module
        import pytest  # noqa: F401
    except ImportError as exc:
        return {"status": "missing", "message": f"{type(exc).__name__}: {exc}"}
    try:
        importlib.import_module("cocotb.runner")
    except ImportError:
        sys.modules["cocotb.runner"] = runner_module
        sys.modules["cocotb"].runner = runner_module
    for module in [m.strip() for m in service["env"].get("MODULE", "").split(",") if m.strip()]:
        problem = recorder.import_problem(module)
        if problem is not None:
            return {"status": "harness_error", "module": module,
                    "cocotb_api": problem["category"] == "cocotb_api",
                    "message": problem["message"]}
    watch_runner(recorder, runner_module)
    started = time.time() - 1
    status = run_service(config, service, recorder)
    return {"exit": status, "logs": logs(service["cwd"], started)}


if __name__ == "__main__":
    sys.exit(main())
