#!/usr/bin/env bash
# clformer-embed as a user runs it: a missing model gives a message saying how to fetch it (exit
# 1); with the model, embeddings from arguments and from stdin agree and --similarity prints a
# symmetric matrix with ones on the diagonal, --devices splits the encoder with the same output.
# Without the model (outside CI) only the first part
# runs.   embed_test.sh <clformer-embed> <source dir>
set -euo pipefail
embed=$1
src=$2
model=${CLF_MODEL_DIR:-$src/models/all-MiniLM-L6-v2}

out=$("$embed" --model /nonexistent/model "hi" 2>&1) && { echo "missing model accepted"; exit 1; }
grep -q "fetch_minilm.sh" <<<"$out" || { echo "no fetch hint in: $out"; exit 1; }
"$embed" --bogus 2>/dev/null && { echo "unknown option accepted"; exit 1; }

if [ ! -f "$model/model.safetensors" ]; then
    case "${CI:-}" in true | 1 | yes) echo "no model in $model under CI"; exit 1 ;; esac
    echo "no model in $model: skipping the rest"
    exit 0
fi
a=$("$embed" --model "$model" "A man is eating food." "The girl is carrying a baby.")
b=$(printf 'A man is eating food.\nThe girl is carrying a baby.\n' | "$embed" --model "$model")
[ "$a" = "$b" ] || { echo "arguments and stdin differ"; exit 1; }
[ "$(wc -l <<<"$a")" -eq 2 ] && [ "$(head -1 <<<"$a" | wc -w)" -eq 384 ] ||
    { echo "expected 2 embeddings of 384"; exit 1; }
# F16 weights: each embedding within cosine 0.9999 of the F32 one (test_minilm bounds the values)
c=$("$embed" --model "$model" --weights f16 "A man is eating food." "The girl is carrying a baby.")
paste -d ' ' <(echo "$a") <(echo "$c") | awk '{ n = NF / 2; d = 0; x = 0; y = 0
    for (i = 1; i <= n; i++) { d += $i * $(i + n); x += $i * $i; y += $(i + n) * $(i + n) }
    c = d / sqrt(x * y); printf "F16 vs F32 embedding %d: cosine %.7f\n", NR, c
    if (!(c >= 0.9999)) bad = 1 } END { exit bad }' || { echo "F16 embeddings differ"; exit 1; }
"$embed" --model "$model" --weights f8 "x" 2>/dev/null && { echo "--weights f8 accepted"; exit 1; }
# split by layers over two contexts of the test's device (a spec twice), 2 + 4: the same
# embeddings as printed (test_minilm bounds the values); a bad --split exits 2
dev=${CLF_DEVICE:-0}
e=$("$embed" --model "$model" --devices "$dev,$dev" --split 1,2 "A man is eating food." "The girl is carrying a baby.")
[ "$e" = "$a" ] || { echo "--devices $dev,$dev: embeddings differ from one context's"; exit 1; }
set +e
"$embed" --model "$model" --devices "$dev,$dev" --split 1 "x" 2>/dev/null
[ $? -eq 2 ] || { echo "--split 1 for two devices: exit code not 2"; exit 1; }
set -e
s=$("$embed" --model "$model" --similarity "A man is eating food." "A man is eating a piece of bread." "The girl is carrying a baby.")
echo "$s"
awk 'NF != 3 { exit 1 }
     { for (j = 1; j <= 3; j++) m[NR, j] = $j }
     END { for (i = 1; i <= 3; i++) { if (m[i, i] < 0.9999) exit 1
             for (j = 1; j <= 3; j++) if (m[i, j] != m[j, i]) exit 1 }
           if (!(m[1, 2] > m[1, 3])) exit 1 }' <<<"$s" || { echo "bad similarity matrix"; exit 1; }
t=$("$embed" --model "$model" --tokens "Hello, world!")
[ "$t" = "101 7592 1010 2088 999 102" ] || { echo "tokens: $t"; exit 1; }
echo "embed_test: ok"
