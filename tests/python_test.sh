#!/usr/bin/env bash
# The Python package's tests, as CTest's "python" entry runs them: installs python/ with pip
# (`pip install ./python`: scikit-build-core builds the library with this checkout's CMake) into
# a virtual environment in the build folder, again only when the package's or the library's
# sources changed, then runs pytest on $CLF_DEVICE (the device the suite runs on).
#   python_test.sh BUILD_DIR SOURCE_DIR ABI_LAYOUT_PROGRAM
# Needs python3 with venv (Debian: python3-venv) and PyPI (the build backend, numpy, pytest).
set -euo pipefail
build=$1
src=$2
abi=$3
venv=$build/venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
stamp=$(cd "$src" && find python/pyproject.toml python/src CMakeLists.txt cmake include src \
    kernels -type f ! -name '*.pyc' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
if [ "$(cat "$venv/clformer.stamp" 2>/dev/null)" != "$stamp" ]; then
    start=$SECONDS
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$src/python[test]"
    echo "$stamp" >"$venv/clformer.stamp"
    echo "python_test: pip install ./python took $((SECONDS - start)) s"
fi
# From outside the checkout's python/ folder, so that `import clformer` is the installed package.
cd "$build"
export CLFORMER_ABI_LAYOUT=$abi
unset CLFORMER_LIBRARY
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$src/python" \
    -c "$src/python/pyproject.toml" "$src/python/tests"
