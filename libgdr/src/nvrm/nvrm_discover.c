/*
 * nvrm_discover.c - the four routes from a device address to an RM
 * object: ioctl trace, dma-buf export seen by the trace, IPC handle
 * (opt-in), exported VMM handle.
 *
 * SPDX-License-Identifier: MIT
 */
#include "nvrm_discover.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "nvrm_trace.h"

/* Object offset of the window start, given that the allocation starts at
 * alloc_off in the object; -EINVAL if the window would start before the
 * object (the device VA of an object is GPU-page aligned, so it cannot). */
static int window_offset(const struct gdrx_pin_req *req, uint64_t alloc_off, uint64_t *out)
{
    if (req->win_base > req->alloc_base)
        *out = alloc_off + (req->win_base - req->alloc_base);
    else if (req->alloc_base - req->win_base <= alloc_off)
        *out = alloc_off - (req->alloc_base - req->win_base);
    else
        return -EINVAL;
    return (*out & 0xfff) ? -EINVAL : 0;
}

static int from_trace(const struct gdrx_pin_req *req, struct nvrm_source *src)
{
    struct nvrm_trace_hit hit;

    if (nvrm_trace_lookup(req->dptr, &hit) != 0)
        return -ENOENT;
    /* The allocation CUDA reports must lie inside the recorded mapping. */
    if (!gdrx_range_within(hit.base, hit.length, req->alloc_base, req->alloc_size)) {
        gdrx_err("nvrm: allocation [%#llx, +%#zx) is not inside the RM mapping [%#llx, +%#llx)",
                 (unsigned long long)req->alloc_base, req->alloc_size,
                 (unsigned long long)hit.base, (unsigned long long)hit.length);
        return -EINVAL;
    }
    /* A span's window must be of the same mapping too (the object's VAs
     * are contiguous only within it). */
    if (gdrx_pin_req_spans(req) &&
        !gdrx_range_within(hit.base, hit.length, req->win_base, req->win_size)) {
        gdrx_dbg("nvrm: span [%#llx, +%#zx) leaves the RM mapping [%#llx, +%#llx)",
                 (unsigned long long)req->win_base, req->win_size,
                 (unsigned long long)hit.base, (unsigned long long)hit.length);
        return -EINVAL;
    }
    uint64_t alloc_off = hit.offset + (req->alloc_base - hit.base);
    if (window_offset(req, alloc_off, &src->obj_off) != 0)
        return -EINVAL;
    src->kind = NVRM_OBJ_DUP;
    src->h_client = hit.h_client;
    src->h_memory = hit.h_memory;
    src->serial = hit.serial;
    src->size_hint = hit.offset + hit.length;
    return 0;
}

/* The device range whose export proves the pin [*first, +*size): the
 * whole window of a span, else the part of the window inside the
 * allocation (all that copies reach), out to whole pages.  -EINVAL if
 * the window and the allocation do not meet or a sum would wrap. */
static int export_range(const struct gdrx_pin_req *req, uint64_t page, uint64_t *first,
                        uint64_t *size)
{
    uint64_t lo = req->win_base, hi = req->win_base + req->win_size;
    uint64_t alloc_end = req->alloc_base + req->alloc_size;

    if (hi < lo || alloc_end < req->alloc_base)
        return -EINVAL;
    if (!gdrx_pin_req_spans(req)) {
        lo = lo > req->alloc_base ? lo : req->alloc_base;
        hi = hi < alloc_end ? hi : alloc_end;
    }
    lo &= ~(page - 1);
    if (hi <= lo || hi > UINT64_MAX - (page - 1))
        return -EINVAL;
    hi = (hi + page - 1) & ~(page - 1);
    *first = lo;
    *size = hi - lo;
    return 0;
}

