/*
 * test_api.c - every public entry point on the data path (open, pin, map,
 * copy, query, unmap, unpin, close, attributes), on its good path and with every
 * kind of bad input: NULL, zero and huge lengths, ranges crossing the
 * allocation end, double unmap/unpin, use after close, handles of another
 * context, garbage handles.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_api.h"

#define MiB (1024u * 1024u)

/* A context with one mapped pin over [p, p+len). */
struct fixture {
    gdrx_t      g;
    CUdeviceptr p;
    size_t      len;
    gdrx_pin_t  pin;
    void       *cpu;
};

static int fixture_up(struct fixture *f, size_t len)
{
    memset(f, 0, sizeof(*f));
    if (tc_setup(0))
        return -1;
    f->g = tc_open();
    f->len = len;
    f->p = tc_alloc(len);
    if (!f->p)
        return -1;
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(f->g, f->p, len, 0, &f->pin), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(f->g, f->pin, &f->cpu), 0);
    return 0;
}

/* Read a byte at arg (through gdrx_test_signal_of: it may fault). */
static void touch(void *arg)
{
    volatile char *p = arg;
    (void)*p;
}



static void test_open_params(void)
{
    struct gdrx_open_params p;
    gdrx_t g = { 12345 };

    gdrx_open_params_init(NULL); /* must not crash */
    memset(&p, 0xff, sizeof(p));
    gdrx_open_params_init(&p);
    CU_ASSERT_EQUAL(p.struct_size, sizeof(p));
    CU_ASSERT_EQUAL(p.backend, GDRX_BACKEND_AUTO);
    CU_ASSERT_EQUAL(p.flags, 0);

    CU_ASSERT_EQUAL(gdrx_open(&p, NULL), -EINVAL);
    p.flags = 1;
    CU_ASSERT_EQUAL(gdrx_open(&p, &g), -EINVAL);
    gdrx_open_params_init(&p);
    p.backend = (gdrx_backend_t)42;
    CU_ASSERT_EQUAL(gdrx_open(&p, &g), -EINVAL);
    gdrx_open_params_init(&p);
    p.struct_size = 4;
    CU_ASSERT_EQUAL(gdrx_open(&p, &g), -EINVAL);
    CU_ASSERT_EQUAL(g.id, 12345); /* untouched on error */

    /* A newer caller's bigger struct: accepted only if the tail is zero. */
    struct { struct gdrx_open_params p; uint64_t extra; } big;
    memset(&big, 0, sizeof(big));
    gdrx_open_params_init(&big.p);
    big.p.struct_size = sizeof(big);
    big.extra = 1;
    CU_ASSERT_EQUAL(gdrx_open(&big.p, &g), -EINVAL);
    if (tc_setup(0))
        return;
    big.extra = 0;
    CU_ASSERT_EQUAL_FATAL(gdrx_open(&big.p, &g), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
}

static void test_open_close(void)
{
    gdrx_t g1, g2;

    if (tc_setup(0))
        return;
    CU_ASSERT_EQUAL_FATAL(gdrx_open(NULL, &g1), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_open(NULL, &g2), 0);
    CU_ASSERT_NOT_EQUAL(g1.id, g2.id);
    CU_ASSERT_NOT_EQUAL(g1.id, 0);
    CU_ASSERT_EQUAL(gdrx_close(g1), 0);
    CU_ASSERT_EQUAL(gdrx_close(g1), -EBADF);
    /* Reopening reuses the slot with a new generation: the old id stays dead. */
    gdrx_t g3;
    CU_ASSERT_EQUAL_FATAL(gdrx_open(NULL, &g3), 0);
    CU_ASSERT_NOT_EQUAL(g3.id, g1.id);
    CU_ASSERT_EQUAL(gdrx_close(g1), -EBADF);
    uint64_t v;
    CU_ASSERT_EQUAL(gdrx_get_attr(g1, GDRX_ATTR_BACKEND, &v), -EBADF);
    CU_ASSERT_EQUAL(gdrx_close(g2), 0);
    CU_ASSERT_EQUAL(gdrx_close(g3), 0);
    /* Garbage ids. */
    CU_ASSERT_EQUAL(gdrx_close((gdrx_t){ 0 }), -EBADF);
    CU_ASSERT_EQUAL(gdrx_close((gdrx_t){ UINT64_MAX }), -EBADF);
    CU_ASSERT_EQUAL(gdrx_close((gdrx_t){ 0x123456789abcdefull }), -EBADF);
}


static void test_pin_map_copy(void)
{
    struct fixture f;
    struct gdrx_pin_info info;
    unsigned char buf[4096], back[4096];

    if (fixture_up(&f, 1 * MiB))
        return;
    CU_ASSERT_EQUAL(gdrx_pin_query(f.g, f.pin, &info), 0);
    CU_ASSERT_EQUAL(info.dptr, f.p);
    CU_ASSERT_EQUAL(info.len, f.len);
    CU_ASSERT_EQUAL(info.alloc_base, f.p);
    CU_ASSERT_EQUAL(info.alloc_size, f.len);
    CU_ASSERT(info.pinned_base <= f.p);
    CU_ASSERT(info.pinned_base + info.pinned_size >= f.p + f.len);
    CU_ASSERT(info.page_size >= 4096);
    CU_ASSERT_EQUAL(info.device, 0);
    CU_ASSERT_EQUAL(info.mapping_type, GDRX_MAPPING_WC);
    CU_ASSERT_PTR_EQUAL(info.cpu_ptr, f.cpu);
    CU_ASSERT_EQUAL(info.stale, 0);
    uint64_t be;
    CU_ASSERT_EQUAL(gdrx_get_attr(f.g, GDRX_ATTR_BACKEND, &be), 0);
    CU_ASSERT_EQUAL(info.backend, (gdrx_backend_t)be);

    /* host -> mapping, checked through CUDA */
    tc_pattern(buf, sizeof(buf), 1);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(f.pin, (char *)f.cpu + 1000, buf, sizeof(buf)), 0);
    CU_ASSERT(tc_check(f.p + 1000, sizeof(buf), 1));
    /* CUDA -> mapping -> host */
    tc_fill(f.p + 5000, sizeof(back), 2);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(f.pin, back, (char *)f.cpu + 5000, sizeof(back)), 0);
    tc_pattern(buf, sizeof(buf), 2);
    CU_ASSERT_EQUAL(memcmp(back, buf, sizeof(buf)), 0);
    /* the whole pin, first and last byte included */
    unsigned char *big = malloc(f.len), *big2 = malloc(f.len);
    tc_pattern(big, f.len, 3);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(f.pin, f.cpu, big, f.len), 0);
    CU_ASSERT(tc_check(f.p, f.len, 3));
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(f.pin, big2, f.cpu, f.len), 0);
    CU_ASSERT_EQUAL(memcmp(big, big2, f.len), 0);
    free(big);
    free(big2);

    CU_ASSERT_EQUAL(gdrx_unmap(f.g, f.pin), 0);
    CU_ASSERT_EQUAL(gdrx_pin_query(f.g, f.pin, &info), 0);
    CU_ASSERT_EQUAL(info.mapping_type, GDRX_MAPPING_NONE);
    CU_ASSERT_PTR_NULL(info.cpu_ptr);
    /* map again after unmap */
    void *cpu2;
    CU_ASSERT_EQUAL(gdrx_map(f.g, f.pin, &cpu2), 0);
    tc_fill(f.p, 64, 4);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(f.pin, back, cpu2, 64), 0);
    tc_pattern(buf, 64, 4);
    CU_ASSERT_EQUAL(memcmp(back, buf, 64), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(f.g, f.pin), 0);
    CU_ASSERT_EQUAL(gdrx_close(f.g), 0);
    tc_free(f.p);
}

