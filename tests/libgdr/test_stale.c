/*
 * test_stale.c - CUDA frees pinned memory: the pin goes stale, copies
 * through it return -ESTALE, its mapping never shows the memory CUDA hands
 * out next (with the sim's address reuse, the next allocation of the same
 * size gets the same address), and a new pin maps the new data.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tcuda.h"

#define KiB 1024u
#define MiB (1024u * 1024u)

struct probe {
    const unsigned char *cpu;
    size_t               len;
    const unsigned char *forbidden; /* the new allocation's bytes */
};

/* In a child: read the old mapping; exit status 3 if it shows the new data. */
static void read_old_mapping(void *arg)
{
    const struct probe *pr = arg;
    unsigned char *buf = malloc(pr->len);

    for (size_t i = 0; i < pr->len; i++)
        buf[i] = ((volatile const unsigned char *)pr->cpu)[i];
    if (memcmp(buf, pr->forbidden, pr->len) == 0)
        _exit(3);
    free(buf);
}

/* The old mapping either faults or shows anything but the new data. */
static int old_mapping_is_safe(const void *cpu, size_t len, uint32_t new_seed, int must_fault)
{
    unsigned char *want = malloc(len);
    tc_pattern(want, len, new_seed);
    struct probe pr = { cpu, len, want };
    int sig = gdrx_test_signal_of(read_old_mapping, &pr);
    free(want);
    if (must_fault)
        return sig == SIGSEGV;
    return sig == SIGSEGV || sig == 0;
}

/* Pin and map all of a fresh allocation and write seed through it. */
static gdrx_pin_t pinned(gdrx_t g, CUdeviceptr p, size_t len, void **cpu, uint32_t seed)
{
    gdrx_pin_t pin = { 0 };
    unsigned char *buf = malloc(len);

    CU_ASSERT_EQUAL(gdrx_pin(g, p, len, 0, &pin), 0);
    CU_ASSERT_EQUAL(gdrx_map(g, pin, cpu), 0);
    tc_pattern(buf, len, seed);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pin, *cpu, buf, len), 0);
    CU_ASSERT(tc_check(p, len, seed));
    free(buf);
    return pin;
}

/* The start of most cases: device 0 set up, a gdrx open, and a fresh
 * allocation of @len pinned and mapped with seed 1 written through it.
 * -1 when the device cannot be set up (the case has already failed). */
static int open_pinned(size_t len, gdrx_t *g, CUdeviceptr *a, gdrx_pin_t *pin, void **cpu)
{
    if (tc_setup(0))
        return -1;
    *g = tc_open();
    *a = tc_alloc(len);
    *pin = pinned(*g, *a, len, cpu, 1);
    return 0;
}

static int is_stale(gdrx_t g, gdrx_pin_t pin)
{
    struct gdrx_pin_info info;

    if (gdrx_pin_query(g, pin, &info) != 0)
        return -1;
    return info.stale;
}

/* Free (seen by the hooks) through free_fn, reallocate at the same
 * address, new data. */
static void free_realloc(size_t len, void (*free_fn)(CUdeviceptr))
{
    void *cpu_old, *cpu_new;
    gdrx_t g;
    CUdeviceptr a;
    gdrx_pin_t old;

    if (open_pinned(len, &g, &a, &old, &cpu_old))
        return;
    unsigned char *buf = malloc(len);
    free_fn(a);

    /* Revoked at the free itself, before anything asks. */
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(old, buf, cpu_old, len), -ESTALE);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(old, cpu_old, buf, len), -ESTALE);
    CU_ASSERT(old_mapping_is_safe(cpu_old, len, 1, 1));

    CUdeviceptr b = tc_alloc(len);
    if (tsim.set_va_reuse)
        CU_ASSERT_EQUAL(b, a); /* the sim reuses the address */
    tc_fill(b, len, 2);
    CU_ASSERT_EQUAL(is_stale(g, old), 1);
    CU_ASSERT(old_mapping_is_safe(cpu_old, len, 2, 1));
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(old, buf, cpu_old, len), -ESTALE);

    /* a new pin of the new allocation maps the new data */
    gdrx_pin_t fresh;
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, b, len, 0, &fresh), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, fresh, &cpu_new), 0);
    CU_ASSERT_EQUAL(is_stale(g, fresh), 0);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(fresh, buf, cpu_new, len), 0);
    unsigned char *want = malloc(len);
    tc_pattern(want, len, 2);
    CU_ASSERT_EQUAL(memcmp(buf, want, len), 0);
    /* ... and the old handle is still just a stale handle */
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(old, buf, cpu_new, len), -ESTALE);
    void *again;
    CU_ASSERT_EQUAL(gdrx_unmap(g, old), 0);
    CU_ASSERT_EQUAL(gdrx_map(g, old, &again), -ESTALE);
    CU_ASSERT_EQUAL(gdrx_unpin(g, old), 0);
    CU_ASSERT(tc_check(b, len, 2)); /* releasing the old pin left b alone */
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(fresh, buf, cpu_new, len), 0);
    CU_ASSERT_EQUAL(memcmp(buf, want, len), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(b);
    free(buf);
    free(want);
}

