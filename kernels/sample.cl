/*
 * sample.cl — picks the next token of each row of logits on the device, as Hugging Face's
 * generate processes them: repetition penalty (tokens seen so far: a logit l becomes l * penalty
 * if negative, l / penalty otherwise), temperature, top-k, top-p, then a draw with the uniform
 * number u[row] the host gives (its seeded RNG). Temperature 0 is greedy: the first largest
 * penalized logit (top-k 1 drawn at 0). Only the chosen id leaves the device; seen[row, id] is set
 * for the next step.
 *
 * One work-group per row; work-item t owns a contiguous chunk of the vocabulary. The top-k and
 * top-p cuts are thresholds found by bisection over the order-preserving integer image of the
 * scores (32 counting or summing passes each, no sort): top-k keeps every score >= the k-th
 * largest (ties kept, as HF's `scores < topk[-1]` removal), top-p keeps the scores whose mass of
 * strictly larger kept scores is < top_p (HF's ascending cumulative-sum cut, at least one kept).
 * The draw walks the kept tokens in index order: the first whose running mass exceeds u * mass.
 *
 * Tunables: WG (work-items per row, a power of two).
 */
#ifndef WG
#define WG 64 /* work-items per row (power of two) */
#endif

/* Order-preserving integer image of a float (larger float, larger int). */
static inline int key_of(float v) {
    const int b = as_int(v);
    return b >= 0 ? b : b ^ 0x7FFFFFFF;
}

static inline float score_at(const __global float *lr, const __global int *sr, int has_seen, int i,
                             float penalty, float inv_t) {
    float v = lr[i];
    if (has_seen && sr[i]) v = v < 0.0f ? v * penalty : v / penalty;
    return v * inv_t;
}

/* Work-group reductions through local memory (every work-item calls them). */
#define DEFINE_GROUP_REDUCE(NAME, T, OP)                                                           \
    static inline T NAME(__local T *red, int t, T v) {                                             \
        red[t] = v;                                                                                \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        for (int w = WG / 2; w > 0; w >>= 1) {                                                     \
            if (t < w) red[t] = OP(red[t], red[t + w]);                                            \
            barrier(CLK_LOCAL_MEM_FENCE);                                                          \
        }                                                                                          \
        const T r = red[0];                                                                        \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        return r;                                                                                  \
    }
DEFINE_GROUP_REDUCE(group_sum, float, CLF_ADD)
DEFINE_GROUP_REDUCE(group_max, float, fmax)
DEFINE_GROUP_REDUCE(group_isum, int, CLF_ADD)
DEFINE_GROUP_REDUCE(group_imin, int, min)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
sample_rows(const __global float *logits, /* (rows, V) */
            __global int *seen,           /* (rows, V): tokens seen; unused if has_seen 0 */
            const int has_seen, const __global float *u, /* (rows) uniform in [0, 1) */
            __global int *out,                           /* (rows) chosen ids */
            const int V, const float temperature, const int top_k, const float top_p,
            const float penalty) {
    __local float redf[WG];
    __local int redi[WG];
    __local float chunk_mass[WG];
    const int t = get_local_id(0);
    const long row = get_group_id(0);
    const __global float *lr = logits + row * (long)V;
    __global int *sr = seen + (has_seen ? row * (long)V : 0);
    const int chunk = (V + WG - 1) / WG, i0 = min(V, t * chunk), i1 = min(V, i0 + chunk);
    /* greedy (temperature 0): the host passes top_k 1 and the draw is at 0, so the first maximum
     * is chosen (one code path: PoCL 3.1 fails to compile barriers in both arms of a branch at
     * work-groups of 1 or 2) */
    const float inv_t = temperature > 0.0f ? 1.0f / temperature : 1.0f;

    float m = CLF_NEG_BIG;
    for (int i = i0; i < i1; i++)
        m = fmax(m, score_at(lr, sr, has_seen, i, penalty, inv_t));
    m = group_max(redf, t, m);
    int chosen;
    {
        /* top-k: the largest key kt with at least top_k scores >= kt */
        int kt = INT_MIN;
        if (top_k == 1) /* the largest (greedy): no bisection */
            kt = key_of(m);
        else if (top_k > 0 && top_k < V) {
            long lo = INT_MIN, hi = INT_MAX;
            for (int it = 0; it < 32; it++) { /* a fixed count: 2^32 keys (PoCL: uniform loop) */
                const long mid = lo + (hi - lo + 1) / 2;
                int c = 0;
                for (int i = i0; i < i1; i++)
                    c += key_of(score_at(lr, sr, has_seen, i, penalty, inv_t)) >= mid;
                if (group_isum(redi, t, c) >= top_k)
                    lo = mid;
                else
                    hi = mid - 1;
            }
            kt = (int)lo;
        }
        /* a kept score's weight exp(s - m): 1 exactly for each of top-k 1's maxima */
#define WEIGHT(s) (top_k == 1 ? 1.0f : exp((s)-m))
        float z = 0.0f;
        if (top_p < 1.0f) /* the mass, for top-p only */
            for (int i = i0; i < i1; i++) {
                const float s = score_at(lr, sr, has_seen, i, penalty, inv_t);
                if (key_of(s) >= kt) z += WEIGHT(s);
            }
        z = group_sum(redf, t, z);
        /* top-p: the smallest key t0 >= kt whose mass of larger kept scores is < top_p */
        int cut = kt;
        if (top_p < 1.0f) {
            long lo = kt, hi = key_of(m);
            for (int it = 0; it < 32; it++) {
                const long mid = lo + (hi - lo) / 2;
                float above = 0.0f;
                for (int i = i0; i < i1; i++) {
                    const float s = score_at(lr, sr, has_seen, i, penalty, inv_t);
                    if (key_of(s) > mid && key_of(s) >= kt) above += WEIGHT(s);
                }
                if (group_sum(redf, t, above) < top_p * z)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            cut = max(kt, (int)lo);
        }
        /* the draw: chunk masses, their prefix, and a scan of the chunk that holds u * mass */
        float mine = 0.0f;
        int last = -1;
        for (int i = i0; i < i1; i++) {
            const float s = score_at(lr, sr, has_seen, i, penalty, inv_t);
            if (key_of(s) >= cut) {
                mine += WEIGHT(s);
                last = i;
            }
        }
        chunk_mass[t] = mine;
        barrier(CLK_LOCAL_MEM_FENCE);
        float before = 0.0f, total = 0.0f;
        for (int w = 0; w < WG; w++) { /* every work-item adds in the same order */
            if (w < t) before += chunk_mass[w];
            total += chunk_mass[w];
        }
        const float r = (temperature > 0.0f ? u[row] : 0.0f) * total;
        int pick = V;
        if (mine > 0.0f && r >= before && r < before + mine) {
            float acc = before;
            for (int i = i0; i < i1 && pick == V; i++) {
                const float s = score_at(lr, sr, has_seen, i, penalty, inv_t);
                if (key_of(s) >= cut) {
                    acc += WEIGHT(s);
                    if (r < acc) pick = i;
                }
            }
            if (pick == V) pick = last; /* rounding at the chunk's end */
        }
#undef WEIGHT
        pick = group_imin(redi, t, pick);
        if (pick == V) pick = -group_imin(redi, t, -last); /* r at the very end: the last kept */
        chosen = pick;
    }
    /* The other work-items' reads of seen must be done before it is written: the reductions'
     * local fences do not order global memory (Oclgrind found the race). */
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (t == 0) {
        out[row] = chosen;
        if (has_seen) sr[chosen] = 1;
    }
}
