/*
 * test_hooks.h - shared helpers of the hooks suites.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef TEST_HOOKS_H
#define TEST_HOOKS_H

#include <stddef.h>

#include "gdrx_test.h"

/* Full path of a library built in the tree: dir is "tests/hooks",
 * "libgdr", ...; file its name in that directory's .libs. */
const char *hooks_lib_path(const char *dir, const char *file, char *buf, size_t size);

/* dlopen such a library; fails the case if absent. */
void *hooks_dlopen(const char *dir, const char *file, int mode);

extern const struct gdrx_test_case reloc_cases[];
extern const struct gdrx_test_case event_cases[];
extern const struct gdrx_test_case unsubscribe_cases[];
extern const struct gdrx_test_case coexist_cases[];

#endif /* TEST_HOOKS_H */
