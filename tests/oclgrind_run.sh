#!/bin/sh
# Runs one test program on Oclgrind, the OpenCL simulator that checks every memory access, and
# fails it on any report Oclgrind makes (its log must stay empty), not only on a failed test.
#   tests/oclgrind_run.sh BUILD_DIR PROGRAM MODE [TEST,TEST,...]
# MODE races: data races (global and local memory) and API misuse, kernels as the library builds
#             them; the subset of tests covers every kernel and path at simulator-sized shapes.
# MODE uninit: reads of uninitialized values too, with kernels built at -O0 and vectors of at
#             most 8 (Oclgrind 21.10's uninitialized check crashes on optimized vector code and
#             misreads 16-wide vectors; see the README's notes on Oclgrind).
# Without Oclgrind the test is skipped (exit 77), except under CI, where it fails.
set -u
build=$1
prog=$2
mode=$3
only=${4:-}
lib=
for cand in /usr/lib/oclgrind/liboclgrind-rt-icd.so /usr/lib/*/oclgrind/liboclgrind-rt-icd.so; do
    [ -f "$cand" ] && lib=$cand && break
done
if [ -z "$lib" ]; then
    case "${CI:-}" in
    true | 1 | yes)
        echo "oclgrind_run: Oclgrind is not installed (apt-get install oclgrind), and CI is set" >&2
        exit 1
        ;;
    esac
    echo "oclgrind_run: Oclgrind is not installed (apt-get install oclgrind): skipping" >&2
    exit 77
fi
icd="$build/oclgrind-icd"
mkdir -p "$icd"
echo "$lib" >"$icd/oclgrind.icd"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
export OCL_ICD_VENDORS="$icd" CLF_DEVICE=oclgrind OCLGRIND_LOG="$log" CLF_TEST_ONLY="$only"
export OCLGRIND_DATA_RACES=1 OCLGRIND_CHECK_API=1
if [ "$mode" = uninit ]; then
    export OCLGRIND_UNINITIALIZED=1 OCLGRIND_BUILD_OPTIONS=-O0 CLF_TEST_MAX_VW=8
    export XDG_CACHE_HOME="$build/cache-oclgrind-O0" # -O0 builds: a program cache of their own
fi
"$prog"
rc=$?
if [ -s "$log" ]; then
    echo "oclgrind_run: Oclgrind reported:" >&2
    head -c 20000 "$log" >&2
    echo "oclgrind_run: FAILED: $(grep -c 'Kernel:' "$log") Oclgrind report(s) for $(basename "$prog")" >&2
    exit 1
fi
echo "oclgrind_run: no Oclgrind report ($mode) for $(basename "$prog")"
exit $rc
