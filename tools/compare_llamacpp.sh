#!/usr/bin/env bash
# clformer against llama.cpp's CPU backend on the same GGUF files, in one run: prefill (a
# 128-token prompt) and decode (32 tokens) tokens/s of clformer-generate (on the default or given
# OpenCL device; --warmup: timed after one whole untimed run, as llama-bench times after its
# warm-up) and of llama-bench (pp128; tg32 at depth 128, where clformer's 32 steps follow its
# prompt; every core), interleaved run by run, medians and ratios printed per type, with the CPU
# model and its vector ISA. Both keep the KV cache in F16 (llama.cpp's default; its llama-bench
# takes no F32 cache).
#
# The files: tools/make_bench_gguf.py writes clformer-bench's 124 M Llama shape in F16, and
# llama-quantize --pure makes Q8_0, Q4_0 and Q4_K (Q4_K_S) files of it, every tensor in the one
# type. llama.cpp comes from the llama-cpp-python sdist on PyPI (vendor/llama.cpp), built into
# the build folder for this measurement only: it is never committed nor linked.
#
#   tools/compare_llamacpp.sh [--types q8_0,q4_0,q4_k] [--reps N] [--device SPEC] [--set NAME=V]
# (--set: a kernel tunable of clformer-generate, repeatable; --set linear.QX=2 decodes against
# int8 x as llama.cpp does)
# Environment: BUILD_DIR (default build), LLAMA_CPP_PYTHON (sdist version, default 0.3.36),
# PYTHON (with gguf and numpy; default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
py=${PYTHON:-python3}
ver=${LLAMA_CPP_PYTHON:-0.3.36}
types=q8_0,q4_0,q4_k
reps=3
cache=f16
device=()
while [ $# -gt 0 ]; do
    case "$1" in
    --types) types=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --device) device+=(--device "$2"); shift 2 ;;
    --set) device+=(--set "$2"); shift 2 ;;
    *) echo "usage: tools/compare_llamacpp.sh [--types LIST] [--reps N] [--device SPEC] [--set NAME=V]" >&2; exit 2 ;;
    esac
done
gen="$build/tools/clformer-generate"
[ -x "$gen" ] || { echo "compare_llamacpp: build clformer first ($gen)" >&2; exit 1; }
peers="$PWD/$build/peers"
mkdir -p "$peers/gguf"

# llama.cpp, once
lb="$peers/llama-build/bin/llama-bench"
lq="$peers/llama-build/bin/llama-quantize"
if [ ! -x "$lb" ] || [ ! -x "$lq" ]; then
    src="$peers/llama_cpp_python-$ver/vendor/llama.cpp"
    if [ ! -d "$src" ]; then
        "$py" -m pip download --no-deps --no-binary :all: "llama-cpp-python==$ver" -d "$peers" >&2
        tar xzf "$peers/llama_cpp_python-$ver.tar.gz" -C "$peers"
    fi
    # -march=native without AMX: on KVM guests that list amx_tile but do not grant its state,
    # ggml's AMX matmul dies on its first ldtilecfg (SIGILL; seen on an Intel Xeon, 2026-12-05)
    cmake -S "$src" -B "$peers/llama-build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
        -DCMAKE_C_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" \
        -DCMAKE_CXX_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" \
        -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_SERVER=OFF >/dev/null
    cmake --build "$peers/llama-build" -j"$(nproc)" --target llama-bench llama-quantize >/dev/null
fi

# the files
f16="$peers/gguf/bench_f16.gguf"
[ -f "$f16" ] || "$py" tools/make_bench_gguf.py "$f16"
declare -A qtype=([q8_0]=Q8_0 [q4_0]=Q4_0 [q4_k]=Q4_K_S [f16]=F16)
for t in ${types//,/ }; do
    [ -n "${qtype[$t]:-}" ] || { echo "compare_llamacpp: unknown type $t" >&2; exit 2; }
    f="$peers/gguf/bench_$t.gguf"
    [ "$t" = f16 ] || [ -f "$f" ] || "$lq" --pure "$f16" "$f" "${qtype[$t]}" >/dev/null 2>&1
done

lscpu | sed -n 's/^Model name: *//p'
[ ${#device[@]} -eq 0 ] || echo "clformer-generate ${device[*]}"
echo "ISA: $(grep -o -w -E 'avx512f|avx512bw|avx512_bf16|avx512_vnni|avx512vnni|avx2|fma' /proc/cpuinfo | sort -u | tr '\n' ' ')"
threads=$(nproc)
ids=$(seq 300 427 | tr '\n' ' ')
med() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
printf "%-5s %12s %12s %7s %12s %12s %7s\n" type "clf pp128" "llama pp128" ratio "clf tg32" "llama tg32" ratio
for t in ${types//,/ }; do
    f="$peers/gguf/bench_$t.gguf"
    # one untimed run each: clformer's program cache and the page cache warm
    "$gen" "${device[@]}" --cache "$cache" --model "$f" --ids "$ids" --max-new-tokens 2 --print-ids >/dev/null 2>&1
    cpp=() ctg=() lpp=() ltg=()
    for ((r = 0; r < reps; r++)); do
        s=$("$gen" "${device[@]}" --cache "$cache" --model "$f" --ids "$ids" --max-new-tokens 33 --ignore-eos --print-ids --stats --warmup 2>&1 >/dev/null)
        cpp+=("$(echo "$s" | sed -n 's/^prompt: .*tokens, \([0-9.]*\) tokens\/s.*/\1/p')")
        ctg+=("$(echo "$s" | sed -n 's/^generated: .*tokens, \([0-9.]*\) tokens\/s.*/\1/p')")
        j=$("$lb" -m "$f" -p 128 -n 0 -t "$threads" -ctk "$cache" -ctv "$cache" -r 1 -o csv 2>/dev/null)
        lpp+=("$(echo "$j" | "$py" -c 'import csv,sys; r=[x for x in csv.DictReader(sys.stdin) if int(x["n_prompt"])>0]; print(r[0]["avg_ts"])')")
        j=$("$lb" -m "$f" -p 0 -n 32 -d 128 -t "$threads" -ctk "$cache" -ctv "$cache" -r 1 -o csv 2>/dev/null)
        ltg+=("$(echo "$j" | "$py" -c 'import csv,sys; r=[x for x in csv.DictReader(sys.stdin) if int(x["n_gen"])>0]; print(r[0]["avg_ts"])')")
    done
    a=$(printf "%s\n" "${cpp[@]}" | med) b=$(printf "%s\n" "${lpp[@]}" | med)
    c=$(printf "%s\n" "${ctg[@]}" | med) d=$(printf "%s\n" "${ltg[@]}" | med)
    awk -v t="$t" -v a="$a" -v b="$b" -v c="$c" -v d="$d" \
        'BEGIN {printf "%-5s %12.1f %12.1f %7.3f %12.1f %12.1f %7.3f\n", t, a, b, a / b, c, d, c / d}'
done
echo "(tokens/s, medians of $reps interleaved runs; llama-bench -t $threads, its tg32 at depth 128 and"
echo " clformer's 32 steps after the 128-token prompt; KV cache $cache in both)"
