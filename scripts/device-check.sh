#!/usr/bin/env bash
# The test suite and the quick benchmark on a machine that has a vendor OpenCL driver but on which
# nothing can be installed (no apt, no internet), e.g. a lent GPU machine. Two steps:
#
#   here:   scripts/device-check.sh --pack [DIR]     (after scripts/run.sh built BUILD_DIR)
#           copies the test programs, the tools, libclformer and the shared libraries they need
#           (CLBlast, cJSON, CMocka, the OpenCL ICD loader, libstdc++) into DIR (default
#           devcheck/, git-ignored): about 28 MB, to carry along with the checkout.
#   there:  scripts/device-check.sh [--icd LIB] [--device SPEC] [DIR]
#           points the ICD loader at the vendor driver (an .icd file naming LIB, default
#           libnvidia-opencl.so.1, in a folder given by OCL_ICD_VENDORS), runs every test (each
#           test of a program as its own process) and `clformer-bench --quick --json`, and prints
#           a summary. 177 s on an H200 with 16 host cores and CLF_DEVCHECK_JOBS=12 (2026-12-04).
#   dry run: scripts/device-check.sh --local [DIR]
#           the same steps against this machine's own drivers (CI runs it on PoCL).
#
# Results go to $OUT if set (the device tool's output folder), else DIR/results: tests.log,
# bench.json, bench.txt, summary.txt (a line per program as each ends, so a run stopped from
# outside still leaves what it finished). Exit status: 0 when every test passed (or skipped for a
# missing model) and the benchmark ran. Limits, for a lease of a few minutes:
# CLF_DEVCHECK_TEST_TIMEOUT (s per test program, default 600), CLF_DEVCHECK_BENCH_TIMEOUT (s,
# default 900), CLF_DEVCHECK_JOBS (test programs side by side, default min(cores, 4)),
# CLF_DEVCHECK_ONLY (a bash regular expression: only the programs whose names match),
# CLF_DEVCHECK_BENCH_OPS (the bench's --ops list: only those records, after the peaks),
# CLF_DEVCHECK_BENCH_FLOORS (OP=PCT,...: the bench's --floor each, so that a record under that
# share of its roof fails the check: CI's speed gate).
set -uo pipefail
cd "$(dirname "$0")/.."

mode=run icd_lib=libnvidia-opencl.so.1 spec=gpu dir=devcheck
while [ $# -gt 0 ]; do
    case "$1" in
    --pack) mode=pack ;;
    --local) mode=local spec=${CLF_DEVICE:-} ;;
    --icd) icd_lib=$2 && shift ;;
    --device) spec=$2 && shift ;;
    -h | --help)
        sed -n 2,20p "$0"
        exit 0
        ;;
    -*)
        echo "device-check: unknown option $1" >&2
        exit 2
        ;;
    *) dir=$1 ;;
    esac
    shift
done

