"""Run every command the tutorials show, in order, and check each one's exit code.

The tutorials (``docs/tutorials/*.md``) promise that every command they show works in this
repository. Their ``console`` blocks are the script: a line starting with ``$ `` is a command
(continued on the next line after a trailing backslash), the lines after it are its shown
output. A trailing ``# exit N`` says the command is expected to exit N (default 0). A command
ending in ``&`` starts in the background and the runner waits until it has printed the first
line of its shown output (a server saying where it listens); ``kill %1`` stops it.

    python scripts/run_tutorials.py                       # every tutorial, in name order
    python scripts/run_tutorials.py docs/tutorials/evaluate-samples.md

Run from the repository root with the venv's Python (its ``bin`` is put first on PATH, so
``rtlforge`` and ``python`` are the venv's). It takes minutes (the GRPO tutorial trains for
about 2.5 minutes on two idle cores) and writes under ``runs/tutorial/``; it is not part of
``make test``. ``tests/docs/test_docs_commands.py`` checks the ``rtlforge`` commands' names and
flags against the click commands on every test run instead.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_EXIT = re.compile(r"\s+#\s*exit\s+(\d+)\s*$")


@dataclass
class Command:
    """One ``$`` line of a console block, with what the page shows after it."""

    text: str
    page: str
    expected_exit: int = 0
    output: list[str] = field(default_factory=list)

    @property
    def background(self) -> bool:
        return self.text.endswith("&")


def commands(page: Path) -> list[Command]:
    """The commands of a page's ``console`` blocks, in order."""
    out: list[Command] = []
    in_block = False
    pending = ""
    for line in page.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            in_block = stripped == "```console"
            pending = ""
            continue
        if not in_block:
            continue
        if pending:
            pending = f"{pending} {stripped}"
        elif stripped.startswith("$ "):
            pending = stripped[2:]
        else:
            if out and out[-1].page == page.name and line:
                out[-1].output.append(line)
            continue
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        expected = 0
        match = _EXIT.search(pending)
        if match:
            expected = int(match.group(1))
            pending = pending[:match.start()]
        out.append(Command(text=pending.strip(), page=page.name, expected_exit=expected))
        pending = ""
    return out


def _wait_for(log: Path, line: str, proc: subprocess.Popen[bytes], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and line.strip() in log.read_text(errors="replace"):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.5)
    return False


def run(pages: list[Path]) -> int:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
                                 f"{os.environ.get('PATH', '')}"}
    (REPO / "runs" / "tutorial").mkdir(parents=True, exist_ok=True)
    failures = 0
    background: list[subprocess.Popen[bytes]] = []
    try:
        for page in pages:
            for cmd in commands(page):
                start = time.monotonic()
                if cmd.text == "kill %1":
                    for proc in background:
                        proc.send_signal(signal.SIGTERM)
                        proc.wait(timeout=60)
                    background.clear()
                    print(f"[{page.name}] {cmd.text}: stopped", flush=True)
                    continue
                if cmd.background:
                    log = REPO / "runs" / "tutorial" / f"background-{len(background)}.log"
                    with log.open("wb") as fh:
                        proc = subprocess.Popen(["bash", "-c", cmd.text[:-1]], cwd=REPO,
                                                env=env, stdout=fh, stderr=subprocess.STDOUT)
                    background.append(proc)
                    ready = _wait_for(log, cmd.output[0], proc, 300) if cmd.output else True
                    status = "ready" if ready else "NOT READY"
                    failures += not ready
                    print(f"[{page.name}] {cmd.text} -> {status} "
                          f"({time.monotonic() - start:.1f} s)", flush=True)
                    continue
                result = subprocess.run(["bash", "-c", cmd.text], cwd=REPO, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        check=False)
                ok = result.returncode == cmd.expected_exit
                failures += not ok
                print(f"[{page.name}] {cmd.text} -> exit {result.returncode}"
                      f"{'' if ok else f' (expected {cmd.expected_exit})'} "
                      f"({time.monotonic() - start:.1f} s)", flush=True)
                if not ok:
                    print(result.stdout.decode(errors="replace")[-3000:], flush=True)
    finally:
        for proc in background:
            proc.kill()
            proc.wait()
    print(f"{failures} command(s) failed" if failures else "every command ran as shown")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", type=Path,
                        help="tutorial pages (default: docs/tutorials/*.md)")
    args = parser.parse_args(argv)
    pages = args.pages or sorted((REPO / "docs" / "tutorials").glob("*.md"))
    return run([p.resolve() for p in pages])


if __name__ == "__main__":
    raise SystemExit(main())
