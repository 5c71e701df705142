/*
 * gdrx-copylat - latency of gdrx copies to/from a GPU mapping against
 * cuMemcpy, per size, direction and copy variant.  Uses only the public
 * gdrx API and the CUDA driver API (dlopen'ed).
 *
 * SPDX-License-Identifier: MIT
 *
 * The copy variant is chosen once per process by the library
 * (GDRX_COPY_VARIANT), so `-v all` runs this program again once per
 * variant (--child) and collects the results.
 *
 * Exit status: 0 all measured and verified; 1 a copy failed or read back
 * wrong; 2 usage; 3 the requested variant is not supported by this CPU.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "copylat.h"
#include "tool_sys.h"

#define EXIT_SKIPPED 3
#define CSV_HEADER "variant_to,variant_from,backend,direction,size,samples," \
    "gdrx_min_ns,gdrx_median_ns,gdrx_p99_ns,cu_min_ns,cu_median_ns,cu_p99_ns," \
    "speedup_median,simulated\n"

struct run {
    struct copylat_opts *o;
    struct tool_cuda     cu;
    CUdevice             dev;
    gdrx_t               ctx;
    struct bench         b;
    const char          *to_name, *from_name, *backend;
    FILE                *csv;
};

static void human_size(size_t n, char *buf, size_t len)
{
    if (n >= (1u << 20) && n % (1u << 20) == 0)
        snprintf(buf, len, "%zuM", n >> 20);
    else if (n >= 1024 && n % 1024 == 0)
        snprintf(buf, len, "%zuK", n >> 10);
    else
        snprintf(buf, len, "%zu", n);
}

static void print_header(struct run *r)
{
    char name[256], bus[64], cpu[256], kmod[64];
    int maj, min, pat, cuver = 0;
    struct gdrx_pin_info info;

    gdrx_get_version(&maj, &min, &pat);
    tool_cuda_describe(&r->cu, r->dev, name, sizeof(name), bus, sizeof(bus));
    r->cu.DriverGetVersion(&cuver);
    tool_nvidia_kmod_version(kmod, sizeof(kmod));
    tool_cpu_name(cpu, sizeof(cpu));
    if (gdrx_pin_query(r->ctx, r->b.pin, &info) != 0)
        info.mapping_type = GDRX_MAPPING_NONE;

    if (r->cu.simulated)
        printf("########################################################################\n"
               "# SIMULATED GPU: timings measure memfd mappings, not a GPU\n"
               "# (libcuda.so.1 is the tests/sim test double)\n"
               "########################################################################\n");
    printf("gdrx-copylat: libgdrx %d.%d.%d\n", maj, min, pat);
    printf("  GPU %d:   %s%s, PCI %s\n", r->o->device, name,
           r->cu.simulated ? " (simulated)" : "", bus);
    printf("  driver:  CUDA %d.%d, NVIDIA kernel module %s\n", cuver / 1000,
           cuver % 1000 / 10, kmod);
    printf("  backend: %s, mapping %s\n", r->backend, gdrx_mapping_type_name(info.mapping_type));
    printf("  CPU:     %s\n", cpu);
    printf("  timing:  CLOCK_MONOTONIC_RAW, %u samples per size after %u warm-up copies;\n"
           "           ns per copy (batched); cuMemcpy from/to pageable malloc memory;\n"
           "           speedup = cuMemcpy median / gdrx median\n",
           r->o->iters, r->o->warmup);
}

static void print_table_head(struct run *r, int dir)
{
    printf("\n%s, copy variant %s:\n", dir == COPYLAT_DIR_TO ?
           "host -> GPU (gdrx_copy_to_mapping vs cuMemcpyHtoD)" :
           "GPU -> host (gdrx_copy_from_mapping vs cuMemcpyDtoH)",
           dir == COPYLAT_DIR_TO ? r->to_name : r->from_name);
    printf("%-4s %-9s %6s  %9s %9s %9s  %9s %9s %9s  %8s\n", "dir", "variant", "size",
           "gdrx min", "median", "p99", "cu min", "median", "p99", "speedup");
}

/* Measure and verify one size in one direction; 0, or 1 on any failure. */
static int one_size(struct run *r, int dir, size_t size)
{
    struct lat_stats g, c;
    int to = dir == COPYLAT_DIR_TO;
    const char *variant = to ? r->to_name : r->from_name;
    char hs[32];
    int rc;

    human_size(size, hs, sizeof(hs));
    if ((rc = bench_measure(&r->b, to ? OP_GDRX_TO : OP_GDRX_FROM, size, &g)) != 0 ||
        (rc = bench_measure(&r->b, to ? OP_CU_TO : OP_CU_FROM, size, &c)) != 0) {
        fprintf(stderr, "gdrx-copylat: %s %s: %s\n", to ? "to" : "from", hs,
                rc == -EIO ? "cuMemcpy failed" : gdrx_strerror(rc));
        return 1;
    }
    double speedup = g.med > 0 ? c.med / g.med : 0;
    printf("%-4s %-9s %6s  %9.0f %9.0f %9.0f  %9.0f %9.0f %9.0f  %7.1fx%s\n",
           to ? "to" : "from", variant, hs, g.min, g.med, g.p99, c.min, c.med, c.p99,
           speedup, r->cu.simulated ? " (simulated)" : "");
    fflush(stdout);
    if (r->csv)
        fprintf(r->csv, "%s,%s,%s,%s,%zu,%u,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.3f,%d\n",
                r->to_name, r->from_name, r->backend, to ? "to" : "from", size,
                r->o->iters, g.min, g.med, g.p99, c.min, c.med, c.p99, speedup,
                r->cu.simulated);
    return bench_verify(&r->b, dir, size) != 0;
}

