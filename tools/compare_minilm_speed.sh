#!/bin/sh
# clformer (clformer-bench's model_minilm record, on the default or given OpenCL device) against
# its peers on this machine's CPU, one after the other in one run: sentence-transformers on
# PyTorch (tools/bench_minilm_torch.py) and ONNX Runtime on the same model exported with
# torch.onnx (tools/bench_minilm_onnx.py). Prints each and clformer's ratio to each. Needs a
# build (BUILD_DIR, default build), the model (tools/fetch_minilm.sh), and python3 with torch,
# sentence-transformers, onnx and onnxruntime (PYTHON, default python3).
#   tools/compare_minilm_speed.sh [--device SPEC]
set -eu
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
py=${PYTHON:-python3}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
lscpu | sed -n 's/^Model name: *//p'
"$build/tools/clformer-bench" --quick --ops model_minilm --json "$out" "$@" >/dev/null
torch_json=$("$py" tools/bench_minilm_torch.py)
onnx_json=$("$py" tools/bench_minilm_onnx.py 2>/dev/null)
"$py" - "$out" "$torch_json" "$onnx_json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
clf = [r for r in run["results"] if r["op"] == "model_minilm"][0]
dev = run["device"]["name"]
torch_r, onnx_r = json.loads(sys.argv[2]), json.loads(sys.argv[3])
a, b, c = clf.get("sentences_per_s", 0), torch_r["sentences_per_s"], onnx_r["sentences_per_s"]
print("clformer (%s): %.2f sentences/s" % (dev, a))
print("sentence-transformers (torch %s, CPU, %d threads): %.2f sentences/s"
      % (torch_r["torch"], torch_r["threads"], b))
print("ONNX Runtime %s (CPU, %d threads): %.2f sentences/s"
      % (onnx_r["onnxruntime"], onnx_r["threads"], c))
print("ratio clformer / PyTorch: %.3f" % (a / b if b else 0))
print("ratio clformer / ONNX Runtime: %.3f" % (a / c if c else 0))
PY