static void test_free_realloc_large(void)
{
    free_realloc(4 * MiB, tc_free); /* its own backing object */
}

static void test_free_realloc_small(void)
{
    free_realloc(1000, tc_free); /* sub-allocated: the pages stay in use */
}

static __typeof__(&cuMemFree) table_free;

static void free_through_table(CUdeviceptr p)
{
    CU_ASSERT_EQUAL(table_free(p), CUDA_SUCCESS);
}

/* A free through the pointer cuGetProcAddress gave before libgdrx was
 * opened (a CUDA runtime's driver table): on the simulated GPU, as where
 * the table points inside libcuda, that is not the export, and only the
 * patch installation makes of what cuGetProcAddress answers sees it. */
static void test_free_through_early_table_pointer(void)
{
    table_free = tc_table_free();
    if (!table_free)
        return;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (lib && dlsym(lib, "simcu_fail_next")) /* the sim: an internal function */
        CU_ASSERT_PTR_NOT_EQUAL(table_free, tc.MemFree);
    if (lib)
        dlclose(lib);
    free_realloc(4 * MiB, free_through_table);
}

/* A free the hooks do not see: the pin stays usable until something asks;
 * the next query finds it (the buffer id changed), and from then on the pin
 * behaves as above.  Runs where the hooks are off (run_without_hooks). */
static void unseen_free(size_t len)
{
    void *cpu;
    gdrx_t g;
    CUdeviceptr a;
    gdrx_pin_t old;
    char byte;

    CU_ASSERT_STRING_EQUAL_FATAL(getenv("GDRX_FREE_HOOKS"), "0");
    if (open_pinned(len, &g, &a, &old, &cpu))
        return;
    unsigned char *buf = malloc(len);
    tc_free_unseen(a);
    /* Not revoked at the free: no hook saw it.  Except where the kernel
     * itself hears of frees (gdrdrv in callback mode, in the qemu guest):
     * it has already torn the mapping down, so touching it would fault. */
    const char *mode = getenv("GDRX_TEST_GDRDRV_MODE");
    if (!mode || strcmp(mode, "callback") != 0)
        CU_ASSERT_EQUAL(gdrx_copy_from_mapping(old, &byte, cpu, 1), 0);
    CUdeviceptr b = tc_alloc(len);
    if (tsim.set_va_reuse)
        CU_ASSERT_EQUAL(b, a); /* so only the buffer id can tell */
    tc_fill(b, len, 2);
    CU_ASSERT_EQUAL(is_stale(g, old), 1);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(old, buf, cpu, len), -ESTALE);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(old, cpu, buf, len), -ESTALE);
    CU_ASSERT(old_mapping_is_safe(cpu, len, 2, 1));
    CU_ASSERT(tc_check(b, len, 2));
    CU_ASSERT_EQUAL(gdrx_unpin(g, old), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(b);
    free(buf);
}

static void unseen_free_large(void)
{
    unseen_free(4 * MiB);
}

static void unseen_free_small(void)
{
    unseen_free(1000);
}

static const struct gdrx_test_case unseen_cases[] = {
    GDRX_TEST_CASE(unseen_free_large),
    GDRX_TEST_CASE(unseen_free_small),
    GDRX_TEST_END,
};

#define UNSEEN_ENV "GDRX_TEST_STALE_UNSEEN"

/* Run one of unseen_cases in a fresh copy of this program, started with
 * GDRX_FREE_HOOKS=0 so that libgdrx was loaded with its free hooks off:
 * no hook sees a free there, whenever libgdrx would install them. */
