#!/bin/sh
# clformer (clformer-bench's llm_prefill and llm_decode records, on the default or given OpenCL
# device) against transformers on this machine's CPU, one after the other in one run, on the same
# Llama-shaped random model; prints both and the ratios. Needs a build (BUILD_DIR, default build)
# and python3 with torch and transformers (PYTHON, default python3).
#   tools/compare_lm_speed.sh [--full] [--device SPEC]
set -eu
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
py=${PYTHON:-python3}
quick=--quick
if [ "${1:-}" = --full ]; then
    quick=
    shift
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
lscpu | sed -n 's/^Model name: *//p'
"$build/tools/clformer-bench" $quick --ops llm_prefill,llm_decode --json "$out" "$@" >/dev/null
torch_json=$("$py" tools/bench_lm_torch.py $quick)
"$py" - "$out" "$torch_json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
rec = {r["op"]: r for r in run["results"]}
ref = json.loads(sys.argv[2])
dev = run["device"]["name"]
for op, key in (("llm_prefill", "prefill_tokens_per_s"), ("llm_decode", "decode_tokens_per_s")):
    a, b = rec[op].get("tokens_per_s", 0), ref[key]
    print("%s: clformer (%s) %.1f tokens/s, transformers (torch %s, CPU, %d threads) %.1f "
          "tokens/s, ratio %.3f" % (op, dev, a, ref["torch"], ref["threads"], b, a / b if b else 0))
PY