static void test_pin_bad_input(void)
{
    gdrx_t g;
    gdrx_pin_t pin = { 777 };
    CUdeviceptr p;

    if (tc_setup(0))
        return;
    g = tc_open();
    p = tc_alloc(1 * MiB);
    CU_ASSERT_EQUAL(gdrx_pin(g, p, 4096, 0, NULL), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_pin(g, p, 0, 0, &pin), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_pin(g, 0, 4096, 0, &pin), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_pin(g, p, 4096, GDRX_PIN_FLAG_FORCE_PCIE << 1, &pin), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_pin(g, p, 4096, 0x80000000u, &pin), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_pin(g, p, SIZE_MAX, 0, &pin), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_pin(g, p, (size_t)1 << 62, 0, &pin), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_pin(g, UINT64_MAX - 10, 100, 0, &pin), -EINVAL);
    /* crossing the allocation end, by one byte and by a lot */
    CU_ASSERT_EQUAL(gdrx_pin(g, p, 1 * MiB + 1, 0, &pin), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_pin(g, p + 1 * MiB - 1, 2, 0, &pin), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_pin(g, p + 4096, 1 * MiB, 0, &pin), -EINVAL);
    /* not device memory */
    static char host[8192];
    CU_ASSERT_EQUAL(gdrx_pin(g, (uint64_t)(uintptr_t)host, 4096, 0, &pin), -EINVAL);
    void *heap = malloc(4096);
    CU_ASSERT_EQUAL(gdrx_pin(g, (uint64_t)(uintptr_t)heap, 4096, 0, &pin), -EINVAL);
    free(heap);
    CU_ASSERT_EQUAL(gdrx_pin(g, 0x1000, 4096, 0, &pin), -EINVAL);
    /* zero length inside a GPU page, where the backend would pin the page
     * (the sim refuses only an empty window, at a page boundary) */
    CU_ASSERT_EQUAL(gdrx_pin(g, p + 100, 0, 0, &pin), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_pin(g, p + 65535, 0, 0, &pin), -EINVAL);
    CU_ASSERT_EQUAL(pin.id, 777); /* untouched by every failure */
    uint64_t n = 99;
    CU_ASSERT_EQUAL(gdrx_get_attr(g, GDRX_ATTR_PIN_COUNT, &n), 0);
    CU_ASSERT_EQUAL(n, 0);
    /* ... where one byte pins fine */
    CU_ASSERT_EQUAL(gdrx_pin(g, p + 100, 1, 0, &pin), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);

    /* bad contexts */
    CU_ASSERT_EQUAL(gdrx_pin((gdrx_t){ 0 }, p, 4096, 0, &pin), -EBADF);
    CU_ASSERT_EQUAL(gdrx_pin((gdrx_t){ 0xdeadbeefull }, p, 4096, 0, &pin), -EBADF);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    CU_ASSERT_EQUAL(gdrx_pin(g, p, 4096, 0, &pin), -EBADF);
    tc_free(p);
}