if [ "$mode" = pack ]; then
    build=${BUILD_DIR:-build}
    if [ ! -x "$build/tools/clformer-bench" ] || [ ! -x "$build/tests/test_host" ]; then
        echo "device-check: build first (bash scripts/run.sh test), then pack" >&2
        exit 1
    fi
    rm -rf "$dir"
    mkdir -p "$dir/bin" "$dir/lib"
    for f in "$build"/tests/test_* "$build"/tests/replay_* "$build"/tools/clformer-*; do
        [ -f "$f" ] && [ -x "$f" ] && cp "$f" "$dir/bin/"
    done
    cp -P "$build"/libclformer.so* "$dir/lib/"
    # Every shared library the programs load, but the C library and the dynamic loader (the
    # machine's own must be used) and the vendor's OpenCL driver (found through the ICD file).
    for f in "$dir"/bin/*; do ldd "$f"; done | awk '/=> \// {print $3}' | sort -u |
        grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
        grep -v "/$(basename "$build")/" | while read -r lib; do
        cp -L "$lib" "$dir/lib/"
    done
    echo "device-check: packed $(ls "$dir/bin" | wc -l) programs and $(ls "$dir/lib" | wc -l) libraries into $dir ($(du -sh "$dir" | cut -f1))"
    exit 0
fi

if [ ! -d "$dir/bin" ]; then
    echo "device-check: no $dir/bin: run scripts/device-check.sh --pack $dir where it was built" >&2
    exit 1
fi
out=${OUT:-$dir/results}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH="$PWD/$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CLF_SOURCE_DIR="$PWD" CLF_BENCH_PATH="$PWD/$dir/bin/clformer-bench"
# CLF_DEVCHECK_POCL_CACHE: a PoCL kernel cache to reuse (CI's dry run passes the PoCL suite's:
# the same kernels, so the dry run checks the pack, not PoCL's compiler a second time).
export XDG_CACHE_HOME="$work/cache" POCL_CACHE_DIR="${CLF_DEVCHECK_POCL_CACHE:-$work/pocl-cache}"
if [ "$mode" = run ]; then
    # A bare library name is looked up where vendor drivers live, so the .icd names a full path.
    if [ "${icd_lib#/}" = "$icd_lib" ]; then
        for d in $(ldconfig -p 2>/dev/null | awk -v n="$icd_lib" '$1 == n {print $NF}' | xargs -r dirname) \
            /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/lib /usr/lib; do
            if [ -e "$d/$icd_lib" ]; then
                icd_lib="$d/$icd_lib"
                break
            fi
        done
    fi
    echo "device-check: OpenCL driver $icd_lib (through OCL_ICD_VENDORS)"
    mkdir -p "$work/vendors"
    echo "$icd_lib" >"$work/vendors/vendor.icd"
    export OCL_ICD_VENDORS="$work/vendors"
fi
[ -n "$spec" ] && export CLF_DEVICE="$spec"

start=$SECONDS
"$dir/bin/clformer-bench" --list >"$out/devices.txt" 2>&1
cat "$out/devices.txt"
if ! "$dir/bin/test_host" >/dev/null 2>&1; then
    echo "device-check: the packed programs do not run here (missing libraries?):" >&2
    "$dir/bin/test_host" 2>&1 | head -5 >&2
    exit 1
fi

pass=0 fail=0 skip=0 failed=""
: >"$out/tests.log"
# Test programs run side by side, up to one per core (at most 4 by default): most of a cold run is
# kernel compiles on the host. A program of several tests runs each as its own process
# (CLF_TEST_LIST / CLF_TEST_ONLY of the harness), so one long program (test_attention: 300+ s on
# an H200 in one process, most of it NVIDIA's compiler) no longer sets the pace. test_bench
# times the library, so it runs alone, last.
logs=$(mktemp -d)
jobs_max=$(nproc)
[ "$jobs_max" -gt 4 ] && jobs_max=4
jobs_max=${CLF_DEVCHECK_JOBS:-$jobs_max}
test_timeout=${CLF_DEVCHECK_TEST_TIMEOUT:-600}
: >"$out/summary.txt"
run_one() { # run_one PROGRAM [TEST]: its output, exit status and seconds into $logs/UNIT.*
    local t=$1 only=${2:-} name unit args t0=$SECONDS
    name=$(basename "$t")
    unit=$name${only:+.$only}
    case "$name" in
    replay_*) args="$PWD/tests/fuzz/corpus/${name#replay_}" ;;
    *) args="" ;;
    esac
    # shellcheck disable=SC2086
    CLF_TEST_ONLY=$only timeout "$test_timeout" "$t" $args >"$logs/$unit.log" 2>&1
    local rc=$?
    echo $rc >"$logs/$unit.rc"
    echo $((SECONDS - t0)) >"$logs/$unit.s"
    # Progress as it happens: one short line each, appended whole.
    printf 'done %-48s rc %3d %4d s\n' "$unit" "$rc" $((SECONDS - t0)) >>"$out/summary.txt"
    if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
        { echo "=== $unit: exit $rc (last 150 lines)" && tail -n 150 "$logs/$unit.log"; } >"$logs/$unit.fail"
        cat "$logs/$unit.fail" >>"$out/failures.log"
    fi
}
units=() # "PROGRAM" or "PROGRAM TEST"
for t in "$dir"/bin/test_* "$dir"/bin/replay_*; do
    [ "$(basename "$t")" = test_bench ] && continue
    [[ "$(basename "$t")" =~ ${CLF_DEVCHECK_ONLY:-.} ]] || continue
    names=""
    # The harness's list: a header line, then a name a line (a program without the harness runs
    # its tests instead, and prints no header).
    case "$(basename "$t")" in test_*) names=$(CLF_TEST_LIST=1 timeout 60 "$t" 2>/dev/null) ;; esac
    if [[ "$(echo "$names" | head -n 1)" == "clformer tests of "* ]] &&
        [ "$(echo "$names" | grep -c .)" -gt 2 ]; then
        names=$(echo "$names" | tail -n +2)
        for n in $names; do units+=("$t $n"); done
    else
        units+=("$t")
    fi
done
for u in "${units[@]}"; do
    # shellcheck disable=SC2086
    run_one $u &
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
done
wait
if [ -x "$dir/bin/test_bench" ] && [[ test_bench =~ ${CLF_DEVCHECK_ONLY:-.} ]]; then
    units+=("$dir/bin/test_bench")
    run_one "$dir/bin/test_bench"
fi
for u in "${units[@]}"; do
    read -r t only <<<"$u"
    unit=$(basename "$t")${only:+.$only}
    cat "$logs/$unit.log" >>"$out/tests.log"
    rc=$(cat "$logs/$unit.rc")
    if [ "$rc" -eq 0 ]; then
        pass=$((pass + 1))
        status=passed
    elif [ "$rc" -eq 77 ]; then
        skip=$((skip + 1))
        status=skipped
    else
        fail=$((fail + 1))
        failed="$failed $unit"
        status="FAILED ($rc)"
    fi
    printf '%-48s %-12s %4d s\n' "$unit" "$status" "$(cat "$logs/$unit.s")" | tee -a "$out/summary.txt"
done
rm -rf "$logs"

bench_rc=0
line_buffered=""
command -v stdbuf >/dev/null && line_buffered="stdbuf -oL"
bench_ops=()
[ -n "${CLF_DEVCHECK_BENCH_OPS:-}" ] && bench_ops=(--ops "$CLF_DEVCHECK_BENCH_OPS")
for f in ${CLF_DEVCHECK_BENCH_FLOORS//,/ }; do
    bench_ops+=(--floor "$f")
done
timeout "${CLF_DEVCHECK_BENCH_TIMEOUT:-900}" $line_buffered "$dir/bin/clformer-bench" --quick "${bench_ops[@]}" \
    --json "$out/bench.json" >"$out/bench.txt" 2>"$out/bench.log" || bench_rc=$?

{
    echo
    echo "device-check: $pass passed, $fail failed, $skip skipped in $((SECONDS - start)) s"
    [ -n "$failed" ] && echo "  failed:$failed (see $out/tests.log)"
    if [ $bench_rc -eq 0 ]; then
        sed -n '1,/^op /p' "$out/bench.txt"
        grep -E '^(gemm|attention_decode|attention_tiled +1x8x2048)' "$out/bench.txt"
        grep -E '^(encoder_layer|decoder_step|model_minilm)' -A1 "$out/bench.txt" | grep -v '^--$'
        grep '^floor: ' "$out/bench.txt"
    else
        grep '^floor: ' "$out/bench.txt"
        echo "  clformer-bench failed ($bench_rc): see $out/bench.log"
    fi
} | tee -a "$out/summary.txt"
[ $fail -eq 0 ] && [ $bench_rc -eq 0 ]
