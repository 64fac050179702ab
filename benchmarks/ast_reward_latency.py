"""Latency of the AST-similarity reward, per backend.

Measures, in one process:
- first call per backend in a fresh interpreter (pyverilog: includes building its LALR tables,
  once per process);
- warm latency of one completion against a cached reference, median over all completions;
- a GRPO group: 16 completions against one (uncached) reference, median over designs.

Designs are the RTLLM references when ../shared is present (completions: the real ChatGPT-3.5/4
answers for the design plus mutated copies of the reference, up to 16), else a built-in example.

Run: `.venv/bin/python benchmarks/ast_reward_latency.py [--designs N]`.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rtlforge.rewards.ast import ASTSimilarityReward

ROOT = Path(__file__).resolve().parents[1]
RTLLM = ROOT.parent / "shared" / "benchmarks" / "rtllm"
EXAMPLE = """module acc(input clk, input rst, input [7:0] d, output reg [7:0] q);
  always @(posedge clk) begin
    if (rst) q <= 8'd0;
    else q <= q + d;
  end
endmodule
"""
MUTATIONS = [("+", "-"), ("posedge", "negedge"), ("<=", "="), ("&", "|"), ("==", "!="),
             ("begin", "begin\n  ;"), ("1'b1", "1'b0"), ("else", "else ;\n else")]


def designs(limit: int) -> list[tuple[str, str, list[str]]]:
    """(name, reference, 16 completions) per design."""
    out = []
    refs = sorted(RTLLM.glob("[A-Z]*/**/verified_*.v")) if RTLLM.is_dir() else []
    for path in refs[:limit]:
        name = path.stem.removeprefix("verified_")
        ref = path.read_text()
        real = [p.read_text() for p in sorted(RTLLM.glob(f"_chatgpt*/t*/{name}.v"))]
        out.append((name, ref, fill(ref, real)))
    return out or [("example", EXAMPLE, fill(EXAMPLE, []))]


def fill(ref: str, real: list[str]) -> list[str]:
    group = real[:16]
    i = 0
    while len(group) < 16:
        old, new = MUTATIONS[i % len(MUTATIONS)]
        group.append(re.sub(re.escape(old), new, ref, count=1 + i // len(MUTATIONS)))
        i += 1
    return group


def first_call(backend: str, ref: str, group: list[str]) -> float:
    """The first score in a fresh interpreter (imports excluded, parser build included)."""
    code = ("import sys, time, json; from rtlforge.rewards.ast import ASTSimilarityReward as R; "
            "a = json.load(sys.stdin); r = R(a[0]); t = time.perf_counter(); "
            "r.score_one(a[2][0], a[1]); print(time.perf_counter() - t)")
    proc = subprocess.run([sys.executable, "-c", code], input=json.dumps([backend, ref, group]),
                          capture_output=True, text=True, check=True)
    return float(proc.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--designs", type=int, default=50)
    args = parser.parse_args()
    data = designs(args.designs)
    print(f"{len(data)} designs, 16 completions each")
    for backend in ("pyverilog", "pyslang", "auto"):
        first = first_call(backend, *data[0][1:])
        reward = ASTSimilarityReward(backend)  # type: ignore[arg-type]
        warm = []
        for _name, ref, group in data:
            reward.score_one(ref, ref)  # parses and caches the reference
            for completion in group:
                start = time.perf_counter()
                reward.score_one(completion, ref)
                warm.append(time.perf_counter() - start)

        fresh = ASTSimilarityReward(backend)  # type: ignore[arg-type]
        per_group, statuses = [], {}
        for _name, ref, group in data:
            start = time.perf_counter()
            scores = fresh.score_detailed([""] * 16, group, reference=[ref] * 16)
            per_group.append(time.perf_counter() - start)
            for s in scores:
                key = f"{s.status}/{s.backend}"
                statuses[key] = statuses.get(key, 0) + 1
        print(f"\n[{backend}]")
        print(f"  first call (fresh process):     {first * 1e3:9.1f} ms")
        print(f"  warm, one completion (median):    {statistics.median(warm) * 1e3:9.2f} ms"
              f"   (max {max(warm) * 1e3:.1f} ms)")
        print(f"  group of 16 (median):             {statistics.median(per_group) * 1e3:9.1f} ms"
              f"   (max {max(per_group) * 1e3:.1f} ms)")
        print(f"  outcomes: {dict(sorted(statuses.items()))}")


if __name__ == "__main__":
    main()