static void test_map_unmap_bad_input(void)
{
    struct fixture f;
    void *cpu = (void *)0x1;

    if (fixture_up(&f, 256 * 1024))
        return;
    CU_ASSERT_EQUAL(gdrx_map(f.g, f.pin, NULL), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_map(f.g, f.pin, &cpu), -EEXIST); /* already mapped */
    CU_ASSERT_PTR_EQUAL(cpu, (void *)0x1);
    CU_ASSERT_EQUAL(gdrx_map(f.g, (gdrx_pin_t){ 0 }, &cpu), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_map(f.g, (gdrx_pin_t){ f.pin.id ^ (1ull << 30) }, &cpu), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_map(f.g, (gdrx_pin_t){ f.g.id }, &cpu), -EINVAL); /* a ctx id */
    CU_ASSERT_EQUAL(gdrx_unmap(f.g, (gdrx_pin_t){ ~0ull }), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_unmap((gdrx_t){ 5 }, f.pin), -EBADF);
    CU_ASSERT_EQUAL(gdrx_unmap(f.g, f.pin), 0);
    CU_ASSERT_EQUAL(gdrx_unmap(f.g, f.pin), -EINVAL); /* double unmap */
    CU_ASSERT_EQUAL(gdrx_unpin(f.g, f.pin), 0);
    CU_ASSERT_EQUAL(gdrx_map(f.g, f.pin, &cpu), -EINVAL); /* after unpin */
    CU_ASSERT_EQUAL(gdrx_unmap(f.g, f.pin), -EINVAL);
    CU_ASSERT_PTR_EQUAL(cpu, (void *)0x1);
    CU_ASSERT_EQUAL(gdrx_close(f.g), 0);
    tc_free(f.p);
}

