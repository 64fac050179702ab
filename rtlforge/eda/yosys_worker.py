"""A persistent yosys (pyosys) worker: loads yosys and the liberty once, forks one child per job.

Run by :class:`rtlforge.plugins.estimators.ppa.YosysStaPPA` INSIDE the sandbox jail, as a plain
script (``python -I yosys_worker.py``): it imports only the standard library and ``pyosys``, never
rtlforge, and it parses untrusted Verilog, so it must never run in the rtlforge process.

Why fork: a yosys process keeps state across designs (interned names, ``autoidx``, hash
orders), and a long-lived one would give a design different names, hence possibly a different
mapping, depending on what it synthesised before. A child forked from the warmed-up parent
starts from the same state every time, so a result depends on the design and the library only;
the parent pays the start-up (import, liberty parse, ABC's SCL cache) once. A job that crashes,
calls yosys' ``log_error`` (which exits) or runs out of time ends only its child.

Protocol: 4-byte big-endian length + JSON, both ways, on stdin/stdout. The first message is
``{"ready": true, "version": ..., "scratch": DIR}``, the answer to
``{"liberty": PATH, "path": DIR_HOLDING_PYOSYS}``; a request
``{"commands": [...], "outputs": [name, ...], "timeout": s, "log_limit": n}`` runs the yosys
commands in a fresh design (cwd: the run directory; ``outputs`` are read back from DIR) and is
answered ``{"rc": int|null, "timed_out": bool, "log": str, "outputs": {name: text|null}}``.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from typing import Any

#: Warm-up design: exercises dfflibmap, abc and stat so the parent has the liberty parsed and
#: ABC's merged SCL written before the first job is forked.
_WARMUP = "module rtlforge_warmup(input c, input a, input b, output reg q);\n" \
          "always @(posedge c) q <= a & b;\nendmodule\n"


def _no_ptrace() -> None:
    """Make this process (and its children) non-dumpable: a job compromised through a yosys bug
    cannot attach to the parent to tamper with later jobs."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


def _read_message(inp: Any) -> dict[str, Any] | None:
    head = inp.read(4)
    if len(head) < 4:
        return None
    return json.loads(inp.read(int.from_bytes(head, "big")))


def _send(out: Any, msg: dict[str, Any]) -> None:
    body = json.dumps(msg).encode()
    out.write(len(body).to_bytes(4, "big") + body)
    out.flush()


def _flush_c_stdio() -> None:
    """Flush libc's buffers (yosys logs through them) so a child never inherits, and writes
    into its own log, text the parent printed."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).fflush(None)


def _run_child(ys: Any, commands: list[str], log_path: str) -> None:
    """In the forked child: yosys output to the log file, run the commands, exit."""
    _flush_c_stdio()  # anything still buffered goes to the parent's sink, not this log
    os.setpgid(0, 0)  # its own group: a timeout kills yosys-abc children with it
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    code = 0
    try:
        design = ys.Design()
        for command in commands:
            ys.run_pass(command, design)
    except BaseException as exc:  # noqa: BLE001 - reported through the log and exit status
        sys.stdout.write(f"\nERROR: {type(exc).__name__}: {exc}\n")
        code = 1
    sys.stdout.flush()
    _flush_c_stdio()  # os._exit skips libc's exit handlers: the log would lose its tail
    os._exit(code)


def _job(ys: Any, request: dict[str, Any], scratch: str) -> dict[str, Any]:
    job_dir = os.path.join(scratch, "job")
    shutil.rmtree(job_dir, ignore_errors=True)
    os.mkdir(job_dir)
    log_path = os.path.join(job_dir, "yosys.log")
    sys.stdout.flush()
    _flush_c_stdio()
    pid = os.fork()
    if pid == 0:
        try:
            _run_child(ys, list(request["commands"]), log_path)
        finally:
            os._exit(70)
    deadline = time.monotonic() + float(request["timeout"])
    status: int | None = None
    timed_out = False
    while True:
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(raw)
            break
        if time.monotonic() >= deadline:
            timed_out = True
            for target in (-pid, pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(target, signal.SIGKILL)
            os.waitpid(pid, 0)
            break
        time.sleep(0.002)
    limit = int(request.get("log_limit", 200_000))
    try:
        with open(log_path, errors="replace") as fh:
            log = fh.read()
    except OSError:
        log = ""
    if len(log) > limit:  # keep both ends: the banner is useless, the errors are at the end
        log = log[: limit // 4] + "\n...\n" + log[-(limit - limit // 4):]
    outputs: dict[str, str | None] = {}
    for name in request.get("outputs", ()):
        path = os.path.join(job_dir, os.path.basename(name))
        try:
            with open(path, errors="replace") as fh:
                outputs[name] = fh.read()
        except OSError:
            outputs[name] = None
    return {"rc": status, "timed_out": timed_out, "log": log, "outputs": outputs,
            "dir": job_dir}


def _warm_up(ys: Any, liberty: str, scratch: str) -> None:
    path = os.path.join(scratch, "warmup.v")
    with open(path, "w") as fh:
        fh.write(_WARMUP)
    design = ys.Design()
    for command in (f"read_verilog {path}", "synth -top rtlforge_warmup",
                    f"dfflibmap -liberty {liberty}", f"abc -liberty {liberty}",
                    f"stat -liberty {liberty}"):
        ys.run_pass(command, design)


def main() -> None:
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    # yosys writes to fd 1: keep the protocol on a private copy, send fd 1 to a sink.
    proto = os.fdopen(os.dup(1), "wb")
    sink = os.open(os.devnull, os.O_WRONLY)
    os.dup2(sink, 1)
    os.close(sink)
    _no_ptrace()
    config = _read_message(inp)
    if config is None:
        return
    # /tmp: the jail's private one (never the run directory, which the host gates and cleans).
    scratch = tempfile.mkdtemp(prefix="rtlforge-yosys-", dir="/tmp")
    try:
        if config.get("path"):  # where the host found pyosys (bound read-only in the jail)
            sys.path.insert(0, str(config["path"]))
        from pyosys import libyosys as ys

        version = str(ys.yosys_maybe_version()) if hasattr(ys, "yosys_maybe_version") else None
        ys.run_pass(f"libcache -scl -dir {os.path.join(scratch, 'scl')}", ys.Design())
        liberty = config.get("liberty")
        if liberty:
            ys.run_pass(f"libcache -enable {liberty}", ys.Design())
            _warm_up(ys, liberty, scratch)
    except BaseException as exc:  # noqa: BLE001 - the host reports it as an infrastructure error
        _send(proto, {"ready": False, "error": f"{type(exc).__name__}: {exc}"})
        return
    _send(proto, {"ready": True, "version": version, "scratch": scratch})
    del out
    while (request := _read_message(inp)) is not None:
        _send(proto, _job(ys, request, scratch))


if __name__ == "__main__":
    main()
