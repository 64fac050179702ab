#!/usr/bin/env bash
# GPU smoke test: a few GRPO (bf16; vLLM colocate when vllm imports) and PPO (bf16) steps and one
# transformers-generator call on CUDA, with the tiny model. Prints a JSON summary on stdout
# (device, step times, reward_mean per step); progress and tracebacks go to stderr.
#
#   bash scripts/gpu-smoke.sh [--steps 3] [--out DIR] [--skip-vllm]
#
# Exit codes: 0 all checks passed, 1 a check failed, 2 no CUDA device is visible (this is a
# failure, not a skip: run it on a GPU machine). PYTHON overrides the interpreter
# (default: .venv/bin/python when present, else python3). See docs/training.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

if [[ -z ${PYTHON:-} ]]; then
  if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi

status=0
"$PYTHON" benchmarks/gpu_smoke.py "$@" || status=$?
case $status in
  0) echo "[gpu-smoke] all checks passed" >&2 ;;
  2) echo "[gpu-smoke] FAILED: no CUDA device visible; run this on a machine with a GPU" >&2 ;;
  *) echo "[gpu-smoke] FAILED (exit $status): see the errors in the JSON above" >&2 ;;
esac
exit "$status"
