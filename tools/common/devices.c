/* devices.c — see devices.h. */
#include "devices.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_apply_sets(clf_context *ctx, const char *const *sets, int n, const char *tool) {
    for (int i = 0; i < n; i++) {
        char name[128];
        const char *eq = strchr(sets[i], '=');
        char *end = NULL;
        const long long v = eq ? strtoll(eq + 1, &end, 10) : 0;
        if (!eq || eq == sets[i] || (size_t)(eq - sets[i]) >= sizeof(name) || end == eq + 1 ||
            *end) {
            fprintf(stderr, "%s: --set takes NAME=INTEGER (a kernel tunable), not '%s'\n", tool,
                    sets[i]);
            return 2;
        }
        memcpy(name, sets[i], (size_t)(eq - sets[i]));
        name[eq - sets[i]] = '\0';
        if (clf_context_set_tunable(ctx, name, v) != CLF_SUCCESS) {
            fprintf(stderr, "%s: --set %s: %s\n", tool, sets[i], clf_context_last_error(ctx));
            return 2;
        }
    }
    return 0;
}

int cli_devices_open(cli_devices *d, const char *tool) {
    d->n = 0;
    if (d->devices && d->device) {
        fprintf(stderr, "%s: give --device or --devices, not both\n", tool);
        return 2;
    }
    char specs[CLI_MAX_STAGES][256];
    int n = 0;
    if (d->devices) {
        const char *s = d->devices;
        for (;;) {
            const char *c = strchr(s, ',');
            const size_t len = c ? (size_t)(c - s) : strlen(s);
            if (len == 0 || len >= sizeof(specs[0]) || n == CLI_MAX_STAGES) {
                fprintf(stderr,
                        "%s: --devices takes 1 to %d device specs separated by commas, not "
                        "'%s'\n",
                        tool, CLI_MAX_STAGES, d->devices);
                return 2;
            }
            memcpy(specs[n], s, len);
            specs[n++][len] = '\0';
            if (!c) break;
            s = c + 1;
        }
    }
    const int stages = n ? n : 1;
    if (d->split) {
        const char *s = d->split;
        int k = 0;
        for (;;) {
            char *end;
            const double v = strtod(s, &end);
            if (end == s || !(v > 0) || !isfinite(v) || (*end && *end != ',') || k == stages) {
                fprintf(stderr,
                        "%s: --split takes %d positive numbers separated by commas (one per "
                        "device of --devices), not '%s'\n",
                        tool, stages, d->split);
                return 2;
            }
            d->shares[k++] = v;
            if (!*end) break;
            s = end + 1;
        }
        if (k != stages) {
            fprintf(stderr, "%s: --split gives %d shares for %d device%s\n", tool, k, stages,
                    stages > 1 ? "s" : "");
            return 2;
        }
    }
    for (int i = 0; i < stages; i++) {
        clf_context_params p = clf_context_default_params();
        clf_error msg = {""};
        p.device_spec = n ? specs[i] : d->device;
        p.error = &msg;
        if (clf_context_create(&d->ctx[i], &p) != CLF_SUCCESS) {
            fprintf(stderr, "%s: %s%s%s\n", tool, n ? specs[i] : "", n ? ": " : "", msg.message);
            d->n = i;
            cli_devices_close(d);
            return 1;
        }
        if (cli_apply_sets(d->ctx[i], d->sets, d->nsets, tool) != 0) {
            d->n = i + 1;
            cli_devices_close(d);
            return 2;
        }
    }
    d->n = stages;
    return 0;
}

const double *cli_devices_shares(const cli_devices *d) {
    return d->split ? d->shares : NULL;
}

void cli_devices_close(cli_devices *d) {
    for (int i = 0; i < d->n; i++)
        clf_context_free(d->ctx[i]);
    d->n = 0;
}
