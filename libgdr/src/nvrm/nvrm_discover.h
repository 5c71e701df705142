/*
 * nvrm_discover.h - which RM object holds a pin's memory, and where.
 *
 * SPDX-License-Identifier: MIT
 *
 * In order:
 *  1. the ioctl trace (nvrm_trace.h): allocations made after the backend
 *     opened, including cuMemAllocAsync pools and cuMemMap'ed VMM memory;
 *  2. memory CUDA mapped before the trace: cuMemGetHandleForAddressRange
 *     of the allocation's first page while the trace watches this thread;
 *     libcuda's export request names (hClient, hMemory, offset).  The
 *     dma-buf is closed at once: no side effect beyond this process;
 *  3. with GDRX_NVRM_IPC=1 (opt-in): cuIpcGetMemHandle of the allocation,
 *     whose undocumented words 12/13/7 hold (hClient, hMemory, offset),
 *     checked against cuMemGetAddressRange (word 4 = size) and, after the
 *     dup, against the RM (video memory, object large enough).  Side
 *     effect: CUDA shares the object with RS_SHARE_TYPE_ALL, so any
 *     process on the node that learns the handles can duplicate it;
 *  4. VMM memory created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR:
 *     cuMemRetainAllocationHandle + cuMemExportToShareableHandle give an
 *     exported ctl fd, imported with the documented RM controls.
 * Called with the pin's device context current.
 */
#ifndef GDRX_NVRM_DISCOVER_H
#define GDRX_NVRM_DISCOVER_H

#include "backend.h"
#include "nvrm_client.h"
#include "nvrm_object.h"

/* Fill src for req.  0, -ENOENT (no route knows the memory), -errno. */
int nvrm_discover(struct nvrm_client *c, const struct gdrx_pin_req *req,
                  struct nvrm_source *src);

/* The IPC-handle route alone (exposed for tests). */
int nvrm_discover_ipc(struct nvrm_client *c, const struct gdrx_pin_req *req,
                      struct nvrm_source *src);

#endif /* GDRX_NVRM_DISCOVER_H */
