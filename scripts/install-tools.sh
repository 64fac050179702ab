#!/usr/bin/env bash
# Installs the EDA tools rtlforge runs (Debian/Ubuntu packages) when any is missing.
set -euo pipefail
need=()
for pair in iverilog:iverilog vvp:iverilog yosys:yosys verilator:verilator sta:opensta \
            berkeley-abc:berkeley-abc z3:z3 prlimit:util-linux unshare:util-linux \
            make:make g++:g++ chromium:chromium bwrap:bubblewrap; do
  tool=${pair%%:*}; pkg=${pair##*:}
  command -v "$tool" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -eq 0 ]; then
  echo "EDA tools: all present"; exit 0
fi
pkgs=$(printf '%s\n' "${need[@]}" | sort -u | tr '\n' ' ')
if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: missing packages ($pkgs) and no apt-get; install them with your package manager" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "error: need root (or sudo) to install: $pkgs" >&2; exit 1
  fi
fi
echo "installing: $pkgs"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $pkgs
