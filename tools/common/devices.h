/*
 * devices.h — the CLIs' --device / --devices SPEC,SPEC[,...] and --split 3,1 (clformer-generate,
 * clformer-embed): the contexts of a model's pipeline stages, one per spec, and their shares.
 */
#ifndef CLF_TOOLS_DEVICES_H
#define CLF_TOOLS_DEVICES_H

#include "clformer/clformer.h"

#define CLI_MAX_STAGES 16
#define CLI_MAX_SETS   32

typedef struct cli_devices {
    const char *devices; /* --devices, comma-separated specs; NULL: one context */
    const char *device;  /* --device (or NULL: $CLF_DEVICE, else the default) */
    const char *split;   /* --split, comma-separated positive numbers; NULL: by device memory */
    const char *sets[CLI_MAX_SETS]; /* --set NAME=V, applied to every context */
    int nsets;
    int n;
    clf_context *ctx[CLI_MAX_STAGES];
    double shares[CLI_MAX_STAGES];
} cli_devices;

/* Checks the options and opens one context per spec (a spec named twice gets two contexts).
 * On failure prints "tool: why" to stderr, frees what it opened and returns nonzero (2: a usage
 * error, 1: a device error). */
int cli_devices_open(cli_devices *d, const char *tool);
/* Sets the tunables of n "NAME=V" strings on ctx. On a bad one prints "tool: why" to stderr and
 * returns 2. */
int cli_apply_sets(clf_context *ctx, const char *const *sets, int n, const char *tool);
/* The shares for clf_*_load_split: NULL unless --split was given. */
const double *cli_devices_shares(const cli_devices *d);
void cli_devices_close(cli_devices *d);

#endif