/*
 * Memory CUDA mapped before the trace was installed: ask CUDA for a
 * dma-buf of the pinned range while the trace watches this thread's
 * ioctls.  libcuda names the RM objects behind the range, each piece as
 * (object, offset, size) (the same pair its UVM mapping holds: every kind
 * matched on the H200, results/h200-nvrm-export-probe).  One piece
 * covering the whole range proves that the range is one object's pages,
 * in order; anything else (a range CUDA backs with several objects) is
 * refused, never pinned as if the first piece went on.  The dma-buf is
 * closed at once; nothing is shared beyond this process.
 */
static int from_export(struct nvrm_client *c, const struct gdrx_pin_req *req,
                       struct nvrm_source *src)
{
    const uint64_t page = 4096; /* the granule CUDA exports in */
    struct nvrm_export_seen seen;
    uint64_t first, size;
    int fd = -1;

    if (!c->cx->MemGetHandleForAddressRange || !nvrm_trace_installed())
        return -ENOENT;
    if (export_range(req, page, &first, &size) != 0)
        return -EINVAL;
    nvrm_trace_capture_begin(&seen);
    CUresult res = c->cx->MemGetHandleForAddressRange(&fd, (CUdeviceptr)first, size,
                                                      CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    nvrm_trace_capture_end();
    if (fd >= 0)
        close(fd);
    if (res != CUDA_SUCCESS) {
        gdrx_dbg("nvrm: cuMemGetHandleForAddressRange(%#llx, %#llx): CUDA error %d",
                 (unsigned long long)first, (unsigned long long)size, (int)res);
        return -ENOENT;
    }
    if (seen.count == 0 || !seen.h_client || !seen.h_memory || (seen.offset & (page - 1))) {
        gdrx_dbg("nvrm: the export of %#llx named no RM object (%d requests seen)",
                 (unsigned long long)first, seen.count);
        return -ENOENT;
    }
    if (seen.count != 1 || seen.num_objects != 1 || seen.size != size) {
        gdrx_err("nvrm: [%#llx, +%#llx) is not one RM object's memory in order (CUDA's "
                 "export of it names %u piece(s) in %d request(s), the first of %#llx "
                 "bytes); not pinning it",
                 (unsigned long long)first, (unsigned long long)size, seen.num_objects,
                 seen.count, (unsigned long long)seen.size);
        return -EINVAL;
    }
    /* The window starts first - win_base bytes before the proved range
     * (pages no copy reaches, of the same object as in every route). */
    if (seen.offset < first - req->win_base) {
        gdrx_err("nvrm: the window at %#llx would start before its RM object",
                 (unsigned long long)req->win_base);
        return -EINVAL;
    }
    src->obj_off = seen.offset - (first - req->win_base);
    src->kind = NVRM_OBJ_DUP;
    src->h_client = seen.h_client;
    src->h_memory = seen.h_memory;
    src->serial = nvrm_trace_adopt(src->h_client, src->h_memory);
    src->size_hint = 0;
    return src->serial ? 0 : -ENOMEM;
}

static int ipc_enabled(void)
{
    const char *v = secure_getenv("GDRX_NVRM_IPC");
    return v && *v && strcmp(v, "0") != 0;
}

int nvrm_discover_ipc(struct nvrm_client *c, const struct gdrx_pin_req *req,
                      struct nvrm_source *src)
{
    CUipcMemHandle h;
    uint32_t w[16];

