/*
 * test_calls.c - every call of the gdrcopy API in the order a gdrcopy user
 * makes them (cudaMalloc, gdr_open, pin, info, map, copies, unmap, unpin,
 * close), what each reports, the version and attribute calls, gdr_map_v2's
 * kinds, a CUDA free under a live mapping, and copies from several threads.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "test_gdrapi.h"

/* The layout gdrcopy's programs were compiled with (x86-64). */
_Static_assert(sizeof(gdr_mh_t) == sizeof(unsigned long), "gdr_mh_t");
_Static_assert(offsetof(gdr_info_v2_t, va) == 0 && offsetof(gdr_info_v2_t, mapped_size) == 8 &&
               offsetof(gdr_info_v2_t, page_size) == 16 &&
               offsetof(gdr_info_v2_t, tm_cycles) == 24 &&
               offsetof(gdr_info_v2_t, cycles_per_ms) == 32 &&
               offsetof(gdr_info_v2_t, mapping_type) == 40 && sizeof(gdr_info_v2_t) == 48,
               "gdr_info_v2_t");
_Static_assert(sizeof(gdr_info_t) == sizeof(gdr_info_v2_t), "gdr_info_t is the v2 struct");
_Static_assert(GDR_API_VERSION == ((2 << 16) | 6) && MINIMUM_GDRDRV_VERSION == (2 << 16) &&
               MINOR_VERSION_MASK == 0xffffu, "version macros");
_Static_assert(GPU_PAGE_SIZE == 65536 && GPU_PAGE_OFFSET == 65535 &&
               GPU_PAGE_MASK == ~65535ul, "GPU page macros");
_Static_assert(GDR_MAPPING_TYPE_WC == 1 && GDR_MAPPING_TYPE_DEVICE == 3 &&
               GDR_MAPPING_TYPE_MAX == 4 && GDR_PIN_FLAG_FORCE_PCIE == 1 &&
               GDR_MAP_FLAG_REQ_DEVICE_MAPPING == 3 && GDR_ATTR_USING_DMA_BUF_MMAP == 3,
               "enumerators");

/* Memory allocated before gdr_open, whole pages: what each call says
 * before and after the map, data both ways through CUDA. */
static void test_usual_order(void)
{
    gdr_mh_t mh;
    gdr_info_t info;
    void *map = NULL;
    int flag = -1;
    const size_t size = 3 * MiB;

    GDRX_REQUIRE(ga_cuda_setup() == 0);
    CUdeviceptr d = ga_alloc(size);
    GDRX_REQUIRE(d != 0);
    gdr_t g = ga_open();
    GDRX_REQUIRE(g != NULL);
    GDRX_REQUIRE(gdr_pin_buffer(g, d, size, 0, 0, &mh) == 0);
    CU_ASSERT_NOT_EQUAL(mh.h, 0);
    CU_ASSERT_EQUAL(gdr_get_info(g, mh, &info), 0);
    CU_ASSERT_EQUAL(info.va, d);
    CU_ASSERT_EQUAL(info.mapped_size, size);
    CU_ASSERT_EQUAL(info.page_size, GPU_PAGE_SIZE);
    CU_ASSERT_EQUAL(info.mapped, 0);
    CU_ASSERT_EQUAL(info.mapping_type, GDR_MAPPING_TYPE_NONE);
    CU_ASSERT_EQUAL(gdr_get_callback_flag(g, mh, &flag), 0);
    CU_ASSERT_EQUAL(flag, 0);

    GDRX_REQUIRE(gdr_map(g, mh, &map, size) == 0);
    CU_ASSERT_EQUAL(gdr_get_info_v2(g, mh, &info), 0);
    CU_ASSERT_EQUAL(info.mapped, 1);
    CU_ASSERT_EQUAL(info.wc_mapping, 1);
    CU_ASSERT_EQUAL(info.mapping_type, GDR_MAPPING_TYPE_WC);
    CU_ASSERT_EQUAL(info.tm_cycles, 0);

    unsigned char *buf = malloc(size);
    GDRX_REQUIRE(buf != NULL);
    ga_pattern(buf, size, 11);
    CU_ASSERT_EQUAL(gdr_copy_to_mapping(mh, map, buf, size), 0);
    CU_ASSERT(ga_check(d, size, 11));
    ga_fill(d, size, 12);
    memset(buf, 0, size);
    CU_ASSERT_EQUAL(gdr_copy_from_mapping(mh, buf, map, size), 0);
    unsigned char *want = malloc(size);
    ga_pattern(want, size, 12);
    CU_ASSERT_EQUAL(memcmp(buf, want, size), 0);

    CU_ASSERT_EQUAL(gdr_unmap(g, mh, map, size), 0);
    CU_ASSERT_EQUAL(gdr_get_info(g, mh, &info), 0);
    CU_ASSERT_EQUAL(info.mapped, 0);
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, mh), 0);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(d);
    free(buf);
    free(want);
}

