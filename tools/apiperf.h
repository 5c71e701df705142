/*
 * apiperf.h - what the parts of gdrx-apiperf share.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_APIPERF_H
#define GDRX_APIPERF_H

#include "tool_env.h"
#include "tool_table.h"

/* Record a measured step and add its row (times in us) to t. */
void apiperf_emit(struct tool_out *out, struct tool_table *t, const char *test,
                  const char *op, size_t size, double *v, unsigned n, unsigned batch);

/* The UCX transport's registration cache: hit and miss of uct_md_mem_reg
 * (+ mem_dereg) of a 64 KiB buffer.  0 measured; TOOL_EXIT_NOT_RUN (why
 * printed) when this build has no UCX or the gdrx plugin is not found;
 * TOOL_EXIT_FAIL. */
int apiperf_rcache(struct tool_env *e, struct tool_out *out, struct tool_table *t);

#endif /* GDRX_APIPERF_H */