static void test_unpin_bad_input(void)
{
    struct fixture f;
    struct gdrx_pin_info info;

    if (fixture_up(&f, 256 * 1024))
        return;
    gdrx_t other = tc_open();
    /* a pin of another context is not the other context's to touch */
    CU_ASSERT_EQUAL(gdrx_unpin(other, f.pin), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_unmap(other, f.pin), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_pin_query(other, f.pin, &info), -EINVAL);
    void *cpu;
    CU_ASSERT_EQUAL(gdrx_map(other, f.pin, &cpu), -EINVAL);
    /* ... and is still fine in its own */
    CU_ASSERT_EQUAL(gdrx_pin_query(f.g, f.pin, &info), 0);
    CU_ASSERT_EQUAL(gdrx_pin_query(f.g, f.pin, NULL), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_unpin(f.g, (gdrx_pin_t){ 0 }), -EINVAL);
    /* unpin while mapped unmaps: the old CPU address faults afterwards */
    CU_ASSERT_EQUAL(gdrx_unpin(f.g, f.pin), 0);
    CU_ASSERT_EQUAL(gdrx_test_signal_of(touch, f.cpu), SIGSEGV);
    CU_ASSERT_EQUAL(gdrx_unpin(f.g, f.pin), -EINVAL); /* double unpin */
    CU_ASSERT_EQUAL(gdrx_pin_query(f.g, f.pin, &info), -EINVAL);
    char c;
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(f.pin, &c, f.cpu, 1), -EINVAL);
    uint64_t n = 99;
    CU_ASSERT_EQUAL(gdrx_get_attr(f.g, GDRX_ATTR_PIN_COUNT, &n), 0);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(gdrx_close(other), 0);
    CU_ASSERT_EQUAL(gdrx_close(f.g), 0);
    tc_free(f.p);
}