    if (!c->cx->IpcGetMemHandle)
        return -ENOENT;
    CUresult res = c->cx->IpcGetMemHandle(&h, (CUdeviceptr)req->alloc_base);
    if (res != CUDA_SUCCESS) {
        gdrx_dbg("nvrm: cuIpcGetMemHandle(%#llx): CUDA error %d",
                 (unsigned long long)req->alloc_base, (int)res);
        return -ENOENT;
    }
    _Static_assert(sizeof(h.reserved) == sizeof(w), "CUipcMemHandle is 64 bytes");
    memcpy(w, h.reserved, sizeof(w));
    if (w[NVRM_IPC_WORD_SIZE] != (uint32_t)req->alloc_size || !w[NVRM_IPC_WORD_HCLIENT] ||
        !w[NVRM_IPC_WORD_HMEMORY]) {
        gdrx_err("nvrm: the IPC handle of %#llx does not have the expected layout (size word "
                 "%#x, allocation %#zx); not using it",
                 (unsigned long long)req->alloc_base, w[NVRM_IPC_WORD_SIZE], req->alloc_size);
        return -EPROTO;
    }
    if (window_offset(req, w[NVRM_IPC_WORD_OFFSET], &src->obj_off) != 0)
        return -EPROTO;
    src->kind = NVRM_OBJ_DUP;
    src->h_client = w[NVRM_IPC_WORD_HCLIENT];
    src->h_memory = w[NVRM_IPC_WORD_HMEMORY];
    src->serial = nvrm_trace_adopt(src->h_client, src->h_memory);
    src->size_hint = 0;
    return src->serial ? 0 : -ENOMEM;
}

static int from_vmm_export(struct nvrm_client *c, const struct gdrx_pin_req *req,
                           struct nvrm_source *src)
{
    const struct nvrm_cuda *cx = c->cx;
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop;
    int fd = -1;

    if (!cx->MemRetainAllocationHandle || !cx->MemGetAllocationPropertiesFromHandle ||
        !cx->MemExportToShareableHandle || !cx->MemRelease)
        return -ENOENT;
    if (cx->MemRetainAllocationHandle(&h, (void *)(uintptr_t)req->dptr) != CUDA_SUCCESS)
        return -ENOENT; /* not VMM memory */
    memset(&prop, 0, sizeof(prop));
    CUresult res = cx->MemGetAllocationPropertiesFromHandle(&prop, h);
    if (res == CUDA_SUCCESS &&
        (prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        res = cx->MemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    else if (res == CUDA_SUCCESS)
        res = CUDA_ERROR_NOT_SUPPORTED;
    cx->MemRelease(h);
    if (res != CUDA_SUCCESS || fd < 0) {
        gdrx_dbg("nvrm: VMM memory at %#llx cannot be exported as a POSIX fd (CUDA error %d)",
                 (unsigned long long)req->dptr, (int)res);
        return -ENOENT;
    }
    /* cuMemMap maps a handle from its offset 0 (CUDA requires it), and the
     * address range CUDA reports is that one mapping. */
    if (window_offset(req, 0, &src->obj_off) != 0) {
        close(fd);
        return -EINVAL;
    }
    src->kind = NVRM_OBJ_IMPORT;
    src->export_fd = fd;
    src->buffer_id = req->buffer_id;
    src->size_hint = req->alloc_size;
    return 0;
}

int nvrm_discover(struct nvrm_client *c, const struct gdrx_pin_req *req,
                  struct nvrm_source *src)
{
    memset(src, 0, sizeof(*src));
    src->export_fd = -1;

    int rc = from_trace(req, src);
    if (rc == -ENOENT)
        rc = from_export(c, req, src);
    if (rc == -ENOENT && gdrx_pin_req_spans(req)) {
        /* the other routes describe one allocation */
        gdrx_dbg("nvrm: no single RM object known for the span [%#llx, +%#zx)",
                 (unsigned long long)req->win_base, req->win_size);
        return -EINVAL;
    }
    if (rc == -ENOENT && ipc_enabled())
        rc = nvrm_discover_ipc(c, req, src);
    if (rc == -ENOENT)
        rc = from_vmm_export(c, req, src);
    if (rc == -ENOENT)
        gdrx_err("nvrm: no RM handle known for %#llx: CUDA mapped its memory before %s, "
                 "and CUDA refused a dma-buf of it; open the gdrx context before CUDA "
                 "allocates, set GDRX_NVRM_IPC=1, or use cuMemCreate with a POSIX fd handle "
                 "type (docs/nvrm.md)",
                 (unsigned long long)req->dptr,
                 nvrm_trace_installed() ? "the first nvrm gdrx_open started watching "
                                          "libcuda's ioctls"
                                        : "any trace (libcuda's ioctl import not found)");
    if (rc == 0)
        src->min_size = src->obj_off + req->win_size;
    return rc;
}