/* Open CUDA, gdrx, and pin and map one allocation for the largest size. */
static int setup(struct run *r)
{
    char err[256];
    struct gdrx_open_params params;
    uint64_t to = 0, from = 0, backend = 0;
    size_t max = 0;
    void *map;
    int rc;

    for (int i = 0; i < r->o->nsizes; i++)
        max = r->o->sizes[i] > max ? r->o->sizes[i] : max;
    r->b.cap = (max + 64 + 65535) & ~(size_t)65535;
    if (tool_cuda_load(&r->cu, err, sizeof(err)) != 0 ||
        tool_cuda_open_device(&r->cu, r->o->device, &r->dev, err, sizeof(err)) != 0) {
        fprintf(stderr, "gdrx-copylat: %s\n", err);
        return 1;
    }
    gdrx_open_params_init(&params);
    params.backend = r->o->backend;
    if ((rc = gdrx_open(&params, &r->ctx)) != 0) {
        fprintf(stderr, "gdrx-copylat: gdrx_open: %s\n", gdrx_strerror(rc));
        return 1;
    }
    gdrx_get_attr(r->ctx, GDRX_ATTR_COPY_TO_VARIANT, &to);
    gdrx_get_attr(r->ctx, GDRX_ATTR_COPY_FROM_VARIANT, &from);
    gdrx_get_attr(r->ctx, GDRX_ATTR_BACKEND, &backend);
    r->to_name = gdrx_copy_variant_name((gdrx_copy_variant_t)to);
    r->from_name = gdrx_copy_variant_name((gdrx_copy_variant_t)from);
    r->backend = gdrx_backend_name((gdrx_backend_t)backend);
    if (r->o->variant && strcmp(r->o->variant, r->to_name) != 0) {
        printf("\nvariant %s: not supported by this CPU/OS: skipped, NOT measured\n",
               r->o->variant);
        return EXIT_SKIPPED;
    }

    r->b.cu = &r->cu;
    r->b.iters = r->o->iters;
    r->b.warmup = r->o->warmup;
    r->b.host = calloc(1, r->b.cap);
    r->b.check = calloc(1, r->b.cap);
    CUresult cr = r->cu.MemAlloc(&r->b.dptr, r->b.cap);
    if (!r->b.host || !r->b.check || cr != CUDA_SUCCESS) {
        fprintf(stderr, "gdrx-copylat: cannot allocate 2 x %zu bytes host, %zu device: %s\n",
                r->b.cap, r->b.cap, tool_cuda_error(&r->cu, cr));
        return 1;
    }
    if ((rc = gdrx_pin(r->ctx, r->b.dptr, r->b.cap, GDRX_PIN_FLAG_DEFAULT, &r->b.pin)) != 0 ||
        (rc = gdrx_map(r->ctx, r->b.pin, &map)) != 0) {
        fprintf(stderr, "gdrx-copylat: gdrx_pin/gdrx_map of %zu bytes: %s\n", r->b.cap,
                gdrx_strerror(rc));
        return 1;
    }
    r->b.map = map;
    return 0;
}