/* gdr_pin_buffer_v2 with the default flag behaves as gdr_pin_buffer. */
static void test_pin_v2(void)
{
    gdr_mh_t mh;
    gdr_info_t info;
    void *map;

    CUdeviceptr d;
    gdr_t g;
    GDRX_REQUIRE(ga_start(2 * MiB, &d, &g) == 0);
    GDRX_REQUIRE(gdr_pin_buffer_v2(g, d, 128 * KiB, GDR_PIN_FLAG_DEFAULT, &mh) == 0);
    CU_ASSERT_EQUAL(gdr_get_info(g, mh, &info), 0);
    CU_ASSERT_EQUAL(info.va, d);
    CU_ASSERT_EQUAL(info.mapped_size, 128 * KiB);
    GDRX_REQUIRE(gdr_map(g, mh, &map, 128 * KiB) == 0);
    ga_fill(d, 128 * KiB, 3);
    unsigned char got[100], want[100];
    ga_pattern(want, sizeof(want), 3);
    CU_ASSERT_EQUAL(gdr_copy_from_mapping(mh, got, map, sizeof(got)), 0);
    CU_ASSERT_EQUAL(memcmp(got, want, sizeof(got)), 0);
    CU_ASSERT_EQUAL(gdr_close(g), 0); /* unmaps and unpins */
    ga_free(d);
}

static void test_versions(void)
{
    int major = -1, minor = -1;

    gdr_runtime_get_version(&major, &minor);
    CU_ASSERT_EQUAL(major, GDR_API_MAJOR_VERSION);
    CU_ASSERT_EQUAL(minor, GDR_API_MINOR_VERSION);
    GDRX_REQUIRE(ga_cuda_setup() == 0);
    gdr_t g = ga_open();
    GDRX_REQUIRE(g != NULL);
    major = minor = -1;
    CU_ASSERT_EQUAL(gdr_driver_get_version(g, &major, &minor), 0);
    if (ga_backend_is("gdrdrv")) {
        /* gdrdrv's own ABI version */
        CU_ASSERT(((major << MAJOR_VERSION_SHIFT) | minor) >= MINIMUM_GDRDRV_VERSION);
    } else {
        /* no gdrdrv: the interface level this library provides */
        CU_ASSERT_EQUAL(major, GDR_API_MAJOR_VERSION);
        CU_ASSERT_EQUAL(minor, GDR_API_MINOR_VERSION);
    }
    CU_ASSERT_EQUAL(gdr_driver_get_version(g, NULL, &minor), EINVAL);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
}

