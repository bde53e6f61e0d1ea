/* Prints the size of each public struct the Python binding declares with ctypes, and each
 * field's offset, one "name size" or "name.field offset" line each: python/tests/test_abi.py
 * holds ctypes' layouts to these (a field added, moved or retyped in a header fails it). */
#include <clformer/clformer.h>
#include <stddef.h>
#include <stdio.h>

#define S(t)    printf("%s %zu\n", #t, sizeof(t))
#define F(t, f) printf("%s.%s %zu\n", #t, #f, offsetof(t, f))

int main(void) {
    S(clf_error);
    S(clf_device_info);
    F(clf_device_info, name);
    F(clf_device_info, type);
    F(clf_device_info, global_mem_bytes);
    F(clf_device_info, local_mem_dedicated);
    F(clf_device_info, max_work_group_size);
    F(clf_device_info, has_fp16);
    F(clf_device_info, is_simulator);
    S(clf_context_params);
    F(clf_context_params, device_spec);
    F(clf_context_params, disk_cache);
    F(clf_context_params, cache_dir);
    F(clf_context_params, device_profile);
    F(clf_context_params, error);
    F(clf_context_params, gemm_tuning);
    F(clf_context_params, program_log_only);
    S(clf_load_params);
    F(clf_load_params, cache_dtype);
    S(clf_shard);
    F(clf_shard, size);
    F(clf_shard, allreduce);
    F(clf_shard, user);
    S(clf_lm_info);
    F(clf_lm_info, vocab_size);
    F(clf_lm_info, max_positions);
    F(clf_lm_info, bos);
    F(clf_lm_info, eos);
    F(clf_lm_info, n_eos);
    F(clf_lm_info, parameters);
    F(clf_lm_info, weight_dtype);
    F(clf_lm_info, cache_dtype);
    S(clf_lm_weight);
    F(clf_lm_weight, dtype);
    F(clf_lm_weight, bytes);
    S(clf_sampling_params);
    F(clf_sampling_params, top_k);
    F(clf_sampling_params, top_p);
    F(clf_sampling_params, repetition_penalty);
    F(clf_sampling_params, seed);
    S(clf_generate_params);
    F(clf_generate_params, sampling);
    F(clf_generate_params, ignore_eos);
    F(clf_generate_params, on_token);
    F(clf_generate_params, user);
    S(clf_mask);
    F(clf_mask, causal);
    F(clf_mask, causal_offset);
    F(clf_mask, window);
    S(clf_attention_params);
    F(clf_attention_params, nk);
    F(clf_attention_params, scale);
    F(clf_attention_params, mask);
    F(clf_attention_params, naive);
    F(clf_attention_params, weights);
    return 0;
}