static void teardown(struct run *r)
{
    if (r->ctx.id)
        gdrx_close(r->ctx); /* unmaps and unpins */
    if (r->b.dptr)
        r->cu.MemFree(r->b.dptr);
    if (r->cu.handle)
        r->cu.DevicePrimaryCtxRelease(r->dev);
    free(r->b.host);
    free(r->b.check);
    if (r->csv)
        fclose(r->csv);
}

static int run_one(struct copylat_opts *o)
{
    struct run r;
    int failed;

    memset(&r, 0, sizeof(r));
    r.o = o;
    /* Before any gdrx call: the library reads it once. */
    if (o->variant && setenv("GDRX_COPY_VARIANT", o->variant, 1) != 0)
        return 1;
    if (o->csv) {
        r.csv = fopen(o->csv, o->child ? "a" : "w");
        if (!r.csv) {
            fprintf(stderr, "gdrx-copylat: %s: %s\n", o->csv, strerror(errno));
            return 1;
        }
        if (!o->child)
            fputs(CSV_HEADER, r.csv);
    }
    failed = setup(&r);
    if (!failed && o->print_header)
        print_header(&r);
    for (int dir = COPYLAT_DIR_TO; !failed && dir <= COPYLAT_DIR_FROM; dir <<= 1) {
        if (!(o->dirs & dir))
            continue;
        print_table_head(&r, dir);
        for (int i = 0; i < o->nsizes; i++)
            failed |= one_size(&r, dir, o->sizes[i]);
    }
    teardown(&r);
    fflush(stdout);
    return failed;
}

/* -v all: one child process per variant (see the top of the file). */
static int run_all(struct copylat_opts *o, int argc, char **argv)
{
    char **args = calloc((size_t)argc + 5, sizeof(*args));
    int failed = 0, header = 1;

    if (!args)
        return 1;
    if (o->csv) {
        FILE *f = fopen(o->csv, "w");
        if (!f || fputs(CSV_HEADER, f) < 0 || fclose(f) != 0) {
            fprintf(stderr, "gdrx-copylat: %s: %s\n", o->csv, strerror(errno));
            free(args);
            return 1;
        }
    }
    for (int v = GDRX_COPY_LIBC; v <= GDRX_COPY_MOVDIR64B; v++) {
        int n = 0;
        for (int i = 0; i < argc; i++)
            args[n++] = argv[i];
        args[n++] = "-v";
        args[n++] = (char *)gdrx_copy_variant_name((gdrx_copy_variant_t)v);
        args[n++] = "--child";
        if (header)
            args[n++] = "--print-header";
        args[n] = NULL;

        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            execv("/proc/self/exe", args);
            _exit(127);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status)) {
            failed = 1;
            continue;
        }
        if (WEXITSTATUS(status) == 0)
            header = 0;
        else if (WEXITSTATUS(status) != EXIT_SKIPPED)
            failed = 1;
    }
    free(args);
    return failed;
}

int main(int argc, char **argv)
{
    struct copylat_opts o;
    int rc = copylat_parse(argc, argv, &o);

    if (rc != 0)
        return rc > 0 ? 0 : 2;
    if (o.variant && strcmp(o.variant, "all") == 0)
        return run_all(&o, argc, argv);
    return run_one(&o);
}
