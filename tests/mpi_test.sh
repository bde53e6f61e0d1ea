#!/usr/bin/env bash
# clformer-generate under mpirun (a build with -DCLF_MPI=ON), one pipeline stage per rank, or
# with --tensor-parallel one shard of every layer per rank: with 2 and 3 ranks, greedy and sampled (repetition penalty, batch of 5 in micro-batches, prompts in
# chunks), the ids equal
# the one-process run's; --stats prints each rank's layers and weights and what crossed each
# boundary; a rank killed mid-run and a rank that hangs make every rank exit non-zero within the
# timeout with a message naming the rank; more ranks than layers are refused. One run crosses a
# real network: two network namespaces joined by a veth pair, one rank in each, MPI over TCP
# (needs root and iproute2: under CI a failure, elsewhere a stated skip).
#   mpi_test.sh <clformer-generate> <source dir>
set -euo pipefail
gen=$1
src=$2
data=$src/tests/data/lm
deep=$data/gguf/llama_deep_q4_0.gguf
export CLF_DEVICE=${CLF_DEVICE:-pthread}
mpi=(mpirun --allow-run-as-root --oversubscribe)
for v in POCL_CACHE_DIR XDG_CACHE_HOME CLF_DEVICE POCL_DEVICES RUSTICL_ENABLE; do
    [ -n "${!v:-}" ] && mpi+=(-x "$v")
done
tmp=$(mktemp -d)
ns1=clf_a$$ ns2=clf_b$$
cleanup() {
    ip netns del "$ns1" 2>/dev/null || true
    ip netns del "$ns2" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

same() { # same NAME RANKS 'MPI-ONLY ARGS' ARGS...: the ids of mpirun -np RANKS equal one process's
    local name=$1 ranks=$2 only=$3
    shift 3
    local one many
    one=$("$gen" "$@")
    # shellcheck disable=SC2086
    many=$("${mpi[@]}" -np "$ranks" "$gen" "$@" $only 2>"$tmp/err") || { cat "$tmp/err"; echo "$name: failed"; exit 1; }
    [ "$one" = "$many" ] || { echo "$name: $ranks ranks gave '$many', one process '$one'"; exit 1; }
    echo "$name: $ranks ranks give the one-process ids"
}
greedy=(--print-ids --ignore-eos --max-new-tokens 12 --ids "1 5 9 33 7")
sampled=(--print-ids --max-new-tokens 10 --batch 5 --temperature 0.8 --top-k 20 --seed 7
    --repetition-penalty 1.3 --ids "1 5 9 33 7")
same "llama_gqa greedy" 2 "" --model "$data/llama_gqa" "${greedy[@]}"
same "gpt2 greedy" 2 "" --model "$data/gpt2" "${greedy[@]}"
same "llama_gqa sampled, 3 micro-batches" 2 "--micro-batches 3" --model "$data/llama_gqa" "${sampled[@]}"
same "5-layer Q4_0 greedy" 3 "" --model "$deep" "${greedy[@]}"
same "5-layer Q4_0 sampled, --split 1,3,1" 3 "--split 1,3,1" --model "$deep" "${sampled[@]}"
same "5-layer Q4_0 sampled, prompts in chunks of 2" 3 "--prefill-chunk 2 --micro-batches 2" \
    --model "$deep" "${sampled[@]}"
same "gpt2 sampled after a warm-up run" 2 "" --model "$data/gpt2" "${sampled[@]}" --warmup
# tensor parallel: every rank a shard of every layer
tp=$data/gguf/llama_tp_q4_0.gguf # 6 query heads on 3 K/V heads, FFN 192
same "tensor parallel llama_gqa greedy" 2 "--tensor-parallel" --model "$data/llama_gqa" "${greedy[@]}"
same "tensor parallel gpt2 sampled" 2 "--tensor-parallel" --model "$data/gpt2" "${sampled[@]}"
same "tensor parallel 5-layer Q4_0 sampled" 2 "--tensor-parallel" --model "$deep" "${sampled[@]}"
same "tensor parallel Q4_0 greedy" 3 "--tensor-parallel" --model "$tp" "${greedy[@]}"
same "tensor parallel Q4_0 sampled after a warm-up run" 3 "--tensor-parallel --warmup" \
    --model "$tp" "${sampled[@]}"

# --stats: each rank's share of the layers and weights, and the traffic at each boundary
"${mpi[@]}" -np 3 "$gen" --model "$deep" "${greedy[@]}" --stats >/dev/null 2>"$tmp/err"
for want in "^rank 0: layers 0 .. 1, embedding, " "^rank 1: layers 2 .. 3, [0-9.]* MB" \
    "^rank 2: layers 4 .. 4, head, " "^boundary 0 -> 1: 13 messages" "^boundary 1 -> 2: 13 messages" \
    "^generated: 12 tokens"; do
    grep -q "$want" "$tmp/err" || { cat "$tmp/err"; echo "--stats: no line matching '$want'"; exit 1; }
done
echo "--stats: ranks' layers and boundary traffic printed"
"${mpi[@]}" -np 3 "$gen" --model "$tp" "${greedy[@]}" --tensor-parallel --stats >/dev/null 2>"$tmp/err"
for want in "^rank 0: shard 0 of 3 of every layer (2 of 6 heads) and of the head, embedding, " \
    "^rank 2: shard 2 of 3 of every layer (2 of 6 heads) and of the head, embedding, [0-9.]* MB" \
    "^all-reduces: 60, " "^generated: 12 tokens"; do
    grep -q "$want" "$tmp/err" || { cat "$tmp/err"; echo "--tensor-parallel --stats: no line matching '$want'"; exit 1; }
done
echo "--tensor-parallel --stats: shards and all-reduces printed"
# a cut that is not even: 3 K/V heads over 2 ranks
if "${mpi[@]}" -np 2 "$gen" --model "$tp" "${greedy[@]}" --tensor-parallel >/dev/null 2>"$tmp/err"; then
    echo "2 shards of 3 K/V heads accepted"; exit 1
fi
grep -q "2 shards do not divide the model's 3 key/value heads" "$tmp/err" || { cat "$tmp/err"; echo "no uneven-cut message"; exit 1; }

# more ranks than layers
if "${mpi[@]}" -np 3 "$gen" --model "$data/llama_gqa" "${greedy[@]}" >/dev/null 2>"$tmp/err"; then
    echo "3 ranks for 2 layers accepted"; exit 1
fi
grep -q "3 ranks for a model of 2 layers" "$tmp/err" || { cat "$tmp/err"; echo "no rank count message"; exit 1; }

# a rank killed mid-run, a rank that hangs: every rank stops within the timeout (10 s here),
# in a pipeline and in tensor parallel
for fault in 1:3 2:2:hang 1:3:tp 2:2:hang:tp; do
    start=$SECONDS
    set +e
    model=$deep mode=()
    case $fault in *:tp) model=$tp mode=(--tensor-parallel) ;; esac
    timeout 120 "${mpi[@]}" -np 3 -x CLF_MPI_DIE_AT="${fault%:tp}" "$gen" --model "$model" \
        --timeout 10 "${mode[@]}" "${greedy[@]}" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    set -e
    took=$((SECONDS - start))
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || { cat "$tmp/err"; echo "fault $fault: exit $rc"; exit 1; }
    [ $took -le 60 ] || { echo "fault $fault: $took s to stop"; exit 1; }
    rank=${fault%%:*}
    # named by another rank, or by mpirun (the hook's own line does not count)
    grep -v CLF_MPI_DIE_AT "$tmp/err" | grep -Eq "rank $rank did not|from rank $rank|process rank $rank " ||
        { cat "$tmp/err"; echo "fault $fault: rank $rank not named"; exit 1; }
    [ ! -s "$tmp/out" ] || { echo "fault $fault: output printed: $(cat "$tmp/out")"; exit 1; }
    echo "fault $fault: every rank stopped (exit $rc) in $took s, rank $rank named"
