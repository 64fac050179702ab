"""The symbolic solver on VerilogEval v2 spec-to-rtl prompts, checked by the problems' own tests.

For every ``ProbNNN_name_prompt.txt`` under ``DIR/dataset_spec-to-rtl`` (or ``DIR`` itself),
the prompt file is given to the solver exactly as shipped. A declined prompt is ``declined``;
an emitted module is simulated with iverilog against the problem's ``_test.sv`` (``module tb``,
which instantiates ``TopModule`` and ``RefModule``) and ``_ref.sv``: ``solved`` when the
testbench prints ``Mismatches: 0 in M samples``, ``WRONG`` when it reports mismatches or the
testbench does not compile with the emitted module, ``unchecked`` when the test or reference
file is missing. A WRONG answer is the outcome this benchmark exists to catch.

The problems that are K-maps or truth tables (our reading of the issue's 11; see
docs/symbolic.md) are tallied separately from the rest.

Run: `.venv/bin/python benchmarks/symbolic_verilogeval.py PATH [--json OUT] [--only NAME...]`.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rtlforge.plugins.generators.symbolic.logic_min import Decline, solve

#: VerilogEval v2's K-map and truth-table problems (the set the issue's target counts).
KMAP_TRUTH_TABLE = (
    "kmap1", "kmap2", "kmap3", "kmap4", "m2014_q3", "2012_q1g", "ece241_2014_q3",
    "truthtable1", "ece241_2013_q7", "ece241_2013_q2", "2014_q3c",
)
_MISMATCHES = re.compile(r"Mismatches:\s*(\d+)\s+in\s+(\d+)\s+samples")


def _problem_name(prompt: Path) -> str:
    return re.sub(r"^Prob\d+_", "", prompt.name.removesuffix("_prompt.txt"))


def check(verilog: str, prompt: Path, work: Path) -> tuple[str, str]:
    """Simulate the emitted module against the problem's testbench; (status, detail)."""
    stem = prompt.name.removesuffix("_prompt.txt")
    test, ref = prompt.with_name(f"{stem}_test.sv"), prompt.with_name(f"{stem}_ref.sv")
    if not test.is_file() or not ref.is_file():
        return "unchecked", "no _test.sv/_ref.sv next to the prompt"
    design = work / f"{stem}_design.sv"
    design.write_text(verilog)
    sim = work / f"{stem}.vvp"
    build = subprocess.run(
        ["iverilog", "-g2012", "-o", str(sim), "-s", "tb", str(test), str(ref), str(design)],
        capture_output=True, text=True, timeout=120)
    if build.returncode != 0:
        return "WRONG", "testbench does not compile: " + build.stderr.strip().splitlines()[0]
    run = subprocess.run(["vvp", "-n", str(sim)], capture_output=True, text=True,
                         timeout=300, cwd=work)
    found = _MISMATCHES.findall(run.stdout)
    if not found:
        return "WRONG", "no 'Mismatches:' line in the simulation output"
    errors, samples = map(int, found[-1])
    return ("solved", f"0 in {samples}") if errors == 0 else ("WRONG", f"{errors} in {samples}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="verilog-eval checkout or dataset folder")
    parser.add_argument("--json", type=Path, help="write the per-problem results here")
    parser.add_argument("--only", nargs="*", default=None, help="problem names to run")
    args = parser.parse_args(argv)
    if shutil.which("iverilog") is None:
        print("iverilog is required", file=sys.stderr)
        return 2
    folder = args.path / "dataset_spec-to-rtl"
    folder = folder if folder.is_dir() else args.path
    prompts = sorted(folder.glob("Prob*_prompt.txt"))
    if args.only:
        prompts = [p for p in prompts if _problem_name(p) in set(args.only)]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for prompt in prompts:
            name = _problem_name(prompt)
            try:
                solution = solve(prompt.read_text())
            except Decline as exc:
                status, detail, kind = "declined", f"{exc.reason}: {exc}", None
            else:
                kind = solution.kind
                status, detail = check(solution.verilog, prompt, Path(tmp))
            results.append({"problem": prompt.name.removesuffix("_prompt.txt"), "name": name,
                            "kmap_or_truth_table": name in KMAP_TRUTH_TABLE, "status": status,
                            "kind": kind, "detail": detail})
            print(f"{status:9} {'*' if name in KMAP_TRUTH_TABLE else ' '} "
                  f"{prompt.name.removesuffix('_prompt.txt'):36} {kind or '':12} {detail}")
    for label, keep in (("K-map/truth-table (*)", True), ("other prompts", False)):
        group = [r for r in results if r["kmap_or_truth_table"] is keep]
        counts = {s: sum(r["status"] == s for r in group)
                  for s in ("solved", "declined", "WRONG", "unchecked")}
        print(f"{label}: {len(group)} prompts, " + ", ".join(f"{k} {v}" for k, v in
                                                            counts.items()))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 1 if any(r["status"] == "WRONG" for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
