#!/usr/bin/env bash
# The offline GPU compile check: every program a GPU context of clformer builds, compiled and
# linked for NVIDIA sm_90 (clang-15 to PTX with libclc, then ptxas), AMD gfx90a and gfx1100
# (clang-15 and ld.lld with libclc) and Intel dg2 (ocloc; pvc too with CLF_GPU_CHECK_ALL=1), with
# no GPU.
#
#   scripts/gpu-compile-check.sh [BUILD_DIR]      (default build; run after scripts/run.sh)
#
# 1. build/tools/clformer-gpu-variants runs every op on Oclgrind (which takes the GPU column of
#    the tunables) with clf_context_params.program_log_dir set, once per tunables profile, so the
#    library itself records each program's source, options and launched work-group (the vendor
#    profiles with --record-only: built and recorded, not run);
# 2. tools/gpu_compile_check.py compiles each recorded program for every target and prints a table
#    per kernel and target (registers, spills, stack/scratch, local memory, sm_90 occupancy).
# Any compile or link error fails, and so do a GPU-path attention kernel that spills or uses stack
# or scratch at head sizes 64 and 128, or runs below 25% occupancy on sm_90; and a missing compiler (installed here when absent:
# clang-15, libclc-15, lld-15, intel-opencl-icd's ocloc from Debian; ptxas from the CUDA toolkit
# at /usr/local/cuda/bin, else from PyPI's nvidia-cuda-nvcc-cu12 into the build folder).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
start=$SECONDS

bash scripts/install-missing.sh clang-15 libclc-15 lld-15 intel-opencl-icd oclgrind python3 \
    python3-pip >/dev/null
if ! command -v ptxas >/dev/null && [ ! -x /usr/local/cuda/bin/ptxas ]; then
    dir="$build/ptxas"
    if [ ! -x "$dir/nvidia/cuda_nvcc/bin/ptxas" ]; then
        echo "gpu-compile-check: no CUDA toolkit; ptxas from PyPI (nvidia-cuda-nvcc-cu12)"
        python3 -m pip install -q --no-deps --target "$dir" nvidia-cuda-nvcc-cu12
    fi
    export CLF_PTXAS_DIR="$PWD/$dir/nvidia/cuda_nvcc/bin"
fi

[ -x "$build/tools/clformer-gpu-variants" ] || cmake --build "$build" --target clformer-gpu-variants
lib=
for cand in /usr/lib/oclgrind/liboclgrind-rt-icd.so /usr/lib/*/oclgrind/liboclgrind-rt-icd.so; do
    [ -f "$cand" ] && lib=$cand && break
done
[ -n "$lib" ] || { echo "gpu-compile-check: Oclgrind's ICD is missing" >&2; exit 1; }
icd="$build/oclgrind-icd"
mkdir -p "$icd"
echo "$lib" >"$icd/oclgrind.icd"

logs="$build/gpu-variants"
rm -rf "$logs" "$logs".*.stderr
mkdir -p "$logs"
# One profile per tunables choice; each folder's name labels its rows of the table. Oclgrind is
# given each vendor's local memory and work-group limit (what its OpenCL drivers report:
# NVIDIA 48 KiB and 1024, AMD ROCm 64 KiB and 256, Intel dg2 64 KiB and 1024), so the library
# fits tiles and groups as it would there.
profile() { # profile NAME LOCAL_MEM MAX_WG [clformer-gpu-variants options]
    local name=$1 lmem=$2 wg=$3
    shift 3
    OCL_ICD_VENDORS="$PWD/$icd" OCLGRIND_LOCAL_MEM_SIZE=$lmem OCLGRIND_MAX_WGSIZE=$wg \
        "$build/tools/clformer-gpu-variants" --device oclgrind --log "$logs/$name" "$@" \
        2>"$logs.$name.stderr" || {
        cat "$logs.$name.stderr" >&2
        exit 1
    }
}
# Two at a time (each is one process compiling on the simulator), the next starting as soon as
# one ends: five profiles take 2.5 rounds of the pool, not the 3 that fixed pairs took. A failed
# one fails the check.
pool() { # pool "PROFILE ARGS"...
    local running=0 p
    for p in "$@"; do
        if [ "$running" -ge 2 ]; then
            wait -n || exit 1
            running=$((running - 1))
        fi
        # shellcheck disable=SC2086
        profile $p &
        running=$((running + 1))
    done
    while [ "$running" -gt 0 ]; do
        wait -n || exit 1
        running=$((running - 1))
    done
}
# gpu: the GPU column, for other vendors' GPUs, its kernels also run (Oclgrind checks each
# launch as a driver would). The vendors' profiles only record (--record-only: the library checks
# their launches' shapes itself); running them was three quarters of each one's time.
pool "gpu 32768 1024" "nvidia 49152 1024 --profile nvidia --record-only" \
    "amd-cdna 65536 256 --profile amd-cdna --record-only" \
    "amd-rdna 65536 256 --profile amd-rdna --record-only" \
    "intel 65536 1024 --profile intel --record-only"
echo "gpu-compile-check: variants recorded in $((SECONDS - start)) s"
# Each vendor's profile for its own targets; the GPU column (other vendors' GPUs, which no offline
# compiler here targets) for sm_90, where its programs are the nvidia profile's (NVIDIA's widths
# are the column's): compiled once. CI's time goal dropped two sets that found nothing the others
# do not: the column for gfx1100 and Intel's pvc beside dg2 (111 programs each);
# CLF_GPU_CHECK_ALL=1 puts them back.
if [ "${CLF_GPU_CHECK_ALL:-0}" = 1 ]; then
    gpu_targets=sm_90,gfx1100 intel_targets=dg2,pvc
else
    gpu_targets=sm_90 intel_targets=dg2
fi
python3 tools/gpu_compile_check.py --require-attention --json "$build/gpu-compile-check.json" \
    "$logs/gpu=$gpu_targets" "$logs/nvidia=sm_90" "$logs/amd-cdna=gfx90a" \
    "$logs/amd-rdna=gfx1100" "$logs/intel=$intel_targets"
echo "gpu-compile-check: took $((SECONDS - start)) s"
