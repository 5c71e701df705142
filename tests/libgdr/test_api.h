/*
 * test_api.h - the parts of the test_api suite program.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_TEST_API_H
#define GDRX_TEST_API_H

#include "tcuda.h"

/* test_api_meta.c: versions, names, environment, logging, symbols. */
extern const struct gdrx_test_case api_meta_cases[];
/* test_leaks.c: no descriptor or mapping outlives the pins that took it. */
extern const struct gdrx_test_case api_leak_cases[];
/* test_api_compat.c: what the gdrcopy layer needs (context-less lookups,
 * NO_MAP pins, SIGBUS after a free). */
extern const struct gdrx_test_case api_compat_cases[];

#endif /* GDRX_TEST_API_H */
