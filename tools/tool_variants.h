/*
 * tool_variants.h - `-v all`: the copy variant is chosen once per process
 * by libgdrx (GDRX_COPY_VARIANT), so a tool measures every variant by
 * running itself again once per variant (--child), and merges what the
 * children wrote into one CSV/JSON (and raw) file.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_TOOL_VARIANTS_H
#define GDRX_TOOL_VARIANTS_H

#include "tool_opts.h"

/* A child's exit status when its setup failed (no device, no backend): the
 * next variants would fail alike, so the parent stops after one message. */
#define TOOL_EXIT_SETUP 4

/* In a child or a single-variant run: set GDRX_COPY_VARIANT before the
 * first gdrx call.  0, or -1 (message printed). */
int tool_variant_select(const struct tool_common *c);

/* After gdrx_open: whether the library took the requested variant;
 * prints "variant X: not supported ..." and returns TOOL_EXIT_NOT_RUN if
 * not, else 0. */
int tool_variant_check(const struct tool_common *c, const char *to_name);

/* The parent of -v all: run argv once per variant; returns the exit
 * status (0 all that ran passed and one ran; 1 a failure; 3 none ran). */
int tool_run_variants(const struct tool_common *c, int argc, char **argv);

/* The exit status of a failed setup: TOOL_EXIT_SETUP in a child, else
 * TOOL_EXIT_FAIL. */
static inline int tool_setup_failed(const struct tool_common *c)
{
    return c->child ? TOOL_EXIT_SETUP : TOOL_EXIT_FAIL;
}

#endif /* GDRX_TOOL_VARIANTS_H */
