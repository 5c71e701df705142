/*
 * test_api.h - the two halves of the test_api suite program.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_TEST_API_H
#define GDRX_TEST_API_H

#include "tcuda.h"

/* test_api_meta.c: versions, names, environment, logging, symbols. */
extern const struct gdrx_test_case api_meta_cases[];

#endif /* GDRX_TEST_API_H */
