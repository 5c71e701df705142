/*
 * core_fake.c - the fake CUDA driver and backend of core_fake.h.
 *
 * SPDX-License-Identifier: MIT
 */
#include "core_fake.h"
#include "fork_defer.h"
#include "free_hook.h"
#include "graph_mem.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct fake fk;

static int find(uint64_t p)
{
    for (int i = 0; i < FAKE_MAX_ALLOCS; i++)
        if (fk.alloc[i].size && p >= fk.alloc[i].base && p - fk.alloc[i].base < fk.alloc[i].size)
            return i;
    return -1;
}

/* pin.c installs the CUDA hooks at a pin: none here (no libcuda). */
int gdrx_free_hook_enable(void)
{
    return -ENOSYS;
}

/* The fake allocations are cuMemAlloc's: no graph launch frees them
 * (graph memory has its own suite, test_graph_mem, on the simulated GPU). */
int gdrx_graph_mem_launch_bound(const struct gdrx_cuda *cu, CUdeviceptr dptr)
{
    (void)cu;
    (void)dptr;
    return 0;
}

int gdrx_graph_mem_launches_seen(void)
{
    return 0;
}

int fake_alloc(uint64_t base, size_t size)
{
    for (int i = 0; i < FAKE_MAX_ALLOCS; i++) {
        if (fk.alloc[i].size)
            continue;
        fk.alloc[i].base = base;
        fk.alloc[i].size = size;
        fk.alloc[i].buffer_id = ++fk.next_buffer_id;
        return i;
    }
    return -1;
}

void fake_free(uint64_t base)
{
    int i = find(base);
    if (i >= 0)
        fk.alloc[i].size = 0;
}

/* ---- CUDA ---- */

