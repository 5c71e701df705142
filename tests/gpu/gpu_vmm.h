/*
 * gpu_vmm.h - cuMemCreate'd memory (POSIX fd handle type) mapped and made
 * accessible on device 0, for the GPU programs.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_GPU_VMM_H
#define GDRX_GPU_VMM_H

#include <cuda.h>
#include <stddef.h>

struct vmm {
    CUdeviceptr                  va;
    size_t                       size;
    CUmemGenericAllocationHandle h;
};

/* At least `want` bytes (rounded to the granularity).  The first failing
 * call's result, its name in *what. */
CUresult vmm_create(struct vmm *m, size_t want, const char **what);
void vmm_destroy(struct vmm *m);

#endif /* GDRX_GPU_VMM_H */