done

# across a network: ranks in two network namespaces joined by a veth pair, MPI over TCP
netns_fail() {
    case "${CI:-}" in true | 1 | yes) echo "network namespaces: $1 (CI is set: failing)"; exit 1 ;; esac
    echo "network namespaces: $1: skipping the network run"
    exit 0
}
command -v ip >/dev/null || netns_fail "no ip (iproute2)"
ip netns add "$ns1" 2>/dev/null && ip netns add "$ns2" || netns_fail "cannot create namespaces (not root?)"
ip link add "v$$a" type veth peer name "v$$b"
ip link set "v$$a" netns "$ns1"
ip link set "v$$b" netns "$ns2"
ip -n "$ns1" addr add 10.99.0.1/24 dev "v$$a"
ip -n "$ns2" addr add 10.99.0.2/24 dev "v$$b"
for n in "$ns1" "$ns2"; do ip -n "$n" link set lo up; done
ip -n "$ns1" link set "v$$a" up
ip -n "$ns2" link set "v$$b" up
# mpirun starts the remote daemon through this agent ("agent HOST COMMAND"): in HOST's namespace
cat >"$tmp/agent" <<EOF
#!/bin/sh
host=\$1; shift
echo "\$host" >>"$tmp/launched"
case "\$host" in 10.99.0.1) ns=$ns1 ;; 10.99.0.2) ns=$ns2 ;; *) exit 1 ;; esac
exec ip netns exec "\$ns" sh -c "\$*"
EOF
chmod +x "$tmp/agent"
one=$("$gen" --model "$data/llama_gqa" "${greedy[@]}")
net=$(timeout 120 ip netns exec "$ns1" "${mpi[@]}" -np 2 --host 10.99.0.1,10.99.0.2 \
    --mca plm_rsh_agent "$tmp/agent" --mca btl tcp,self --mca btl_tcp_if_include 10.99.0.0/24 \
    --mca oob_tcp_if_include 10.99.0.0/24 "$gen" --model "$data/llama_gqa" "${greedy[@]}" \
    2>"$tmp/err") || { cat "$tmp/err"; echo "network run failed"; exit 1; }
[ "$net" = "$one" ] || { echo "network run gave '$net', one process '$one'"; exit 1; }
grep -qx 10.99.0.2 "$tmp/launched" || { echo "rank 1 was not started in $ns2"; exit 1; }
echo "network: rank 0 in $ns1 (10.99.0.1), rank 1 in $ns2 (10.99.0.2), MPI over TCP on a veth pair: same ids"
: >"$tmp/launched"
net=$(timeout 120 ip netns exec "$ns1" "${mpi[@]}" -np 2 --host 10.99.0.1,10.99.0.2 \
    --mca plm_rsh_agent "$tmp/agent" --mca btl tcp,self --mca btl_tcp_if_include 10.99.0.0/24 \
    --mca oob_tcp_if_include 10.99.0.0/24 "$gen" --model "$data/llama_gqa" "${greedy[@]}" \
    --tensor-parallel 2>"$tmp/err") || { cat "$tmp/err"; echo "tensor-parallel network run failed"; exit 1; }
[ "$net" = "$one" ] || { echo "tensor-parallel network run gave '$net', one process '$one'"; exit 1; }
grep -qx 10.99.0.2 "$tmp/launched" || { echo "rank 1 was not started in $ns2"; exit 1; }
echo "network: the same in tensor parallel (all-reduces over TCP): same ids"