static void test_attributes(void)
{
    int v = -1;

    GDRX_REQUIRE(ga_cuda_setup() == 0);
    gdr_t g = ga_open();
    GDRX_REQUIRE(g != NULL);
    CU_ASSERT_EQUAL(gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, &v), 0);
    CU_ASSERT_EQUAL(v, 0); /* a CUDA free revokes the pin */
    v = -1;
    CU_ASSERT_EQUAL(gdr_get_attribute(g, GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE, &v), 0);
    /* dmabuf and nvrm honour it everywhere; gdrdrv as its driver says */
    CU_ASSERT(ga_backend_is("gdrdrv") ? v == 0 || v == 1 : v == 1);
    v = -1;
    CU_ASSERT_EQUAL(gdr_get_attribute(g, GDR_ATTR_USING_DMA_BUF_MMAP, &v), 0);
    CU_ASSERT_EQUAL(v, ga_backend_is("dmabuf"));
    v = 77;
    CU_ASSERT_EQUAL(gdr_get_attribute(g, GDR_ATTR_MAX, &v), EINVAL);
    CU_ASSERT_EQUAL(gdr_get_attribute(g, (gdr_attr_t)0, &v), EINVAL);
    CU_ASSERT_EQUAL(v, 77); /* untouched on failure */
    CU_ASSERT_EQUAL(gdr_get_attribute(g, GDR_ATTR_USING_DMA_BUF_MMAP, NULL), EINVAL);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
}

static void test_mapping_type_strings(void)
{
    static const char *const want[] = { "None", "Write Combining", "Caching", "Device" };
    const char *s = NULL;

    for (int t = GDR_MAPPING_TYPE_NONE; t < GDR_MAPPING_TYPE_MAX; t++) {
        CU_ASSERT_EQUAL(gdr_get_mapping_type_string((gdr_mapping_type_t)t, &s), 0);
        CU_ASSERT_STRING_EQUAL(s, want[t]);
    }
    s = "unchanged";
    CU_ASSERT_EQUAL(gdr_get_mapping_type_string(GDR_MAPPING_TYPE_MAX, &s), EINVAL);
    CU_ASSERT_EQUAL(gdr_get_mapping_type_string((gdr_mapping_type_t)-1, &s), EINVAL);
    CU_ASSERT_STRING_EQUAL(s, "unchanged");
    CU_ASSERT_EQUAL(gdr_get_mapping_type_string(GDR_MAPPING_TYPE_WC, NULL), EINVAL);
}

/* A kind the backend does not give is refused (EOPNOTSUPP, as gdrdrv)
 * and leaves nothing mapped;
 * the kind it gives (write-combined here) is accepted. */
static void test_map_v2_kinds(void)
{
    gdr_mh_t mh;
    gdr_info_t info;
    void *map = NULL;

    CUdeviceptr d;
    gdr_t g;
    GDRX_REQUIRE(ga_start(2 * MiB, &d, &g) == 0);
    GDRX_REQUIRE(gdr_pin_buffer(g, d, GPU_PAGE_SIZE, 0, 0, &mh) == 0);
    CU_ASSERT_EQUAL(gdr_map_v2(g, mh, &map, GPU_PAGE_SIZE, GDR_MAP_FLAG_REQ_CACHE_MAPPING),
                    EOPNOTSUPP);
    CU_ASSERT_EQUAL(gdr_map_v2(g, mh, &map, GPU_PAGE_SIZE, GDR_MAP_FLAG_REQ_DEVICE_MAPPING),
                    EOPNOTSUPP);
    CU_ASSERT_EQUAL(gdr_map_v2(g, mh, &map, GPU_PAGE_SIZE, 4), EINVAL);
    CU_ASSERT_EQUAL(gdr_map_v2(g, mh, &map, GPU_PAGE_SIZE, -1), EINVAL);
    CU_ASSERT_PTR_NULL(map);
    CU_ASSERT_EQUAL(gdr_get_info(g, mh, &info), 0);
    CU_ASSERT_EQUAL(info.mapped, 0);
    CU_ASSERT_EQUAL(gdr_map_v2(g, mh, &map, GPU_PAGE_SIZE, GDR_MAP_FLAG_REQ_WC_MAPPING), 0);
    CU_ASSERT_PTR_NOT_NULL(map);
    CU_ASSERT_EQUAL(gdr_get_info(g, mh, &info), 0);
    CU_ASSERT_EQUAL(info.mapping_type, GDR_MAPPING_TYPE_WC);
    CU_ASSERT_EQUAL(gdr_unmap(g, mh, map, GPU_PAGE_SIZE), 0);
    CU_ASSERT_EQUAL(gdr_map_v2(g, mh, &map, GPU_PAGE_SIZE, GDR_MAP_FLAG_DEFAULT), 0);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(d);
}

