/*
 * apiperf_ucx.c - gdrx-apiperf's registration-cache figures: the gdrx UCT
 * memory domain's uct_md_mem_reg + mem_dereg of 64 KiB of device memory,
 * a miss (a buffer never registered: pin and map) and a hit (a range
 * already registered: the cache lookup).  Built with UCX only; without it
 * the tool says "not run".
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>

#include "apiperf.h"

#ifndef GDRX_APIPERF_UCX

int apiperf_rcache(struct tool_env *e, struct tool_out *out, struct tool_table *t)
{
    (void)out;
    (void)t;
    fprintf(e->info, "\nUCX registration cache: NOT RUN (this gdrx-apiperf was built "
            "without UCX: configure found none, or tests/gpu/build_tools.sh ran without "
            "UCX_SRC and UCX_LIBDIR)\n");
    return TOOL_EXIT_NOT_RUN;
}

#else

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <uct/api/uct.h>

#define RC_SIZE 65536

/* The plugin registers its component when loaded: GDRX_UCX_PLUGIN names
 * it; otherwise the one of this build (its ucx module directory, or
 * build_tools.sh's) is tried, and UCX's own module loading last.  Why the
 * dlopen failed goes to why ("" if it did not). */
static void load_plugin(char *why, size_t len)
{
    const char *env = getenv("GDRX_UCX_PLUGIN");
    const char *path = env && *env ? env : GDRX_UCX_PLUGIN_DIR "/libuct_gdrx.so.0";
    const char *err = dlopen(path, RTLD_NOW | RTLD_GLOBAL) ? NULL : dlerror();

    snprintf(why, len, "%s%s", err ? ": " : "", err ? err : "");
}

static uct_component_h find_gdrx(void)
{
    uct_component_h *list, found = NULL;
    uct_component_attr_t attr = { .field_mask = UCT_COMPONENT_ATTR_FIELD_NAME };
    unsigned n;

    if (uct_query_components(&list, &n) != UCS_OK)
        return NULL;
    for (unsigned i = 0; i < n; i++)
        if (uct_component_query(list[i], &attr) == UCS_OK && strcmp(attr.name, "gdrx") == 0)
            found = list[i];
    uct_release_component_list(list);
    return found;
}

struct hit_ctx { uct_md_h md; void *addr; };

static int reg_hit(void *p, unsigned count)
{
    struct hit_ctx *h = p;
    uct_mem_h memh;
    for (unsigned i = 0; i < count; i++) {
        if (uct_md_mem_reg(h->md, h->addr, RC_SIZE, UCT_MD_MEM_ACCESS_ALL, &memh) != UCS_OK)
            return -EIO;
        uct_md_mem_dereg(h->md, memh);
    }
    return 0;
}

/* n misses: the first registration of each of n fresh allocations d[]
 * (freed by the caller after the memory domain is closed: the cache may
 * keep their registrations until then). */
static int misses(struct tool_env *e, uct_md_h md, CUdeviceptr *d, double *ns, unsigned n)
{
    int rc = 0;

    for (unsigned i = 0; i < n && rc == 0; i++) {
        uct_mem_h memh;
        if (e->cu.MemAlloc(&d[i], RC_SIZE) != CUDA_SUCCESS) {
            d[i] = 0;
            return -ENOMEM;
        }
        uint64_t t0 = tool_clock_begin(&e->clk);
        ucs_status_t st = uct_md_mem_reg(md, (void *)(uintptr_t)d[i], RC_SIZE,
                                         UCT_MD_MEM_ACCESS_ALL, &memh);
        if (st == UCS_OK)
            uct_md_mem_dereg(md, memh);
        ns[i] = tool_clock_ns(&e->clk, tool_clock_end(&e->clk) - t0);
        rc = st == UCS_OK ? 0 : -EIO;
    }
    return rc;
}

/* A hit: [d, d + RC_SIZE) stays registered while the same range is
 * registered and deregistered again (the cache's lookup). */
static int hits(struct tool_env *e, uct_md_h md, CUdeviceptr d, struct tool_out *out,
                struct tool_table *t)
{
    struct hit_ctx h = { md, (void *)(uintptr_t)d };
    struct tool_op op = { .name = "hit", .run = reg_hit, .ctx = &h };
    struct tool_method m = { .samples = e->opts->samples, .warmup = e->opts->warmup,
                             .target_ns = 2000, .max_batch = 256 };
    uct_mem_h keep;
    int rc;

    if (uct_md_mem_reg(md, h.addr, RC_SIZE, UCT_MD_MEM_ACCESS_ALL, &keep) != UCS_OK)
        return -EIO;
    if ((rc = tool_measure(&e->clk, &m, &op, 1, NULL)) == 0)
        apiperf_emit(out, t, "rcache", "hit", RC_SIZE, op.raw, m.samples, op.st.batch);
    tool_ops_free(&op, 1);
    uct_md_mem_dereg(md, keep);
    return rc;
}

int apiperf_rcache(struct tool_env *e, struct tool_out *out, struct tool_table *t)
{
    unsigned n = e->opts->samples < 32 ? e->opts->samples : 32;
    uct_component_h comp = NULL;
    uct_md_config_t *cfg;
    uct_md_h md;
    double *miss = calloc(n, sizeof(double));
    CUdeviceptr *d = calloc(n + 1, sizeof(*d)); /* n misses, then the hit's */
    int rc = 0;

    char why[512];
    load_plugin(why, sizeof(why));
    if (!miss || !d || !(comp = find_gdrx())) {
        if (!comp)
            fprintf(e->info, "\nUCX registration cache: NOT RUN (the gdrx UCX plugin is not "
                    "loaded: set GDRX_UCX_PLUGIN to libuct_gdrx.so.0%s)\n", why);
        free(miss);
        free(d);
        return comp ? TOOL_EXIT_FAIL : TOOL_EXIT_NOT_RUN;
    }
    if (uct_md_config_read(comp, NULL, NULL, &cfg) != UCS_OK)
        rc = -EIO;
    ucs_status_t st = rc ? UCS_ERR_NO_RESOURCE : uct_md_open(comp, "gdrx", cfg, &md);
    if (rc == 0)
        uct_config_release(cfg);
    rc = st == UCS_OK ? 0 : -EIO;
    if (rc == 0 && (rc = misses(e, md, d, miss, n)) == 0)
        apiperf_emit(out, t, "rcache", "miss", RC_SIZE, miss, n, 1);
    if (rc == 0 && e->cu.MemAlloc(&d[n], RC_SIZE) != CUDA_SUCCESS)
        rc = -ENOMEM;
    if (rc == 0)
        rc = hits(e, md, d[n], out, t);
    if (st == UCS_OK)
        uct_md_close(md);
    for (unsigned i = 0; i <= n; i++)
        if (d[i])
            e->cu.MemFree(d[i]);
    free(miss);
    free(d);
    if (rc)
        fprintf(stderr, "%s: UCX registration cache: %s failed\n", e->opts->tool,
                rc == -ENOMEM ? "cuMemAlloc" : "uct_md_open/uct_md_mem_reg");
    return rc ? TOOL_EXIT_FAIL : 0;
}

#endif
