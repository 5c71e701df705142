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

#endif /* GDRX_TEST_GDRAPI_H */
