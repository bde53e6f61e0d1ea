/*
 * rng.h — the one random number generator of the project (xorshift64*, Vigna 2016): the tuners'
 * random searches and inputs, the benchmark's synthetic weights and the tests' random inputs all
 * draw from it. Header-only, state in the caller's clf_rng (no global state).
 */
#ifndef CLFORMER_RNG_H
#define CLFORMER_RNG_H

#include <stdint.h>

typedef struct clf_rng {
    uint64_t s; /* never 0 */
} clf_rng;

static inline clf_rng clf_rng_make(uint64_t seed) {
    clf_rng r = {seed * 0x9e3779b97f4a7c15ULL + 0x2545f4914f6cdd1dULL};
    if (!r.s) r.s = 1;
    return r;
}

static inline uint64_t clf_rng_next(clf_rng *r) {
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545f4914f6cdd1dULL;
}

/* Uniform in [lo, hi), 53 random bits. */
static inline double clf_rng_uniform(clf_rng *r, double lo, double hi) {
    return lo + (hi - lo) * ((double)(clf_rng_next(r) >> 11) / 9007199254740992.0);
}

#endif /* CLFORMER_RNG_H */
