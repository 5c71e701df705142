/*
 * test_hooks.h - shared helpers of the free-hook suite.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef TEST_HOOKS_H
#define TEST_HOOKS_H

#include <stddef.h>

#include "gdrx_test.h"

/* Full path of a library built in tests/hooks (its .libs directory). */
const char *hooks_lib_path(const char *file, char *buf, size_t size);

/* dlopen a tests/hooks library by full path; fails the case if absent. */
void *hooks_dlopen(const char *file, int mode);

extern const struct gdrx_test_case got_patch_cases[];
extern const struct gdrx_test_case free_hook_cases[];

#endif /* TEST_HOOKS_H */
