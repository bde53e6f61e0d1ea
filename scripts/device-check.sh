#!/usr/bin/env bash
# The test suite and the quick benchmark on a machine that has a vendor OpenCL driver but on which
# nothing can be installed (no apt, no internet), e.g. a lent GPU machine. Two steps:
#
#   here:   scripts/device-check.sh --pack [DIR]     (after scripts/run.sh built BUILD_DIR)
#           copies the test programs, the tools, libclformer and the shared libraries they need
#           (CLBlast, cJSON, CMocka, the OpenCL ICD loader, libstdc++) into DIR (default
#           devcheck/, git-ignored): about 20 MB, to carry along with the checkout.
#   there:  scripts/device-check.sh [--icd LIB] [--device SPEC] [DIR]
#           points the ICD loader at the vendor driver (an .icd file naming LIB, default
#           libnvidia-opencl.so.1, in a folder given by OCL_ICD_VENDORS), runs every test program
#           and `clformer-bench --quick --json`, and prints a summary. Under 8 minutes on a GPU.
#   dry run: scripts/device-check.sh --local [DIR]
#           the same steps against this machine's own drivers (CI runs it on PoCL).
#
# Results go to $OUT if set (the device tool's output folder), else DIR/results: tests.log,
# bench.json, bench.txt, summary.txt. Exit status: 0 when every test passed (or skipped for a
# missing model) and the benchmark ran.
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
# Test programs run side by side, up to one per core (at most 4): most of a cold run is kernel
# compiles on the host. test_bench times the library, so it runs alone, last.
logs=$(mktemp -d)
jobs_max=$(nproc)
[ "$jobs_max" -gt 4 ] && jobs_max=4
run_one() { # run_one PROGRAM: its output, exit status and seconds into $logs/NAME.*
    local t=$1 name args t0=$SECONDS
    name=$(basename "$t")
    case "$name" in
    replay_*) args="$PWD/tests/fuzz/corpus/${name#replay_}" ;;
    *) args="" ;;
    esac
    # shellcheck disable=SC2086
    timeout 600 "$t" $args >"$logs/$name.log" 2>&1
    echo $? >"$logs/$name.rc"
    echo $((SECONDS - t0)) >"$logs/$name.s"
}
programs=()
for t in "$dir"/bin/test_* "$dir"/bin/replay_*; do
    [ "$(basename "$t")" = test_bench ] && continue
    programs+=("$t")
    run_one "$t" &
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
done
wait
[ -x "$dir/bin/test_bench" ] && programs+=("$dir/bin/test_bench") && run_one "$dir/bin/test_bench"
for t in "${programs[@]}"; do
    name=$(basename "$t")
    cat "$logs/$name.log" >>"$out/tests.log"
    rc=$(cat "$logs/$name.rc")
    if [ "$rc" -eq 0 ]; then
        pass=$((pass + 1))
        status=passed
    elif [ "$rc" -eq 77 ]; then
        skip=$((skip + 1))
        status=skipped
    else
        fail=$((fail + 1))
        failed="$failed $name"
        status="FAILED ($rc)"
    fi
    printf '%-28s %-12s %4d s\n' "$name" "$status" "$(cat "$logs/$name.s")" | tee -a "$out/summary.txt"
done
rm -rf "$logs"

bench_rc=0
timeout 900 "$dir/bin/clformer-bench" --quick --json "$out/bench.json" >"$out/bench.txt" \
    2>"$out/bench.log" || bench_rc=$?

{
    echo
    echo "device-check: $pass passed, $fail failed, $skip skipped in $((SECONDS - start)) s"
    [ -n "$failed" ] && echo "  failed:$failed (see $out/tests.log)"
    if [ $bench_rc -eq 0 ]; then
        sed -n '1,/^op /p' "$out/bench.txt"
        grep -E '^(gemm|attention_decode|attention_tiled +1x8x2048)' "$out/bench.txt"
        grep -E '^(encoder_layer|decoder_step|model_minilm)' -A1 "$out/bench.txt" | grep -v '^--$'
    else
        echo "  clformer-bench failed ($bench_rc): see $out/bench.log"
    fi
} | tee -a "$out/summary.txt"
[ $fail -eq 0 ] && [ $bench_rc -eq 0 ]
