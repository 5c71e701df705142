/*
 * tool_env.h - what every benchmark tool sets up before measuring: the
 * dlopen'ed CUDA driver and device, the CPU it is pinned to, the clock,
 * the gdrx context, the description of the machine (struct tool_meta) and
 * the preamble, whose first line says when the GPU is the simulated one.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_TOOL_ENV_H
#define GDRX_TOOL_ENV_H

#include <stdio.h>

#include "gdrx.h"
#include "tool_clock.h"
#include "tool_cuda.h"
#include "tool_opts.h"
#include "tool_out.h"

struct tool_env {
    const struct tool_common *opts;
    struct tool_cuda  cu;
    CUdevice          dev;
    int               dev_open;
    gdrx_t            ctx;
    struct tool_clock clk;
    struct tool_meta  meta;
    FILE             *info;  /* where the preamble goes: stdout, or stderr
                                when stdout carries CSV/JSON */
};

/* Load CUDA, open the device, pin the CPU, calibrate the clock, and (if
 * open_gdrx) open the gdrx context.  0, or TOOL_EXIT_FAIL with the reason
 * printed. */
int tool_env_open(struct tool_env *e, const struct tool_common *opts, int open_gdrx);

/* Open the gdrx context (when tool_env_open did not); 0 or TOOL_EXIT_FAIL
 * with the reason printed, GDRX_BACKEND named when it is the cause. */
int tool_env_open_gdrx(struct tool_env *e);

/* Fill meta.backend/mapping from the context and a pin of it. */
void tool_env_describe_pin(struct tool_env *e, gdrx_pin_t pin);

/* The preamble: banner if simulated, tool and library version, GPU,
 * driver, CPU and pinning, clock, and `method` (the tool's lines). */
void tool_env_preamble(const struct tool_env *e, const char *method);

/* Close the gdrx context (it unmaps and unpins what it holds): before the
 * memory it pinned is freed, so that no pin outlives its memory. */
void tool_env_close_gdrx(struct tool_env *e);

/* tool_env_close_gdrx, then release the device (which frees what is left
 * of its memory). */
void tool_env_close(struct tool_env *e);

/* The explanation of a failed gdrx call (names GDRX_BACKEND when an
 * unknown name in it made gdrx_open fail with -EINVAL). */
const char *tool_gdrx_why(int rc, char *buf, size_t len);

#endif /* GDRX_TOOL_ENV_H */