static void test_copy_bad_input(void)
{
    struct fixture f;
    char buf[256];
    char *cpu;

    if (fixture_up(&f, 128 * 1024 + 100))
        return;
    cpu = f.cpu;
    memset(buf, 0x5a, sizeof(buf));
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping((gdrx_pin_t){ 0 }, cpu, buf, 1), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping((gdrx_pin_t){ 0x42 }, buf, cpu, 1), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping((gdrx_pin_t){ f.g.id }, cpu, buf, 1), -EINVAL);
    /* outside [cpu, cpu + len): before, after, straddling either end, huge */
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(f.pin, cpu - 1, buf, 1), -ERANGE);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(f.pin, cpu - 1, buf, 2), -ERANGE);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(f.pin, cpu + f.len, buf, 1), -ERANGE);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(f.pin, cpu + f.len - 1, buf, 2), -ERANGE);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(f.pin, cpu, buf, f.len + 1), -ERANGE);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(f.pin, cpu + 8, buf, SIZE_MAX), -ERANGE);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(f.pin, NULL, buf, 1), -ERANGE);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(f.pin, buf, cpu - 4096, 16), -ERANGE);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(f.pin, buf, cpu + f.len - 3, 4), -ERANGE);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(f.pin, buf, (void *)UINTPTR_MAX, 2), -ERANGE);
    /* NULL host side */
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(f.pin, cpu, NULL, 1), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(f.pin, NULL, cpu, 1), -EINVAL);
    /* zero length: valid, copies nothing */
    tc_fill(f.p, 16, 9);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(f.pin, cpu, buf, 0), 0);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(f.pin, cpu + f.len, buf, 0), 0);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(f.pin, buf, cpu, 0), 0);
    CU_ASSERT(tc_check(f.p, 16, 9));
    /* the last byte exactly */
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(f.pin, cpu + f.len - 1, buf, 1), 0);
    /* unmapped: -EINVAL; mapped again: fine */
    CU_ASSERT_EQUAL(gdrx_unmap(f.g, f.pin), 0);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(f.pin, cpu, buf, 1), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(f.pin, buf, cpu, 1), -EINVAL);
    void *cpu2;
    CU_ASSERT_EQUAL_FATAL(gdrx_map(f.g, f.pin, &cpu2), 0);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(f.pin, cpu2, buf, 1), 0);
    /* after close: the pin is gone with its context, its mapping too */
    CU_ASSERT_EQUAL(gdrx_close(f.g), 0);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(f.pin, cpu2, buf, 1), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(f.pin, buf, cpu2, 1), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_unpin(f.g, f.pin), -EBADF);
    CU_ASSERT_EQUAL(gdrx_test_signal_of(touch, cpu2), SIGSEGV);
    tc_free(f.p);
}

static void test_get_attr(void)
{
    struct fixture f;
    uint64_t v = 0;

    if (fixture_up(&f, 64 * 1024))
        return;
    CU_ASSERT_EQUAL(gdrx_get_attr(f.g, GDRX_ATTR_BACKEND, NULL), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_get_attr(f.g, (gdrx_attr_t)0, &v), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_get_attr(f.g, (gdrx_attr_t)1000, &v), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_get_attr((gdrx_t){ 3 }, GDRX_ATTR_BACKEND, &v), -EBADF);
    CU_ASSERT_EQUAL(gdrx_get_attr(f.g, GDRX_ATTR_BACKEND, &v), 0);
    CU_ASSERT(v >= GDRX_BACKEND_GDRDRV && v <= GDRX_BACKEND_DMABUF);
    const char *want = getenv("GDRX_BACKEND");
    if (want && strcmp(want, "auto") != 0)
        CU_ASSERT_STRING_EQUAL(gdrx_backend_name((gdrx_backend_t)v), want);
    CU_ASSERT_EQUAL(gdrx_get_attr(f.g, GDRX_ATTR_DRIVER_VERSION, &v), 0);
    CU_ASSERT(v >> 16 >= 2);
    CU_ASSERT_EQUAL(gdrx_get_attr(f.g, GDRX_ATTR_CUDA_DRIVER_VERSION, &v), 0);
    CU_ASSERT(v >= 11000);
    CU_ASSERT_EQUAL(gdrx_get_attr(f.g, GDRX_ATTR_DEVICE_COUNT, &v), 0);
    int n = 0;
    CU_ASSERT_EQUAL(tc.DeviceGetCount(&n), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(v, (uint64_t)n);
    CU_ASSERT_EQUAL(gdrx_get_attr(f.g, GDRX_ATTR_COPY_TO_VARIANT, &v), 0);
    CU_ASSERT(v > GDRX_COPY_AUTO && v <= GDRX_COPY_LAST_OF_ARCH);
    CU_ASSERT_EQUAL(gdrx_get_attr(f.g, GDRX_ATTR_COPY_FROM_VARIANT, &v), 0);
    CU_ASSERT(v > GDRX_COPY_AUTO && v <= GDRX_COPY_LAST_OF_ARCH);
    CU_ASSERT_EQUAL(gdrx_get_attr(f.g, GDRX_ATTR_PIN_COUNT, &v), 0);
    CU_ASSERT_EQUAL(v, 1);
    gdrx_pin_t p2;
    CU_ASSERT_EQUAL(gdrx_pin(f.g, f.p, 10, 0, &p2), 0);
    CU_ASSERT_EQUAL(gdrx_get_attr(f.g, GDRX_ATTR_PIN_COUNT, &v), 0);
    CU_ASSERT_EQUAL(v, 2);
    CU_ASSERT_EQUAL(gdrx_close(f.g), 0);
    CU_ASSERT_EQUAL(gdrx_get_attr(f.g, GDRX_ATTR_PIN_COUNT, &v), -EBADF);
    tc_free(f.p);
}

static void test_sync_memops_and_caller_context(void)
{
    gdrx_t g;
    gdrx_pin_t pin;
    CUdeviceptr p;
    CUcontext before, after;

    if (tc_setup(0))
        return;
    g = tc_open();
    p = tc_alloc(64 * 1024);
    unsigned int sync = 7;
    CU_ASSERT_EQUAL(tc.PointerGetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p),
                    CUDA_SUCCESS);
    CU_ASSERT_EQUAL(sync, 0);
    CU_ASSERT_EQUAL(tc.CtxGetCurrent(&before), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, p + 100, 200, 0, &pin), 0);
    CU_ASSERT_EQUAL(tc.CtxGetCurrent(&after), CUDA_SUCCESS);
    CU_ASSERT_PTR_EQUAL(before, after);
    CU_ASSERT_EQUAL(tc.PointerGetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p),
                    CUDA_SUCCESS);
    CU_ASSERT_EQUAL(sync, 1);
    /* no current context at all: pin still works and leaves none current */
    CU_ASSERT_EQUAL(tc.CtxSetCurrent(NULL), CUDA_SUCCESS);
    gdrx_pin_t pin2;
    void *cpu;
    CU_ASSERT_EQUAL(gdrx_pin(g, p, 64 * 1024, 0, &pin2), 0);
    CU_ASSERT_EQUAL(gdrx_map(g, pin2, &cpu), 0);
    struct gdrx_pin_info info;
    CU_ASSERT_EQUAL(gdrx_pin_query(g, pin2, &info), 0);
    CU_ASSERT_EQUAL(tc.CtxGetCurrent(&after), CUDA_SUCCESS);
    CU_ASSERT_PTR_NULL(after);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    CU_ASSERT_EQUAL(tc.CtxSetCurrent(before), CUDA_SUCCESS);
    tc_free(p);
}

