#!/bin/sh
# Every helper function in a kernel file is `static inline`: a plain `inline` definition (C99
# rules, which OpenCL C follows) emits no symbol, and where a GPU compiler declines to inline a
# call (clang for nvptx and amdgcn does) the program fails to link ("Unresolved extern function
# 'act_v'"). PoCL, rusticl and Oclgrind do not show it (the last two pass -fgnu89-inline).
#   tests/kernel_helpers_static.sh SOURCE_DIR
set -u
bad=$(grep -nE '^[[:space:]]*inline[[:space:]]' "$1"/kernels/*.cl "$1"/tools/bench_kernels.cl)
if [ -n "$bad" ]; then
    echo "kernel helpers must be 'static inline', not 'inline':" >&2
    echo "$bad" >&2
    exit 1
fi
echo "every kernel helper is static inline"
