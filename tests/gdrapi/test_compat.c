/*
 * test_compat.c - behaviours gdrcopy 2.6's own sanity tests rely on
 * (issue 30): a pin from a thread with no current CUDA context, the
 * signal an access through a mapping raises after the memory is freed
 * (SIGBUS, as gdrcopy's non-persistent mode, which the persistent
 * attribute reports), in a fork child too, gdr_open in a fork child of a
 * process that used CUDA where no backend works without CUDA, P2P tokens
 * dropped, addresses
 * inside a GPU page pinned but never mapped, info.va never past the
 * address pinned, and the pin and map flags.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_gdrapi.h"

/* ---- a pin from a thread that never made a CUDA context current ---- */

struct bare_pin {
    gdr_t       g;
    CUdeviceptr d;
    size_t      size;
    int         ctx_was_null;
    int         pin_rc, map_rc, copy_rc, unmap_rc, unpin_rc;
};

static void *bare_thread(void *arg)
{
    struct bare_pin *t = arg;
    CUcontext cur = (CUcontext)1;
    gdr_mh_t mh = { 0 };
    void *map = NULL;
    char byte = 0x5a;

    t->ctx_was_null = cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == NULL;
    t->pin_rc = gdr_pin_buffer(t->g, t->d, t->size, 0, 0, &mh);
    if (t->pin_rc)
        return NULL;
    t->map_rc = gdr_map(t->g, mh, &map, t->size);
    if (t->map_rc == 0) {
        t->copy_rc = gdr_copy_to_mapping(mh, map, &byte, 1);
        t->unmap_rc = gdr_unmap(t->g, mh, map, t->size);
    }
    t->unpin_rc = gdr_unpin_buffer(t->g, mh);
    return NULL;
}

/* gdrcopy needs no context for a pin (progress threads pin this way);
 * the lookups of the range must not either. */
static void test_pin_without_context(void)
{
    pthread_t th;
    struct bare_pin t = { .size = 2 * GPU_PAGE_SIZE, .pin_rc = -1, .map_rc = -1 };

    GDRX_REQUIRE(ga_start(2 * MiB, &t.d, &t.g) == 0);
    GDRX_REQUIRE(pthread_create(&th, NULL, bare_thread, &t) == 0);
    pthread_join(th, NULL);
    CU_ASSERT(t.ctx_was_null);
    CU_ASSERT_EQUAL(t.pin_rc, 0);
    CU_ASSERT_EQUAL(t.map_rc, 0);
    CU_ASSERT_EQUAL(t.copy_rc, 0);
    CU_ASSERT_EQUAL(t.unmap_rc, 0);
    CU_ASSERT_EQUAL(t.unpin_rc, 0);
    unsigned char got = 0;
    CU_ASSERT_EQUAL(cuMemcpyDtoH(&got, t.d, 1), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(got, 0x5a);
    CU_ASSERT_EQUAL(gdr_close(t.g), 0);
    ga_free(t.d);
}

/* ---- the signal after a free ---- */

static void read_int(void *arg)
{
    volatile int *p = arg;
    int v = *p;
    (void)v;
}

/* gdrcopy's invalidation_access_after_free: write through the mapping,
 * free, read.  With the persistent attribute 0 the read must raise
 * SIGBUS (the signal gdrcopy's tests catch); it reaches no memory.
 * Returns the signal, or -1 if a step before it failed. */
static int signal_after_free(void)
{
    int persistent = -1, sig = -1;
    void *map = NULL;
    gdr_mh_t mh;

    CUdeviceptr d;
    gdr_t g;
    if (ga_start(GPU_PAGE_SIZE, &d, &g) != 0)
        return -1;
    if (gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, &persistent) != 0 ||
        persistent != 0 || gdr_pin_buffer(g, d, GPU_PAGE_SIZE, 0, 0, &mh) != 0)
        goto out;
    if (gdr_map(g, mh, &map, GPU_PAGE_SIZE) == 0) {
        volatile int *p = map;
        p[0] = 1234;
        if (cuMemFree(d) == CUDA_SUCCESS) {
            d = 0;
            sig = gdrx_test_signal_here(read_int, map);
        }
        if (gdr_unmap(g, mh, map, GPU_PAGE_SIZE) != 0)
            sig = -1;
    }
    if (gdr_unpin_buffer(g, mh) != 0)
        sig = -1;
out:
    if (gdr_close(g) != 0)
        sig = -1;
    if (d)
        cuMemFree(d);
    return sig;
}

