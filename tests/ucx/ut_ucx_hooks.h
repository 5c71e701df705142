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

/* A program built twice, plain and as its _ucx_hooks twin (with
 * -DUT_UCX_HOOKS): UT_HOOKS_BUILD says which this is, UT_HOOKS_SUITE(name)
 * names its suite. */
#ifdef UT_UCX_HOOKS
#  define UT_HOOKS_BUILD        1
#  define UT_HOOKS_SUITE(name)  name "/ucx-hooks"
#else
#  define UT_HOOKS_BUILD        0
#  define UT_HOOKS_SUITE(name)  name
#endif

/* main() of such a program.  The _ucx_hooks one (hooks 1) runs suites
 * only next to the CUDA-enabled UCX (UT_UCX_HOOKS_PREFIX set); elsewhere
 * it runs itself again there, and only if that cannot be done reports
 * suite_name's cases as not run.  not_run (NULL: none): the cases this
 * build of UCX leaves out and why, said before the suites run. */
struct gdrx_test_suite;
int ut_ucx_hooks_main(int argc, char **argv, int hooks, const char *suite_name,
                      const struct gdrx_test_suite *suites, const char *not_run);

#endif
