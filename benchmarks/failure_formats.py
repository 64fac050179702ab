"""How many of a benchmark's testbench failure prints become structured failing checks.

For every testbench (default: the 50 RTLLM v2 ones under ``../shared/benchmarks/rtllm``) this
collects the format strings of its ``$display``/``$write`` calls outside comments, keeps those
that report a failure (the verdict judge reads the printed line as failing), renders each with
sample values (``%d`` padded as Icarus pads it, ``%b`` as bits, ``%h`` as hex) and asks
:func:`rtlforge.eda.mismatches.parse_mismatch` for a check. A print that carries values
(expected/observed, or a signal and time) is a per-check print; a count or banner line
("Test completed with 3 failures", "=====Error=====") has none to give.

    python benchmarks/failure_formats.py [TESTBENCH_ROOT] [--show]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from rtlforge.core.models import PassRule, Verdict
from rtlforge.eda.mismatches import parse_mismatch
from rtlforge.eda.verdicts import judge

DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "rtllm"
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_PRINT = re.compile(r'\$(?:display|write)[bho]?\s*\(\s*"((?:\\.|[^"\\])*)"')
_SPEC = re.compile(r"%(-?\d*)([dbhxtsoc])", re.IGNORECASE)
_SAMPLE = {"d": "5", "b": "0101", "h": "0f", "x": "0f", "t": "40", "s": "x", "o": "7", "c": "A"}


def render(fmt: str) -> str:
    """The line a format string prints, with sample values (``%d`` padded to 10 like Icarus)."""
    def value(m: re.Match[str]) -> str:
        sample = _SAMPLE[m[2].lower()]
        return sample.rjust(10) if m[2].lower() == "d" and not m[1] else sample
    return _SPEC.sub(value, fmt.replace("\\n", " ").replace('\\"', '"'))


def failure_prints(text: str) -> list[tuple[str, str]]:
    """(format, rendered line) of each print that reads as a failure."""
    out = []
    for fmt in _PRINT.findall(_COMMENTS.sub(" ", text)):
        line = render(fmt)
        if judge(line, PassRule(), nonce=None).verdict is Verdict.FAIL and \
                judge(line, PassRule(), nonce=None).reason != \
                "the testbench printed no recognisable verdict":
            out.append((fmt, line))
    return out


def main(argv: list[str]) -> int:
    show = "--show" in argv
    args = [a for a in argv if a != "--show"]
    root = Path(args[0]) if args else DEFAULT_ROOT
    benches = sorted(p for p in root.rglob("testbench.v") if not any(
        part.startswith("_") for part in p.relative_to(root).parts))
    with_checks = structured_benches = prints = parsed = 0
    banner_only = 0
    for bench in benches:
        found = failure_prints(bench.read_text(errors="replace"))
        checks = [(fmt, line) for fmt, line in found if _SPEC.search(fmt) and not re.search(
            r"\bcompleted\b|\bfailures\b|\berrors\b", fmt, re.IGNORECASE)]
        if not checks:
            banner_only += 1
            continue
        with_checks += 1
        good = 0
        for fmt, line in checks:
            m = parse_mismatch(line)
            ok = m is not None and (m.expected is not None or m.observed is not None)
            good += ok
            if show:
                print(f"{'ok ' if ok else '-- '} {bench.parent.name}: {fmt}")
        prints += len(checks)
        parsed += good
        structured_benches += good > 0
    print(f"{len(benches)} testbenches under {root}")
    print(f"  {banner_only} print only a count or a banner when they fail (nothing per check)")
    print(f"  {with_checks} print per-check failure lines: {prints} formats, {parsed} parsed into "
          f"checks with values; {structured_benches}/{with_checks} testbenches give at least one")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