static CUresult CUDAAPI f_get_attr(void *data, CUpointer_attribute attr, CUdeviceptr p)
{
    int i = find(p);
    if (i < 0)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = CU_MEMORYTYPE_DEVICE;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = fk.alloc[i].buffer_id;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUresult CUDAAPI f_set_attr(const void *v, CUpointer_attribute a, CUdeviceptr p)
{
    (void)v, (void)a;
    return find(p) >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult CUDAAPI f_range(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
    int i = find(p);
    if (i < 0)
        return CUDA_ERROR_INVALID_VALUE;
    *base = fk.alloc[i].base;
    *size = fk.alloc[i].size;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI f_count(int *n)
{
    *n = 1;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI f_dev(CUdevice *d, int ordinal)
{
    *d = ordinal;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI f_retain(CUcontext *c, CUdevice d)
{
    (void)d;
    *c = (CUcontext)&fk;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI f_release(CUdevice d)
{
    (void)d;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI f_push(CUcontext c)
{
    (void)c;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI f_pop(CUcontext *c)
{
    *c = (CUcontext)&fk;
    return CUDA_SUCCESS;
}

static const struct gdrx_cuda fake_cu = {
    .driver_version = 13000,
    .DeviceGetCount = f_count,
    .DeviceGet = f_dev,
    .DevicePrimaryCtxRetain = f_retain,
    .DevicePrimaryCtxRelease = f_release,
    .CtxPushCurrent = f_push,
    .CtxPopCurrent = f_pop,
    .MemGetAddressRange = f_range,
    .PointerGetAttribute = f_get_attr,
    .PointerSetAttribute = f_set_attr,
};

/* ---- backend ---- */

static int b_pin(void *bctx, const struct gdrx_pin_req *req, struct gdrx_backend_pin *bp)
{
    (void)bctx, (void)req;
    fk.pins++;
    bp->priv = &fk;
    return 0;
}

static int b_unpin(void *bctx, struct gdrx_backend_pin *bp)
{
    (void)bctx;
    CU_ASSERT_PTR_EQUAL(bp->priv, &fk);
    bp->priv = NULL;
    fk.unpins++;
    return 0;
}

static int b_map(void *bctx, struct gdrx_backend_pin *bp)
{
    (void)bctx;
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | (fk.next_map_at ? MAP_FIXED : 0);
    void *p = mmap(fk.next_map_at, bp->pin_size, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED)
        return -errno;
    fk.maps++;
    bp->cpu_base = p;
    bp->dbase = bp->pin_base;
    bp->map_size = bp->pin_size;
    bp->type = GDRX_MAPPING_WC;
    return 0;
}

static int b_unmap(void *bctx, struct gdrx_backend_pin *bp)
{
    (void)bctx;
    fk.unmaps++;
    return munmap(bp->cpu_base, bp->map_size) == 0 ? 0 : -errno;
}

const struct gdrx_backend_ops fake_ops = {
    .name = "fake", .id = GDRX_BACKEND_DMABUF,
    .pin = b_pin, .unpin = b_unpin, .map = b_map, .unmap = b_unmap,
};

void fake_ctx_init(struct gdrx_ctx *ctx)
{
    memset(&fk, 0, sizeof(fk));
    memset(ctx, 0, sizeof(*ctx));
    ctx->ops = &fake_ops;
    CU_ASSERT_EQUAL(gdrx_devctx_init(&ctx->dev, &fake_cu), 0);
}

void fake_ctx_fini(struct gdrx_ctx *ctx)
{
    gdrx_devctx_fini(&ctx->dev);
}

struct gdrx_pin *fake_locked(struct gdrx_ctx *ctx, uint64_t id)
{
    struct gdrx_pin *pin = NULL;
    CU_ASSERT_EQUAL(gdrx_pin_get_locked(ctx, id, &pin), 0);
    return pin;
}

struct gdrx_pin *fake_pin_map(struct gdrx_ctx *ctx, uint64_t dptr, size_t len, uint64_t *id,
                              void **cpu)
{
    CU_ASSERT_EQUAL_FATAL(gdrx_pin_create(ctx, dptr, len, 0, id), 0);
    struct gdrx_pin *pin = fake_locked(ctx, *id);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pin);
    CU_ASSERT_EQUAL(gdrx_pin_map_locked(pin, cpu), 0);
    gdrx_mutex_unlock(&pin->lock, GDRX_LOCK_PIN);
    return pin;
}

int fake_is_mapped(const void *p, size_t len)
{
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p & ~((uintptr_t)page - 1);
    unsigned char vec[64];

    if (len > sizeof(vec) * (size_t)page)
        len = sizeof(vec) * (size_t)page;
    return mincore((void *)a, len + ((uintptr_t)p - a), vec) == 0;
}

/* ---- the seams of the core's sources and what they call ---- */

static void copy_record(void *dst, const void *src, size_t len)
{
    fk.copies++;
    memcpy(dst, src, len);
}

static const struct gdrx_copy_impl fake_impl = {
    .variant = GDRX_COPY_LIBC, .to_mapping = copy_record,
    .from_variant = GDRX_COPY_LIBC, .from_mapping = copy_record,
};

const struct gdrx_copy_impl *gdrx_copy_default(void)
{
    return &fake_impl;
}

const struct gdrx_copy_impl *gdrx_copy_for_mapping(gdrx_mapping_type_t type)
{
    (void)type;
    return &fake_impl;
}

void *core_test_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (fk.revoke_mmap_errno) {
        errno = fk.revoke_mmap_errno;
        return MAP_FAILED;
    }
    return mmap(addr, len, prot, flags, fd, off);
}

/* fork.c is not part of this build and nothing here forks: keeping fork
 * out of a backend map is a no-op. */
void gdrx_fork_hold(void)
{
}

void gdrx_fork_release(void)
{
}

/* nor is fork_defer.c: no fork handler ever calls in */
int gdrx_fork_refuse(const char *what)
{
    (void)what;
    return 0;
}

int gdrx_fork_copy_refuse(void)
{
    return 0;
}