static void test_signal_after_free(void)
{
    CU_ASSERT_EQUAL(signal_after_free(), SIGBUS);
}

/* The same in a fork child and in its parent, forked before either used
 * CUDA, as gdrcopy's invalidation_fork_access_after_free does (the driver
 * refuses CUDA in a child of a process that used it). */
static void test_signal_after_free_in_fork_child(void)
{
    int status = 0;

    fflush(NULL);
    pid_t pid = fork();
    GDRX_REQUIRE(pid >= 0);
    if (pid == 0) {
        alarm(gdrx_test_timeout());
        _exit(signal_after_free() == SIGBUS ? 0 : 1);
    }
    CU_ASSERT_EQUAL(signal_after_free(), SIGBUS);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- gdr_open in a fork child ---- */

/* gdrcopy's invalidation_fork_child_gdr_pin_parent_with_tokens, on the
 * dma-buf backend (gdrcopy's switch): no backend can be told to work
 * there without CUDA, which the driver refuses this child, so gdr_open is
 * NULL (ENODEV), as gdrcopy's is where it has no gdrdrv (its dma-buf mode
 * needs CUDA; the test waives itself there).  UCX and NCCL probe gdr_open
 * this way.  The nvrm backend's answer: test_gdrapi_nvrm.c. */
static int child_open_refused(CUdeviceptr parent_ptr)
{
    (void)parent_ptr;
    setenv("GDRCOPY_USE_DMABUF_MMAP", "1", 1);
    errno = 0;
    gdr_t g = gdr_open();
    if (g)
        gdr_close(g);
    return (g != NULL) | (errno != ENODEV) << 1;
}

static void test_fork_child_open_without_backend(void)
{
    CU_ASSERT_EQUAL(ga_fork_after_open(child_open_refused), 0);
}

/* ---- P2P tokens ---- */

/* gdrcopy 2.6 over gdrdrv 2.5+ pins with PIN_BUFFER_V2, which has no
 * tokens: they are dropped and the pin is the usual one. */
static void test_tokens_dropped(void)
{
    struct ga_buf b;
    gdr_mh_t mh;

    CUdeviceptr d;
    gdr_t g;
    GDRX_REQUIRE(ga_start(2 * MiB, &d, &g) == 0);
    CU_ASSERT_EQUAL(gdr_pin_buffer(g, d, GPU_PAGE_SIZE, 0x1234, 0, &mh), 0);
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, mh), 0);
    CU_ASSERT_EQUAL(gdr_pin_buffer(g, d, GPU_PAGE_SIZE, 0, 7, &mh), 0);
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, mh), 0);
    memset(&b, 0, sizeof(b));
    b.g = g;
    GDRX_REQUIRE(gdr_pin_buffer(g, d, 2 * GPU_PAGE_SIZE, ~0ull, ~0u, &b.mh) == 0);
    CU_ASSERT_EQUAL(gdr_get_info(g, b.mh, &b.info), 0);
    CU_ASSERT_EQUAL(b.info.va, d);
    b.map_size = 2 * GPU_PAGE_SIZE;
    GDRX_REQUIRE(gdr_map(g, b.mh, &b.map, b.map_size) == 0);
    CU_ASSERT(ga_roundtrip(b.mh, b.map, d, 2 * GPU_PAGE_SIZE, 71));
    ga_release(&b);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(d);
}

/* ---- addresses inside a GPU page ---- */

/* gdrcopy's basic_unaligned_mapping: a small allocation, then one that
 * starts inside the same GPU page.  Pinning the second at its own address
 * works, mapping it does not (the mapping would begin at the page, over
 * the first allocation's bytes); its first page boundary maps, and the
 * first allocation's free leaves that mapping alone. */