static void test_close_releases_everything(void)
{
    gdrx_t g;
    gdrx_pin_t pins[8];
    void *cpus[8];
    CUdeviceptr p;

    if (tc_setup(0))
        return;
    g = tc_open();
    p = tc_alloc(8 * 65536);
    for (int i = 0; i < 8; i++) {
        CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, p + (uint64_t)i * 65536, 65536, 0, &pins[i]), 0);
        if (i % 2 == 0)
            CU_ASSERT_EQUAL_FATAL(gdrx_map(g, pins[i], &cpus[i]), 0);
    }
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    struct gdrx_pin_info info;
    gdrx_t g2 = tc_open();
    for (int i = 0; i < 8; i++) {
        CU_ASSERT_EQUAL(gdrx_pin_query(g2, pins[i], &info), -EINVAL);
        if (i % 2 == 0)
            CU_ASSERT_EQUAL(gdrx_test_signal_of(touch, cpus[i]), SIGSEGV);
    }
    CU_ASSERT_EQUAL(gdrx_close(g2), 0);
    tc_free(p);
}



/* Only gdrx_* may be exported: NVIDIA's libgdrapi may share the process. */


/* Failure injection: a CUDA call failing mid-pin leaves nothing behind. */
static void test_cuda_failures(void)
{
    static const char *const fns[] = {
        "cuMemGetAddressRange", "cuPointerGetAttribute", "cuPointerSetAttribute",
        "cuMemGetHandleForAddressRange", "cuCtxPushCurrent",
    };
    gdrx_t g;
    gdrx_pin_t pin = { 5 };
    CUdeviceptr p;
    uint64_t n;

    if (tc_setup(0))
        return;
    g = tc_open();
    p = tc_alloc(256 * 1024);
    uint64_t backend = 0;
    CU_ASSERT_EQUAL(gdrx_get_attr(g, GDRX_ATTR_BACKEND, &backend), 0);
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
        /* Only the dmabuf backend exports through CUDA; with the others
         * failing that call cannot affect a pin. */
        if (backend != GDRX_BACKEND_DMABUF && strcmp(fns[i], "cuMemGetHandleForAddressRange") == 0)
            continue;
        CU_ASSERT_EQUAL(tsim.fail_next(fns[i], CUDA_ERROR_UNKNOWN, 1), 0);
        int rc = gdrx_pin(g, p, 4096, 0, &pin);
        if (rc == 0)
            fprintf(stderr, "    failing %s did not fail the pin\n", fns[i]);
        CU_ASSERT(rc < 0);
        CU_ASSERT_EQUAL(pin.id, 5);
        CU_ASSERT_EQUAL(gdrx_get_attr(g, GDRX_ATTR_PIN_COUNT, &n), 0);
        CU_ASSERT_EQUAL(n, 0);
        tsim.fail_next(fns[i], CUDA_SUCCESS, 0);
    }
    /* and everything works afterwards */
    void *cpu;
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, p, 4096, 0, &pin), 0);
    CU_ASSERT_EQUAL(gdrx_map(g, pin, &cpu), 0);
    /* the buffer-id check of map/query failing is an error, not staleness */
    CU_ASSERT_EQUAL(gdrx_unmap(g, pin), 0);
    CU_ASSERT_EQUAL(tsim.fail_next("cuPointerGetAttribute", CUDA_ERROR_UNKNOWN, 1), 0);
    CU_ASSERT(gdrx_map(g, pin, &cpu) < 0);
    struct gdrx_pin_info info;
    CU_ASSERT_EQUAL(tsim.fail_next("cuPointerGetAttribute", CUDA_ERROR_UNKNOWN, 1), 0);
    CU_ASSERT(gdrx_pin_query(g, pin, &info) < 0);
    CU_ASSERT_EQUAL(gdrx_pin_query(g, pin, &info), 0);
    CU_ASSERT_EQUAL(info.stale, 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(p);
}

