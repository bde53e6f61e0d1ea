/* Uses the installed library: softmax of (0, ln 2, ln 3) must be (1/6, 2/6, 3/6). */
#include <clformer/clformer.h>

#include <math.h>
#include <stdio.h>

int main(void) {
    clf_context *ctx = NULL;
    clf_error msg = {""};
    clf_context_params p = clf_context_default_params();
    p.error = &msg;
    if (clf_context_create(&ctx, &p) != CLF_SUCCESS) {
        fprintf(stderr, "consumer: %s\n", msg.message);
        return 1;
    }
    float x[3] = {0.0f, logf(2.0f), logf(3.0f)};
    int64_t shape[1] = {3};
    clf_tensor *t = NULL;
    int ok = clf_tensor_create(ctx, CLF_F32, 1, shape, &t) == CLF_SUCCESS &&
             clf_tensor_write(t, x, sizeof(x)) == CLF_SUCCESS &&
             clf_softmax(ctx, t, t, NULL) == CLF_SUCCESS &&
             clf_tensor_read(t, x, sizeof(x)) == CLF_SUCCESS;
    for (int i = 0; ok && i < 3; i++)
        ok = fabsf(x[i] - (float)(i + 1) / 6.0f) < 1e-6f;
    printf("consumer: %s\n", ok ? "ok" : clf_context_last_error(ctx));
    clf_tensor_free(t);
    clf_context_free(ctx);
    return ok ? 0 : 1;
}
