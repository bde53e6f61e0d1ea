/*
 * arch.c — the architectures clformer knows, and the checks every Transformer config passes.
 * Adding an encoder-decoder family: write arch_<name>.c (a clf_arch_def), add its clf_arch value
 * to the public header and its entry in archs. Adding a causal LM family: write arch_<name>.c (a
 * clf_lm_arch: its names, config readers, GGUF name map, loader and forward) and add it to
 * lm_archs; nothing else names it.
 */
#include "lm.h"

#include <stdio.h>
#include <string.h>

static const clf_arch_def *const archs[] = {&clf__arch_d2l, &clf__arch_bert};

const clf_arch_def *clf__arch_find(clf_arch arch) {
    for (size_t i = 0; i < sizeof(archs) / sizeof(archs[0]); i++)
        if (archs[i]->arch == arch) return archs[i];
    return NULL;
}

static const clf_lm_arch *const lm_archs[] = {&clf__lm_gpt2, &clf__lm_llama};
#define N_LM_ARCHS (sizeof(lm_archs) / sizeof(lm_archs[0]))

const clf_lm_arch *clf__lm_arch_find(const char *name, size_t len, int gguf) {
    for (size_t i = 0; i < N_LM_ARCHS; i++)
        for (const char *const *n = gguf ? lm_archs[i]->gguf_archs : lm_archs[i]->hf_names; *n; n++)
            if (strlen(*n) == len && memcmp(*n, name, len) == 0) return lm_archs[i];
    return NULL;
}

const char *clf__lm_arch_list(int gguf, char *buf, size_t size) {
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < N_LM_ARCHS; i++)
        for (const char *const *n = gguf ? lm_archs[i]->gguf_archs : lm_archs[i]->hf_names; *n;
             n++) {
            int w = snprintf(buf + at, size - at, "%s%s", at ? ", " : "", *n);
            if (w < 0 || (size_t)w >= size - at) return buf;
            at += (size_t)w;
        }
    return buf;
}

clf_load_params clf_load_default_params(void) {
    clf_load_params p;
    memset(&p, 0, sizeof(p));
    p.weight_dtype = CLF_F32;
    p.cache_dtype = CLF_F32;
    return p;
}

clf_transformer_params clf_transformer_default_params(int64_t vocab_size, int64_t num_hiddens,
                                                      int64_t ffn_num_hiddens, int64_t num_heads,
                                                      int64_t num_layers) {
    clf_transformer_params c;
    memset(&c, 0, sizeof(c));
    c.arch = CLF_ARCH_D2L;
    c.vocab_size = vocab_size;
    c.num_hiddens = num_hiddens;
    c.ffn_num_hiddens = ffn_num_hiddens;
    c.num_heads = num_heads;
    c.num_layers = num_layers;
    c.ffn_act = CLF_ACT_RELU;
    c.norm_eps = 1e-5f;
    c.max_len = 1000;
    return c;
}

clf_status clf__check_config(clf_context *ctx, const clf_transformer_params *c,
                             clf_transformer_params *out) {
    if (!c) return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "config is NULL");
    *out = *c;
    if (!out->max_len) out->max_len = 1000;
    const int64_t d = c->num_hiddens;
    if (!clf__load_weight_type(c->weight_dtype))
        return clf__fail(
            ctx, CLF_ERROR_INVALID_ARGUMENT,
            "config: weight_dtype %d must be CLF_F32, F16, BF16, Q8_0, Q4_0, Q4_K or Q6_K",
            (int)c->weight_dtype);
    if (!clf__arch_find(c->arch))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "config: unknown arch %d", (int)c->arch);
    if (c->vocab_size < 1 || d < 1 || c->ffn_num_hiddens < 1 || c->num_heads < 1 ||
        c->num_layers < 1 || out->max_len < 1)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "config: vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_layers "
                         "and max_len must be >= 1");
    if (d % c->num_heads != 0 || d / c->num_heads > 256)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "config: num_hiddens %lld must split into %lld heads of at most 256",
                         (long long)d, (long long)c->num_heads);
    if (!(c->norm_eps > 0.0f))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "config: norm_eps must be > 0");
    if (c->ffn_act < CLF_ACT_IDENTITY || c->ffn_act > CLF__ACT_LAST)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "config: unknown ffn_act");
    if (out->max_len >= (1 << 24))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "config: max_len must be < 2^24");
    return CLF_SUCCESS;
}
