/*
 * ut_ucx_hooks.h - suites that run next to a CUDA-enabled UCX, whose own
 * CUDA hooks (libucm_cuda) raise memory events as most users' UCX does.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UT_UCX_HOOKS_H
#define UT_UCX_HOOKS_H

#include <stddef.h>

/* 1 if UCX raises CUDA events itself (libucm_cuda loaded and installed). */
int ut_ucx_hooks_work(void);

/* Run this program again with the CUDA-enabled UCX first in the library
 * path (the release it was built with: 1.13.1), marked by
 * UT_UCX_HOOKS_PREFIX.  Returns only if that cannot be done, with the
 * reason in why. */
void ut_reexec_with_ucx_cuda(char **argv, char *why, size_t len);

/* main() of a _ucx_hooks program: suites when this process runs next to
 * the CUDA-enabled UCX (UT_UCX_HOOKS_PREFIX set); else runs itself again
 * there, and only if that cannot be done reports suite_name's cases as not
 * run and returns an empty table. */
struct gdrx_test_suite;
const struct gdrx_test_suite *ut_ucx_hooks_suites(char **argv, const char *suite_name,
                                                  const struct gdrx_test_suite *suites);

#endif