static const struct gdrx_test_case api_cases[] = {
    GDRX_TEST_CASE(test_open_params),
    GDRX_TEST_CASE(test_open_close),
    GDRX_TEST_CASE(test_pin_map_copy),
    GDRX_TEST_CASE(test_pin_bad_input),
    GDRX_TEST_CASE(test_map_unmap_bad_input),
    GDRX_TEST_CASE(test_unpin_bad_input),
    GDRX_TEST_CASE(test_copy_bad_input),
    GDRX_TEST_CASE(test_get_attr),
    GDRX_TEST_CASE(test_sync_memops_and_caller_context),
    GDRX_TEST_CASE(test_close_releases_everything),
    GDRX_TEST_END,
};

static const struct gdrx_test_case sim_cases[] = {
    GDRX_TEST_CASE(test_cuda_failures),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite base[] = {
    { "api", NULL, NULL, api_cases },
    { "api_meta", NULL, NULL, api_meta_cases },
    { "api_leaks", NULL, NULL, api_leak_cases },
    { "api_compat", NULL, NULL, api_compat_cases },
    GDRX_SUITE_END,
};

static const struct gdrx_test_suite sim_only[] = {
    { "api_sim", NULL, NULL, sim_cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    tc_default_backend();
    int sim = tc_load();
    if (!sim)
        tc_report_skip("api_sim", "simcu_* not available: not the simulated GPU");
    return gdrx_test_main(argc, argv, tc_suites(base, sim ? sim_only : NULL));
}
