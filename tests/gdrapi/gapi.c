/*
 * gapi.c - CUDA, patterns and pinned buffers for the libgdrapi suites.
 *
 * SPDX-License-Identifier: MIT
 */
#include "gapi.h"
#include "../gpu/gpu_pattern.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int ga_cuda_setup(void)
{
    CUdevice dev;
    CUcontext ctx;

    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        CU_FAIL("CUDA setup failed");
        return -1;
    }
    return 0;
}

CUdeviceptr ga_alloc(size_t bytes)
{
    CUdeviceptr p = 0;

    if (cuMemAlloc(&p, bytes) != CUDA_SUCCESS) {
        CU_FAIL("cuMemAlloc failed");
        return 0;
    }
    return p;
}

void ga_free(CUdeviceptr p)
{
    CU_ASSERT_EQUAL(cuMemFree(p), CUDA_SUCCESS);
}

void ga_pattern(void *buf, size_t len, uint32_t seed)
{
    unsigned char *b = buf;

    for (size_t i = 0; i < len; i++)
        b[i] = gp_byte(i, seed);
}

void ga_fill(CUdeviceptr p, size_t len, uint32_t seed)
{
    void *buf = malloc(len ? len : 1);

    ga_pattern(buf, len, seed);
    CU_ASSERT_EQUAL(cuMemcpyHtoD(p, buf, len), CUDA_SUCCESS);
    free(buf);
}

int ga_check(CUdeviceptr p, size_t len, uint32_t seed)
{
    unsigned char *want = malloc(len ? len : 1), *got = malloc(len ? len : 1);

    ga_pattern(want, len, seed);
    int ok = cuMemcpyDtoH(got, p, len) == CUDA_SUCCESS && memcmp(want, got, len) == 0;
    free(want);
    free(got);
    return ok;
}

void ga_default_backend(void)
{
    setenv("GDRX_BACKEND", "dmabuf", 0);
}

int ga_backend_is(const char *name)
{
    const char *b = getenv("GDRX_BACKEND");

    return b && strcmp(b, name) == 0;
}

int ga_roundtrip(gdr_mh_t mh, void *ptr, CUdeviceptr p, size_t len, uint32_t seed)
{
    unsigned char *buf = calloc(1, len ? len : 1), *want = calloc(1, len ? len : 1);
    int ok = buf && want;

    if (ok) {
        ga_pattern(buf, len, seed);
        ok = gdr_copy_to_mapping(mh, ptr, buf, len) == 0 && ga_check(p, len, seed);
        ga_fill(p, len, seed + 1);
        ga_pattern(want, len, seed + 1);
        ok = ok && gdr_copy_from_mapping(mh, buf, ptr, len) == 0 && memcmp(buf, want, len) == 0;
    }
    free(buf);
    free(want);
    return ok;
}

int ga_pin_map(gdr_t g, CUdeviceptr d, size_t size, struct ga_buf *b)
{
    memset(b, 0, sizeof(*b));
    b->g = g;
    b->d = d;
    b->size = size;
    int rc = gdr_pin_buffer(g, d, size, 0, 0, &b->mh);
    if (rc) {
        fprintf(stderr, "    gdr_pin_buffer(%#llx, %zu): %s\n", (unsigned long long)d, size,
                strerror(rc));
        CU_FAIL("gdr_pin_buffer failed");
        return -1;
    }
    rc = gdr_get_info(g, b->mh, &b->info);
    if (rc == 0) {
        b->map_size = b->info.mapped_size;
        rc = gdr_map(g, b->mh, &b->map, b->map_size);
    }
    if (rc) {
        fprintf(stderr, "    gdr_get_info/gdr_map: %s\n", strerror(rc));
        CU_FAIL("gdr_get_info or gdr_map failed");
        gdr_unpin_buffer(g, b->mh);
        return -1;
    }
    b->ptr = (char *)b->map + (d - b->info.va);
    return 0;
}

void ga_release(struct ga_buf *b)
{
    CU_ASSERT_EQUAL(gdr_unmap(b->g, b->mh, b->map, b->map_size), 0);
    CU_ASSERT_EQUAL(gdr_unpin_buffer(b->g, b->mh), 0);
}

gdr_t ga_open(void)
{
    gdr_t g = gdr_open();

    if (!g) {
        fprintf(stderr, "    gdr_open: NULL (errno %d: %s)\n", errno, strerror(errno));
        CU_FAIL("gdr_open failed");
    }
    return g;
}

int ga_start(size_t bytes, CUdeviceptr *d, gdr_t *g)
{
    *d = 0;
    *g = NULL;
    if (ga_cuda_setup() != 0)
        return -1;
    if (bytes && (*d = ga_alloc(bytes)) == 0)
        return -1;
    *g = ga_open();
    return *g ? 0 : -1;
}

void ga_check_free_revokes(gdr_t g)
{
    struct ga_buf b;
    gdr_info_t info;
    void *map;
    int flag = 0;
    char byte = 1;
    CUdeviceptr d = ga_alloc(2 * MiB);

    GDRX_REQUIRE(d != 0);
    GDRX_REQUIRE(ga_pin_map(g, d, 2 * MiB, &b) == 0);
    ga_free(d);
    CU_ASSERT_EQUAL(gdr_copy_to_mapping(b.mh, b.ptr, &byte, 1), ESTALE);
    CU_ASSERT_EQUAL(gdr_copy_from_mapping(b.mh, &byte, b.ptr, 1), ESTALE);
    CU_ASSERT_EQUAL(gdr_get_callback_flag(g, b.mh, &flag), 0);
    CU_ASSERT_EQUAL(flag, 1);
    CU_ASSERT_EQUAL(gdr_get_info(g, b.mh, &info), 0);
    CU_ASSERT_EQUAL(info.mapped, 0);
    CU_ASSERT_EQUAL(gdr_unmap(g, b.mh, b.map, b.map_size), 0); /* releases the range */
    CU_ASSERT_EQUAL(gdr_map(g, b.mh, &map, b.map_size), ESTALE);
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, b.mh), 0);
}

static int child_side(int rfd, int (*child)(CUdeviceptr))
{
    CUdeviceptr d = 0;

    alarm(gdrx_test_timeout());
    if (read(rfd, &d, sizeof(d)) != (ssize_t)sizeof(d))
        return 120; /* the parent failed before sending it */
    return child(d);
}

int ga_fork_after_open(int (*child)(CUdeviceptr parent_ptr))
{
    int v = -1, status = -1, fds[2];
    gdr_t g = ga_open();

    if (!g || gdr_get_attribute(g, GDR_ATTR_USING_DMA_BUF_MMAP, &v) != 0 || gdr_close(g) != 0 ||
        pipe(fds) != 0) {
        CU_FAIL("open, attribute or close before the fork failed");
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[1]);
        _exit(child_side(fds[0], child));
    }
    close(fds[0]);
    CUdeviceptr d = pid > 0 && ga_cuda_setup() == 0 ? ga_alloc(GPU_PAGE_SIZE) : 0;
    if (d && write(fds[1], &d, sizeof(d)) != (ssize_t)sizeof(d))
        CU_FAIL("cannot send the address");
    close(fds[1]);
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (d)
        ga_free(d);
    return pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
