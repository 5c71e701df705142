/*
 * tool_env.c - the setup the benchmark tools share (tool_env.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tool_env.h"
#include "tool_sys.h"

const char *tool_gdrx_why(int rc, char *buf, size_t len)
{
    static const char *const names[] = { "auto", "gdrdrv", "nvrm", "dmabuf" };
    const char *env = getenv("GDRX_BACKEND");

    if (rc == -EINVAL && env && *env) {
        int known = 0;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            known |= strcmp(env, names[i]) == 0;
        if (!known) {
            snprintf(buf, len, "GDRX_BACKEND=%s is not a backend: set it to gdrdrv, "
                     "nvrm, dmabuf or auto, or unset it", env);
            return buf;
        }
    }
    snprintf(buf, len, "%s%s", gdrx_strerror(rc),
             rc == -ENODEV ? " (no backend works here: gdrx-info says why)" : "");
    return buf;
}

static void fill_meta(struct tool_env *e)
{
    struct tool_meta *m = &e->meta;
    int v = 0;

    snprintf(m->tool, sizeof(m->tool), "%s", e->opts->tool);
    tool_cuda_describe(&e->cu, e->dev, m->gpu, sizeof(m->gpu), m->gpu_bus,
                       sizeof(m->gpu_bus));
    if (e->cu.DriverGetVersion(&v) == CUDA_SUCCESS)
        snprintf(m->cuda, sizeof(m->cuda), "%d.%d", v / 1000, v % 1000 / 10);
    else
        snprintf(m->cuda, sizeof(m->cuda), "?");
    tool_nvidia_kmod_version(m->driver, sizeof(m->driver));
    tool_cpu_name(m->cpu, sizeof(m->cpu));
    snprintf(m->clock, sizeof(m->clock), "%s", e->clk.name);
    snprintf(m->backend, sizeof(m->backend), "-");
    snprintf(m->mapping, sizeof(m->mapping), "-");
    m->simulated = e->cu.simulated;
    tool_out_sanitize(m->gpu);
    tool_out_sanitize(m->gpu_bus);
    tool_out_sanitize(m->driver);
    tool_out_sanitize(m->cpu);
}

int tool_env_open(struct tool_env *e, const struct tool_common *opts, int open_gdrx)
{
    char err[256];
    const char *tool = opts->tool;

    memset(e, 0, sizeof(*e));
    e->opts = opts;
    e->info = tool_table_stream(opts) ? stdout : stderr;
    /* No driver, no GPU: nothing to measure (3), not a failure (1). */
    if (tool_cuda_load(&e->cu, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: NOT RUN: %s (is the NVIDIA driver installed? Without a GPU, "
                "`make bench` runs the tools on the simulated GPU)\n", tool, err);
        return TOOL_EXIT_NOT_RUN;
    }
    int rc = tool_cuda_open_device(&e->cu, opts->device, &e->dev, err, sizeof(err));
    if (rc != 0) {
        int none = rc == CUDA_ERROR_NO_DEVICE; /* a bad -d stays a failure */
        fprintf(stderr, "%s: %s%s\n", tool, none ? "NOT RUN: " : "", err);
        return none ? TOOL_EXIT_NOT_RUN : TOOL_EXIT_FAIL;
    }
    e->dev_open = 1;
    fill_meta(e);
    e->meta.numa_node = e->cu.simulated ? -1 : tool_pci_numa_node(e->meta.gpu_bus);
    if (tool_pin_cpu(opts->cpu, e->meta.numa_node, &e->meta.cpu_core, err, sizeof(err))) {
        fprintf(stderr, "%s: -c %d: %s\n", tool, opts->cpu, err);
        return TOOL_EXIT_FAIL;
    }
    /* After pinning: calibrated on the CPU that measures. */
    tool_clock_init(&e->clk);
    snprintf(e->meta.clock, sizeof(e->meta.clock), "%s", e->clk.name);
    return open_gdrx ? tool_env_open_gdrx(e) : 0;
}

int tool_env_open_gdrx(struct tool_env *e)
{
    struct gdrx_open_params params;
    uint64_t backend = 0;
    char why[256];
    int rc;

    gdrx_open_params_init(&params);
    params.backend = e->opts->backend;
    if ((rc = gdrx_open(&params, &e->ctx)) != 0) {
        /* no backend on this machine: not run; anything else failed */
        int none = rc == -ENODEV;
        fprintf(stderr, "%s: %sgdrx_open: %s\n", e->opts->tool, none ? "NOT RUN: " : "",
                tool_gdrx_why(rc, why, sizeof(why)));
        return none ? TOOL_EXIT_NOT_RUN : TOOL_EXIT_FAIL;
    }
    if (gdrx_get_attr(e->ctx, GDRX_ATTR_BACKEND, &backend) == 0)
        snprintf(e->meta.backend, sizeof(e->meta.backend), "%s",
                 gdrx_backend_name((gdrx_backend_t)backend));
    return 0;
}

void tool_env_describe_pin(struct tool_env *e, gdrx_pin_t pin)
{
    struct gdrx_pin_info info;
    if (gdrx_pin_query(e->ctx, pin, &info) == 0)
        snprintf(e->meta.mapping, sizeof(e->meta.mapping), "%s",
                 gdrx_mapping_type_name(info.mapping_type));
}

void tool_env_preamble(const struct tool_env *e, const char *method)
{
    const struct tool_meta *m = &e->meta;
    FILE *f = e->info;
    int maj, min, pat;

    if (m->simulated)
        fprintf(f, "SIMULATED GPU: %s runs on tests/sim's fake libcuda.so.1; its numbers "
                "time host memory and mean nothing about a GPU\n", m->tool);
    gdrx_get_version(&maj, &min, &pat);
    fprintf(f, "%s: libgdrx %d.%d.%d\n", m->tool, maj, min, pat);
    fprintf(f, "  GPU %d:    %s%s, PCI %s, NUMA node %d\n", e->opts->device, m->gpu,
            m->simulated ? " (simulated)" : "", m->gpu_bus, m->numa_node);
    fprintf(f, "  driver:   CUDA %s, NVIDIA kernel module %s\n", m->cuda, m->driver);
    fprintf(f, "  backend:  %s, mapping %s\n", m->backend, m->mapping);
    if (m->cpu_core >= 0)
        fprintf(f, "  CPU:      %s, pinned to CPU %d (node %d)\n", m->cpu, m->cpu_core,
                tool_cpu_node(m->cpu_core));
    else
        fprintf(f, "  CPU:      %s, not pinned (-c none)\n", m->cpu);
    fprintf(f, "  clock:    %s\n", m->clock);
    fprintf(f, "  method:   %u batches per measurement after %u warm-up ops; per-op time\n"
               "            = batch time / ops per batch; P0/P50/P99 over the batches\n",
            e->opts->samples, e->opts->warmup);
    if (method)
        fprintf(f, "%s", method);
    fflush(f);
}

void tool_env_close_gdrx(struct tool_env *e)
{
    if (e->ctx.id)
        gdrx_close(e->ctx);
    e->ctx.id = 0;
}

void tool_env_close(struct tool_env *e)
{
    tool_env_close_gdrx(e);
    if (e->dev_open)
        e->cu.DevicePrimaryCtxRelease(e->dev);
    e->dev_open = 0;
}
