#!/bin/sh
# clformer (clformer-bench's model_minilm record, on the default or given OpenCL device) against
# sentence-transformers on this machine's CPU, one after the other in one run; prints both and
# the ratio. Needs a build (BUILD_DIR, default build), the model (tools/fetch_minilm.sh), and
# python3 with torch and sentence-transformers (PYTHON, default python3).
#   tools/compare_minilm_speed.sh [--device SPEC]
set -eu
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
py=${PYTHON:-python3}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$build/tools/clformer-bench" --quick --ops model_minilm --json "$out" "$@" >/dev/null
torch_json=$("$py" tools/bench_minilm_torch.py)
"$py" - "$out" "$torch_json" <<'PY'
import json, sys
clf = [r for r in json.load(open(sys.argv[1]))["results"] if r["op"] == "model_minilm"][0]
dev = json.load(open(sys.argv[1]))["device"]["name"]
ref = json.loads(sys.argv[2])
a, b = clf.get("sentences_per_s", 0), ref["sentences_per_s"]
print("clformer (%s): %.2f sentences/s" % (dev, a))
print("sentence-transformers (torch %s, CPU, %d threads): %.2f sentences/s"
      % (ref["torch"], ref["threads"], b))
print("ratio clformer / PyTorch: %.3f" % (a / b if b else 0))
PY
