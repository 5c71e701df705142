/*
 * pplat_gpu.c - gdrx-pplat's GPU side: the embedded kernel loaded with
 * cuModuleLoadData and launched on a non-blocking stream (so no CUDA call
 * of the process waits for it), and host memory the GPU can reach.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>

#include "pplat.h"
#include "tool_floor.h"

struct pp_gpu {
    CUmodule   mod;
    CUfunction fn;
    CUstream   stream;
};

static int cu_failed(struct pp *p, const char *what, CUresult rc)
{
    fprintf(stderr, "%s: %s: %s\n", p->e->opts->tool, what, tool_cuda_error(&p->e->cu, rc));
    return -1;
}

int pp_gpu_load(struct pp *p)
{
    const struct tool_cuda *cu = &p->e->cu;
    size_t len;
    const unsigned char *image = pplat_image(&len);
    CUresult rc;

    if (!(p->gpu = calloc(1, sizeof(*p->gpu))))
        return -1;
    if ((rc = cu->ModuleLoadData(&p->gpu->mod, image)) != CUDA_SUCCESS)
        return cu_failed(p, "cuModuleLoadData(the embedded pp_echo kernel)", rc);
    if ((rc = cu->ModuleGetFunction(&p->gpu->fn, p->gpu->mod, "pp_echo")) != CUDA_SUCCESS)
        return cu_failed(p, "cuModuleGetFunction(pp_echo)", rc);
    if ((rc = cu->StreamCreate(&p->gpu->stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
        return cu_failed(p, "cuStreamCreate", rc);
    return 0;
}

void pp_gpu_unload(struct pp *p)
{
    const struct tool_cuda *cu = &p->e->cu;
    if (!p->gpu)
        return;
    if (p->gpu->stream)
        cu->StreamDestroy(p->gpu->stream);
    if (p->gpu->mod)
        cu->ModuleUnload(p->gpu->mod);
    free(p->gpu);
    p->gpu = NULL;
}

int pp_gpu_host_alloc(struct pp *p)
{
    const struct tool_cuda *cu = &p->e->cu;
    void *h;
    CUresult rc = cu->MemHostAlloc(&h, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);

    if (rc != CUDA_SUCCESS)
        return cu_failed(p, "cuMemHostAlloc", rc);
    p->host = h;
    if ((rc = cu->MemHostGetDevicePointer(&p->host_dev, h, 0)) != CUDA_SUCCESS)
        return cu_failed(p, "cuMemHostGetDevicePointer", rc);
    return 0;
}

void pp_gpu_host_free(struct pp *p)
{
    if (p->host)
        p->e->cu.MemFreeHost((void *)p->host);
    p->host = NULL;
}

int pp_gpu_start(struct pp *p)
{
    CUdeviceptr flag = p->mode == PP_WRITE ? p->dev : p->host_dev + 8;
    CUdeviceptr answer = p->mode == PP_WRITE ? p->host_dev : p->dev + 8;
    uint64_t start = p->seq;
    void *params[] = { &flag, &answer, &start };
    CUresult rc;

    rc = p->e->cu.LaunchKernel(p->gpu->fn, 1, 1, 1, 1, 1, 1, 0, p->gpu->stream, params, NULL);
    return rc == CUDA_SUCCESS ? 0 : cu_failed(p, "cuLaunchKernel(pp_echo)", rc);
}

int pp_gpu_stop(struct pp *p)
{
    uint64_t stop = PP_STOP;
    CUresult rc;

    if (p->mode == PP_WRITE)
        tool_floor_store(p->map, &stop, sizeof(stop));
    else
        p->host[1] = stop;
    rc = p->e->cu.StreamSynchronize(p->gpu->stream);
    return rc == CUDA_SUCCESS ? 0 : cu_failed(p, "the pp_echo kernel", rc);
}