static void test_unaligned_pin_not_mapped(void)
{
    const size_t a_size = GPU_PAGE_SIZE + sizeof(int);
    gdr_mh_t mh, amh;
    void *map = NULL, *amap = NULL;

    GDRX_REQUIRE(ga_cuda_setup() == 0);
    CUdeviceptr fa = ga_alloc(4), a = ga_alloc(a_size);
    gdr_t g = ga_open();
    GDRX_REQUIRE(fa && a && g);
    /* the sim packs small allocations: a starts inside fa's page */
    GDRX_REQUIRE((a & GPU_PAGE_OFFSET) != 0 && (a & GPU_PAGE_MASK) == (fa & GPU_PAGE_MASK));
    ga_fill(fa, 4, 81);

    CU_ASSERT_EQUAL(gdr_pin_buffer(g, a, a_size, 0, 0, &mh), 0);
    CU_ASSERT_EQUAL(gdr_map(g, mh, &map, a_size), EINVAL);
    CU_ASSERT_EQUAL(gdr_map_v2(g, mh, &map, a_size, GDR_MAP_FLAG_REQ_WC_MAPPING), EINVAL);
    CU_ASSERT_PTR_NULL(map);
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, mh), 0);
    CU_ASSERT(ga_check(fa, 4, 81));

    CUdeviceptr aligned = (a + GPU_PAGE_OFFSET) & GPU_PAGE_MASK;
    size_t aligned_size = a_size - (aligned - a);
    GDRX_REQUIRE(gdr_pin_buffer(g, aligned, aligned_size, 0, 0, &amh) == 0);
    GDRX_REQUIRE(gdr_map(g, amh, &amap, aligned_size) == 0);
    volatile int *p = amap;
    p[0] = 7;
    ga_free(fa);
    p[0] = 9; /* fa's free does not touch this mapping */
    int got = 0;
    CU_ASSERT_EQUAL(cuMemcpyDtoH(&got, aligned, sizeof(got)), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(got, 9);
    CU_ASSERT_EQUAL(gdr_unmap(g, amh, amap, aligned_size), 0);
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, amh), 0);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(a);
}

/* gdrcopy's basic_small_buffers_mapping: two 8-byte buffers in one GPU
 * page; the first (at the page) maps, the second does not. */
static void test_small_buffers_in_one_page(void)
{
    gdr_mh_t mh[2];
    void *map[2] = { NULL, NULL };

    CUdeviceptr d;
    gdr_t g;
    GDRX_REQUIRE(ga_start(GPU_PAGE_SIZE, &d, &g) == 0);
    GDRX_REQUIRE((d & GPU_PAGE_OFFSET) == 0);
    ga_fill(d, 16, 91);
    CU_ASSERT_EQUAL(gdr_pin_buffer(g, d, 8, 0, 0, &mh[0]), 0);
    CU_ASSERT_EQUAL(gdr_pin_buffer(g, d + 8, 8, 0, 0, &mh[1]), 0);
    CU_ASSERT_EQUAL(gdr_map(g, mh[0], &map[0], 8), 0);
    CU_ASSERT_EQUAL(gdr_map(g, mh[1], &map[1], 8), EINVAL);
    CU_ASSERT_PTR_NULL(map[1]);
    CU_ASSERT(ga_check(d, 16, 91));
    CU_ASSERT_EQUAL(gdr_unmap(g, mh[0], map[0], 8), 0);
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, mh[0]), 0);
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, mh[1]), 0);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(d);
}

/* ---- info.va ---- */

/* A request from the end of one allocation into the next, separately
 * backed one, with most of its bytes in the next: no span can be pinned,
 * and the next allocation alone would put va past the address.  The pin
 * is refused, never reported with va > addr. */
static void test_va_never_past_addr(void)
{
    gdr_mh_t mh = { 0 };
    gdr_info_t info;

    GDRX_REQUIRE(ga_cuda_setup() == 0);
    CUdeviceptr a = ga_alloc(4 * MiB), next = ga_alloc(4 * MiB);
    gdr_t g = ga_open();
    GDRX_REQUIRE(a && next && g);
    GDRX_REQUIRE(next == a + 4 * MiB); /* the sim places them so */
    int rc = gdr_pin_buffer(g, next - 8 * KiB, GPU_PAGE_SIZE + 16 * KiB, 0, 0, &mh);
    CU_ASSERT_EQUAL(rc, EINVAL);
    if (rc == 0) {
        CU_ASSERT_EQUAL(gdr_get_info(g, mh, &info), 0);
        CU_ASSERT(info.va <= next - 8 * KiB);
        CU_ASSERT_EQUAL(gdr_unpin_buffer(g, mh), 0);
    }
    /* the part in the first allocation alone is fine */
    CU_ASSERT_EQUAL(gdr_pin_buffer(g, next - 8 * KiB, 8 * KiB, 0, 0, &mh), 0);
    CU_ASSERT_EQUAL(gdr_get_info(g, mh, &info), 0);
    CU_ASSERT_EQUAL(info.va, next - GPU_PAGE_SIZE);
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, mh), 0);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(a);
    ga_free(next);
}