static void run_without_hooks(const char *inner_case)
{
    static const char *const env[] = { "GDRX_FREE_HOOKS=0", UNSEEN_ENV "=1", NULL };
    static struct gdrx_test_rerun r;
    char filter[128];

    snprintf(filter, sizeof(filter), "stale_unseen/%s", inner_case);
    gdrx_test_rerun(env, filter, &r);
    CU_ASSERT(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    CU_ASSERT(r.ran == 1 && r.passed == 1 && r.failed == 0);
    if (r.ran != 1 || r.failed)
        fprintf(stderr, "    %s without free hooks said:\n%s\n", inner_case, r.output);
}

static void test_unseen_free_large(void)
{
    run_without_hooks("unseen_free_large");
}

static void test_unseen_free_small(void)
{
    run_without_hooks("unseen_free_small");
}

static void test_free_without_realloc(void)
{
    void *cpu;
    char c = 0;
    gdrx_t g;
    CUdeviceptr a;
    gdrx_pin_t mapped, unmapped, middle;

    if (open_pinned(256 * KiB, &g, &a, &mapped, &cpu))
        return;
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, a, 4096, 0, &unmapped), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, a + 100000, 5000, 0, &middle), 0);
    tc_free(a);
    CU_ASSERT_EQUAL(is_stale(g, mapped), 1);
    CU_ASSERT_EQUAL(is_stale(g, unmapped), 1);
    CU_ASSERT_EQUAL(is_stale(g, middle), 1); /* pinned away from the base */
    struct gdrx_pin_info info;
    CU_ASSERT_EQUAL(gdrx_pin_query(g, mapped, &info), 0);
    CU_ASSERT_EQUAL(info.mapping_type, GDRX_MAPPING_NONE);
    CU_ASSERT_PTR_NULL(info.cpu_ptr);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(mapped, &c, cpu, 1), -ESTALE);
    void *p2;
    CU_ASSERT_EQUAL(gdrx_map(g, unmapped, &p2), -ESTALE);
    CU_ASSERT_EQUAL(gdrx_unpin(g, unmapped), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(g, mapped), 0); /* unmaps the revoked range */
    uint64_t n;
    CU_ASSERT_EQUAL(gdrx_get_attr(g, GDRX_ATTR_PIN_COUNT, &n), 0);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL(gdrx_close(g), 0); /* with a stale pin left: fine */
}

/* Freeing one small buffer leaves its neighbour in the same GPU page alone. */
static void test_neighbour_unaffected(void)
{
    void *ca, *cb;
    unsigned char buf[2000], want[2000];

    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    CUdeviceptr a = tc_alloc(2000), b = tc_alloc(2000);
    gdrx_pin_t pa = pinned(g, a, 2000, &ca, 1);
    gdrx_pin_t pb = pinned(g, b, 2000, &cb, 2);
    tc_free(a);
    CU_ASSERT_EQUAL(is_stale(g, pa), 1);
    CU_ASSERT_EQUAL(is_stale(g, pb), 0);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pb, buf, cb, 2000), 0);
    tc_pattern(want, 2000, 2);
    CU_ASSERT_EQUAL(memcmp(buf, want, 2000), 0);
    tc_pattern(buf, 2000, 3);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pb, cb, buf, 2000), 0);
    CU_ASSERT(tc_check(b, 2000, 3));
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(b);
}

/* Pins of two contexts on one allocation: a free revokes both. */
static void test_free_revokes_every_context(void)
{
    void *c1, *c2;

    if (tc_setup(0))
        return;
    gdrx_t g1 = tc_open(), g2 = tc_open();
    CUdeviceptr a = tc_alloc(128 * KiB);
    gdrx_pin_t p1 = pinned(g1, a, 128 * KiB, &c1, 1);
    gdrx_pin_t p2 = pinned(g2, a, 128 * KiB, &c2, 1);
    tc_free(a);
    char c;
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(p1, &c, c1, 1), -ESTALE);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(p2, &c, c2, 1), -ESTALE);
    CU_ASSERT_EQUAL(gdrx_close(g1), 0);
    CU_ASSERT_EQUAL(gdrx_close(g2), 0);
}

/* Frees counted by a subscriber, with the last range. */
struct seen {
    int      frees, launches;
    uint64_t base, size;
};

static void count_free(const struct gdrx_mem_event *ev, void *arg)
{
    struct seen *s = arg;

    if (ev->type == GDRX_MEM_EVENT_GRAPH_LAUNCH) {
        s->launches++;
        return;
    }
    s->frees++;
    s->base = ev->base;
    s->size = ev->size;
}

/* A free CUDA refuses (not an allocation's base) leaves the memory alive:
 * no pin is revoked and no FREE event is raised. */
