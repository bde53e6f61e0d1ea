#!/usr/bin/env bash
# Peak memory of loading a 1.1 B-parameter Q4_0 GGUF file (tools/make_bench_gguf.py --1b:
# TinyLlama's shape) and running two decode steps with clformer-generate: the process's peak
# resident set (VmHWM: its heap, the OpenCL driver's, and the pages of the memory-mapped file it
# touched) against the file size, and what an F32 copy of the weights would take. On a CPU device
# (PoCL, rusticl) the device's buffers are host memory too and count in the peak.
#   tools/measure_load_memory.sh [--device SPEC]
# Environment: BUILD_DIR (default build), PYTHON (with gguf and numpy; default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
py=${PYTHON:-python3}
f="$build/peers/gguf/synth_1b_q4_0.gguf"
mkdir -p "$(dirname "$f")"
[ -f "$f" ] || "$py" tools/make_bench_gguf.py --1b "$f"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
/usr/bin/time -f "%M" -o "$out" "$build/tools/clformer-generate" "$@" --model "$f" --ids "1 300 301" \
    --max-new-tokens 2 --print-ids >/dev/null 2>&1
peak_kib=$(tail -n 1 "$out")
size=$(stat -c %s "$f")
lscpu | sed -n 's/^Model name: *//p'
awk -v p="$peak_kib" -v s="$size" 'BEGIN {
    printf "file %.0f MB (1.100 B parameters, Q4_0); an F32 copy would be 4400 MB\n", s / 1e6
    printf "peak resident %.0f MB = %.2f x the file\n", p * 1024 / 1e6, p * 1024 / s
}'
