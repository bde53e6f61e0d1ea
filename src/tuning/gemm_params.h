/*
 * gemm_params.h — CLBlast's GEMM parameters as clformer reads, applies and saves them: shared by
 * the loading of a GEMM tuning file (tuning/gemm_params.c, read at context creation) and the
 * search that writes one (search/gemm_search.c).
 */
#ifndef CLFORMER_GEMM_PARAMS_H
#define CLFORMER_GEMM_PARAMS_H

#include "../internal.h"

#define CLF_N_XGEMM            16
#define CLF_N_DIRECT           10
#define CLF_GEMM_TUNING_FORMAT "clformer-gemm-tuning-1"

/* Parameter names, in the order CLBlastOverrideParameters takes them. */
extern const char *const clf__xgemm_names[CLF_N_XGEMM];
extern const char *const clf__direct_names[CLF_N_DIRECT];
enum { GEMMK, KREG, KWG, KWI, MDIMA, MDIMC, MWG, NDIMB, NDIMC, NWG, SA, SB, STRM, STRN, VWM, VWN };
enum { KWID, MDIMAD, MDIMCD, NDIMBD, NDIMCD, PADA, PADB, VWMD, VWND, WGD };

/* clf_gemm_params: see internal.h (a context holds one). */

/* Built-in parameters for a device type; false when there are none (CLBlast's database rules). */
bool clf__gemm_builtin(clf_device_type type, clf_gemm_params *p);
/* Parses a GEMM tuning file's text; false (with why) if it is not a valid one. */
bool clf__gemm_params_parse(const char *text, clf_gemm_params *p, const char **why);
/* This device's tuning file, parsed; false when there is none or it is not valid (why: NULL when
 * absent). path_out (may be NULL) gets its malloc'ed path. */
bool clf__gemm_params_load(const clf_context *ctx, clf_gemm_params *p, char **path_out,
                           const char **why);
/* Makes the groups present in p the context's GEMM parameters and hands them to CLBlast for its
 * device (the other groups stay as they were). */
clf_status clf__gemm_params_apply(clf_context *ctx, const clf_gemm_params *p);

#endif /* CLFORMER_GEMM_PARAMS_H */