/* cudaFree under a live mapping: the copies fail instead of reaching the
 * memory's next owner, the callback flag says so, a new map is refused,
 * unmap and unpin still work. */
static void test_cuda_free_revokes(void)
{
    CUdeviceptr none;
    gdr_t g;

    GDRX_REQUIRE(ga_start(0, &none, &g) == 0);
    ga_check_free_revokes(g);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
}

/* gdr_close releases every mapping and pin it still holds. */
static void test_close_releases(void)
{
    struct ga_buf b[3];

    GDRX_REQUIRE(ga_cuda_setup() == 0);
    CUdeviceptr d = ga_alloc(4 * MiB);
    GDRX_REQUIRE(d != 0);
    long maps = gdrx_test_count_maps(1), fds = gdrx_test_count_fds();
    gdr_t g = ga_open();
    GDRX_REQUIRE(g != NULL);
    for (int i = 0; i < 3; i++)
        GDRX_REQUIRE(ga_pin_map(g, d + (CUdeviceptr)i * MiB, MiB, &b[i]) == 0);
    CU_ASSERT(gdrx_test_count_maps(1) > maps);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    CU_ASSERT_EQUAL(gdrx_test_count_maps(1), maps);
    CU_ASSERT_EQUAL(gdrx_test_count_fds(), fds);
    ga_free(d);
}

struct copier {
    gdr_mh_t mh;
    char    *dst;
    size_t   len;
    uint32_t seed;
    int      rc;
};

static void *copier_run(void *arg)
{
    struct copier *c = arg;
    char *src = malloc(c->len);

    ga_pattern(src, c->len, c->seed);
    c->rc = 0;
    for (int round = 0; round < 50 && c->rc == 0; round++)
        c->rc = gdr_copy_to_mapping(c->mh, c->dst, src, c->len);
    free(src);
    return NULL;
}

/* Unlike gdrcopy's, every call may run in any thread: four threads copy
 * through one mapping at once, each into its own quarter. */
static void test_threads_copy(void)
{
    struct ga_buf b;
    struct copier c[4];
    pthread_t t[4];
    const size_t q = 256 * KiB;

    CUdeviceptr d;
    gdr_t g;
    GDRX_REQUIRE(ga_start(4 * q, &d, &g) == 0);
    GDRX_REQUIRE(ga_pin_map(g, d, 4 * q, &b) == 0);
    for (int i = 0; i < 4; i++) {
        c[i] = (struct copier){ .mh = b.mh, .dst = b.ptr + i * q, .len = q, .seed = 40u + i };
        GDRX_REQUIRE(pthread_create(&t[i], NULL, copier_run, &c[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CU_ASSERT_EQUAL(c[i].rc, 0);
        CU_ASSERT(ga_check(d + i * q, q, 40u + i));
    }
    ga_release(&b);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(d);
}

const struct gdrx_test_case gapi_calls_cases[] = {
    GDRX_TEST_CASE(test_usual_order),
    GDRX_TEST_CASE(test_pin_v2),
    GDRX_TEST_CASE(test_versions),
    GDRX_TEST_CASE(test_attributes),
    GDRX_TEST_CASE(test_mapping_type_strings),
    GDRX_TEST_CASE(test_map_v2_kinds),
    GDRX_TEST_CASE(test_cuda_free_revokes),
    GDRX_TEST_CASE(test_close_releases),
    GDRX_TEST_CASE(test_threads_copy),
    GDRX_TEST_END,
};