/* ---- flags ---- */

/* GDR_PIN_FLAG_FORCE_PCIE is taken where GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE
 * says so (on a PCIe host every mapping is the BAR; coherent hosts:
 * test_coherent.c) and refused with nothing pinned where it does not (a
 * gdrdrv in callback mode, as gdrcopy's gdrdrv refuses it there); unknown
 * pin flags are refused.  A mapping kind the backend cannot give:
 * EOPNOTSUPP, gdrdrv's answer, with nothing left mapped. */
static void test_pin_and_map_flags(void)
{
    struct ga_buf b;
    gdr_mh_t mh;
    gdr_info_t info;
    void *map = NULL;
    int force = -1;

    CUdeviceptr d;
    gdr_t g;
    GDRX_REQUIRE(ga_start(2 * MiB, &d, &g) == 0);
    CU_ASSERT_EQUAL(gdr_pin_buffer_v2(g, d, GPU_PAGE_SIZE, 2, &mh), EINVAL);
    CU_ASSERT_EQUAL(gdr_pin_buffer_v2(g, d, GPU_PAGE_SIZE, GDR_PIN_FLAG_FORCE_PCIE | 2, &mh),
                    EINVAL);
    CU_ASSERT_EQUAL(gdr_get_attribute(g, GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE, &force), 0);
    memset(&b, 0, sizeof(b));
    b.g = g;
    b.map_size = GPU_PAGE_SIZE;
    if (force == 1) {
        GDRX_REQUIRE(gdr_pin_buffer_v2(g, d, GPU_PAGE_SIZE, GDR_PIN_FLAG_FORCE_PCIE, &b.mh) == 0);
    } else {
        CU_ASSERT_EQUAL(force, 0);
        CU_ASSERT_NOT_EQUAL(gdr_pin_buffer_v2(g, d, GPU_PAGE_SIZE, GDR_PIN_FLAG_FORCE_PCIE,
                                              &mh), 0);
        GDRX_REQUIRE(gdr_pin_buffer_v2(g, d, GPU_PAGE_SIZE, 0, &b.mh) == 0);
    }
    CU_ASSERT_EQUAL(gdr_map_v2(g, b.mh, &map, GPU_PAGE_SIZE, GDR_MAP_FLAG_REQ_CACHE_MAPPING),
                    EOPNOTSUPP);
    CU_ASSERT_EQUAL(gdr_map_v2(g, b.mh, &map, GPU_PAGE_SIZE, GDR_MAP_FLAG_REQ_DEVICE_MAPPING),
                    EOPNOTSUPP);
    CU_ASSERT_PTR_NULL(map);
    CU_ASSERT_EQUAL(gdr_get_info(g, b.mh, &info), 0);
    CU_ASSERT_EQUAL(info.mapped, 0);
    GDRX_REQUIRE(gdr_map_v2(g, b.mh, &b.map, GPU_PAGE_SIZE, GDR_MAP_FLAG_REQ_WC_MAPPING) == 0);
    CU_ASSERT_EQUAL(gdr_get_info(g, b.mh, &info), 0);
    CU_ASSERT_EQUAL(info.mapping_type, GDR_MAPPING_TYPE_WC);
    CU_ASSERT(ga_roundtrip(b.mh, b.map, d, GPU_PAGE_SIZE, 101));
    ga_release(&b);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(d);
}

const struct gdrx_test_case gapi_compat_cases[] = {
    GDRX_TEST_CASE(test_pin_without_context),
    GDRX_TEST_CASE(test_signal_after_free),
    GDRX_TEST_CASE(test_signal_after_free_in_fork_child),
    GDRX_TEST_CASE(test_fork_child_open_without_backend),
    GDRX_TEST_CASE(test_tokens_dropped),
    GDRX_TEST_CASE(test_unaligned_pin_not_mapped),
    GDRX_TEST_CASE(test_small_buffers_in_one_page),
    GDRX_TEST_CASE(test_va_never_past_addr),
    GDRX_TEST_CASE(test_pin_and_map_flags),
    GDRX_TEST_END,
};
