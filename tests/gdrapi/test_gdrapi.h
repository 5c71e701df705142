/*
 * test_gdrapi.h - the case tables of the libgdrapi suite, one per file.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_TEST_GDRAPI_H
#define GDRX_TEST_GDRAPI_H

#include "gapi.h"

extern const struct gdrx_test_case gapi_calls_cases[];   /* test_calls.c */
extern const struct gdrx_test_case gapi_errors_cases[];  /* test_errors.c */
extern const struct gdrx_test_case gapi_copy_cases[];    /* test_copy.c */
extern const struct gdrx_test_case gapi_ranges_cases[];  /* test_ranges.c */
extern const struct gdrx_test_case gapi_info_v1_cases[]; /* test_info_v1.c */
extern const struct gdrx_test_case gapi_abi_cases[];     /* test_abi.c */
extern const struct gdrx_test_case gapi_compat_cases[];  /* test_compat.c */
extern const struct gdrx_test_case gapi_coherent_cases[]; /* test_coherent.c */

/* The suites that hold on every backend, for a suite table. */
#define GAPI_BACKEND_SUITES                                  \
    { "gdrapi_calls", NULL, NULL, gapi_calls_cases },        \
    { "gdrapi_errors", NULL, NULL, gapi_errors_cases },      \
    { "gdrapi_copy", NULL, NULL, gapi_copy_cases },          \
    { "gdrapi_ranges", NULL, NULL, gapi_ranges_cases },      \
    { "gdrapi_info_v1", NULL, NULL, gapi_info_v1_cases }

#endif /* GDRX_TEST_GDRAPI_H */
