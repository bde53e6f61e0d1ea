#!/usr/bin/env bash
# Installs the built library into a scratch prefix, then builds and runs against it:
#  1. tests/consumer with find_package(clformer) (shared and static),
#  2. the C example of README.md with pkg-config.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/clf-install-XXXXXX")
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/clformer/clformer.h"
test -f "$work/prefix/lib/pkgconfig/clformer.pc" -o -f "$work/prefix/lib/x86_64-linux-gnu/pkgconfig/clformer.pc"

cmake -S "$src/tests/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
LD_LIBRARY_PATH="$(dirname "$(find "$work/prefix" -name 'libclformer.so*' | head -n1)")" \
    "$work/consumer/consumer"
"$work/consumer/consumer_static"

# The README's example, extracted from the first ```c block.
awk '/^```c$/{on=1; next} /^```$/{if (on) exit} on' "$src/README.md" >"$work/example.c"
test -s "$work/example.c"
pc=$(dirname "$(find "$work/prefix" -name clformer.pc | head -n1)")
export PKG_CONFIG_PATH="$pc"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o "$work/example" "$work/example.c" $(pkg-config --cflags --libs clformer) -lm
LD_LIBRARY_PATH="$(dirname "$(find "$work/prefix" -name 'libclformer.so*' | head -n1)")" "$work/example"
echo "install test: ok"
