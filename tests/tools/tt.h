/*
 * tt.h - what the benchmark tools' suite shares: running a tool of the
 * build tree on the simulated GPU and looking at what it printed.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_TT_H
#define GDRX_TT_H

#include <stddef.h>

#include "gdrx_test.h"

/* What the last tt_run printed (stdout and stderr, or stdout only). */
extern char tt_out[1 << 18];

/* Run "ENV BUILDDIR/tools/TOOL ARGS" (printf-style: the format gives
 * "ENV|TOOL ARGS", ENV may be empty) with 2>&1 unless the format ends in
 * " 2>/dev/null"; returns the exit status, or -1 if it did not exit. */
int tt_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The build tree (GDRX_TEST_BUILDDIR) and a fresh temporary directory. */
const char *tt_builddir(void);
void tt_tmpdir(char *buf, size_t len);
void tt_rmdir(const char *dir);

/* How many times needle occurs in hay. */
int tt_count(const char *hay, const char *needle);

/* The file's content in a static buffer ("" if it cannot be read). */
const char *tt_slurp(const char *path);

/* Cases of test_bench_script.c and test_tool_method.c. */
extern const struct gdrx_test_case tt_script_cases[];
extern const struct gdrx_test_case tt_method_cases[];

#endif /* GDRX_TT_H */