static void test_refused_free_revokes_nothing(void)
{
    struct seen seen = { 0 };
    gdrx_mem_sub_t sub;
    void *cpu;
    char c = 0;
    gdrx_t g;
    CUdeviceptr a;
    gdrx_pin_t pin;

    if (open_pinned(256 * KiB, &g, &a, &pin, &cpu))
        return;
    CU_ASSERT_EQUAL_FATAL(gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE, count_free, &seen, &sub), 0);
    CU_ASSERT_EQUAL(tc.MemFree(a + 64 * KiB), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(seen.frees, 0);
    CU_ASSERT_EQUAL(is_stale(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pin, &c, cpu, 1), 0);
    tc_free(a);
    CU_ASSERT_EQUAL(seen.frees, 1);
    CU_ASSERT_EQUAL(gdrx_mem_events_unsubscribe(sub), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
}

/* A primary context reset (what cudaDeviceReset does) frees every
 * allocation of the context with no free call: each pinned one is revoked
 * before the reset and reported to subscribers as freed. */
static void test_context_reset_revokes(void)
{
    struct seen seen = { 0 };
    gdrx_mem_sub_t sub;
    void *cpu, *cpu2;
    char c = 0;
    gdrx_t g;
    CUdeviceptr a;
    gdrx_pin_t pin;

    if (open_pinned(256 * KiB, &g, &a, &pin, &cpu))
        return;
    CUdeviceptr b = tc_alloc(4096);
    gdrx_pin_t pin2 = pinned(g, b, 4096, &cpu2, 2);
    CU_ASSERT_EQUAL_FATAL(gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE, count_free, &seen, &sub), 0);
    CU_ASSERT_EQUAL_FATAL(tc.DevicePrimaryCtxReset(0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pin, &c, cpu, 1), -ESTALE);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pin2, cpu2, &c, 1), -ESTALE);
    CU_ASSERT_EQUAL(seen.frees, 2); /* one per pinned allocation */
    CU_ASSERT(seen.base == a || seen.base == b);
    CU_ASSERT(seen.size >= 4096);
    CU_ASSERT_EQUAL(gdrx_mem_events_unsubscribe(sub), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
}

/* A graph's memory free node frees with no call of its own: the launch is
 * reported (GRAPH_LAUNCH, no FREE) and does not revoke the pin, but what a
 * cache re-checks after that event finds the memory gone, and the pin's
 * next query makes it stale. */
static void test_graph_launch_reported(void)
{
    struct seen seen = { 0 };
    struct gdrx_mem_info mi;
    gdrx_mem_sub_t sub;
    CUgraphExec exec;
    void *cpu;
    char c = 0;
    gdrx_t g;
    CUdeviceptr a;
    gdrx_pin_t pin;

    if (!tsim.graph_free_node) {
        printf("NOT RUN: the simulated GPU has no graphs\n");
        return;
    }
    if (open_pinned(256 * KiB, &g, &a, &pin, &cpu))
        return;
    CU_ASSERT_EQUAL_FATAL(gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE |
                                                        GDRX_MEM_EVENT_GRAPH_LAUNCH,
                                                    count_free, &seen, &sub), 0);
    CU_ASSERT_EQUAL_FATAL(tsim.graph_free_node(a, &exec), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(gdrx_mem_query(a, &mi), 0);
    CU_ASSERT_EQUAL(tc.GraphLaunch(exec, NULL), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(seen.launches, 1);
    CU_ASSERT_EQUAL(seen.frees, 0);
    const char *mode = getenv("GDRX_TEST_GDRDRV_MODE");
    if (!mode || strcmp(mode, "callback") != 0)
        CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pin, &c, cpu, 1), 0); /* not revoked */
    CU_ASSERT_EQUAL(gdrx_mem_query(a, &mi), -ENOENT);
    CU_ASSERT_EQUAL(is_stale(g, pin), 1);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pin, &c, cpu, 1), -ESTALE);
    CU_ASSERT_EQUAL(tc.GraphExecDestroy(exec), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(gdrx_mem_events_unsubscribe(sub), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
}

static const struct gdrx_test_case stale_cases[] = {
    GDRX_TEST_CASE(test_free_realloc_large),
    GDRX_TEST_CASE(test_free_realloc_small),
    GDRX_TEST_CASE(test_free_through_early_table_pointer),
    GDRX_TEST_CASE(test_unseen_free_large),
    GDRX_TEST_CASE(test_unseen_free_small),
    GDRX_TEST_CASE(test_free_without_realloc),
    GDRX_TEST_CASE(test_neighbour_unaffected),
    GDRX_TEST_CASE(test_free_revokes_every_context),
    GDRX_TEST_CASE(test_refused_free_revokes_nothing),
    GDRX_TEST_CASE(test_context_reset_revokes),
    GDRX_TEST_CASE(test_graph_launch_reported),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite suites[] = {
    { "stale", NULL, NULL, stale_cases },
    GDRX_SUITE_END,
};

static const struct gdrx_test_suite unseen_suites[] = {
    { "stale_unseen", NULL, NULL, unseen_cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    tc_default_backend();
    tc_load();
    return gdrx_test_main(argc, argv, getenv(UNSEEN_ENV) ? unseen_suites : suites);
}
