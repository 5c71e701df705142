/*
 * nvrm_cuda.c - look up the extra CUDA entry points in the libcuda.so.1
 * that is already loaded.
 *
 * SPDX-License-Identifier: MIT
 *
 * None of these symbols has a versioned (_v2) variant, so the plain export
 * is the current ABI.  RTLD_NOLOAD: the core owns loading libcuda.
 */
#include "nvrm_cuda.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "log.h"

static struct nvrm_cuda table;
static int status = -ELIBACC;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static const struct {
    const char *name;
    size_t      offset;
    int         required;
} syms[] = {
    { "cuDeviceGetPCIBusId", offsetof(struct nvrm_cuda, DeviceGetPCIBusId), 1 },
    { "cuIpcGetMemHandle", offsetof(struct nvrm_cuda, IpcGetMemHandle), 0 },
    { "cuMemRetainAllocationHandle", offsetof(struct nvrm_cuda, MemRetainAllocationHandle), 0 },
    { "cuMemGetAllocationPropertiesFromHandle",
      offsetof(struct nvrm_cuda, MemGetAllocationPropertiesFromHandle), 0 },
    { "cuMemExportToShareableHandle", offsetof(struct nvrm_cuda, MemExportToShareableHandle), 0 },
    { "cuMemRelease", offsetof(struct nvrm_cuda, MemRelease), 0 },
    { "cuMemGetHandleForAddressRange", offsetof(struct nvrm_cuda, MemGetHandleForAddressRange),
      0 },
    { "cuMemAlloc_v2", offsetof(struct nvrm_cuda, MemAlloc), 0 },
    { "cuMemFree_v2", offsetof(struct nvrm_cuda, MemFree), 0 },
    { "cuMemcpyHtoD_v2", offsetof(struct nvrm_cuda, MemcpyHtoD), 0 },
    { "cuMemcpyDtoH_v2", offsetof(struct nvrm_cuda, MemcpyDtoH), 0 },
};

static void load(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!lib) {
        gdrx_err("libcuda.so.1 is not loaded: %s", dlerror());
        return;
    }
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        void *fn = dlsym(lib, syms[i].name);
        if (!fn && syms[i].required) {
            gdrx_err("libcuda.so.1 lacks %s", syms[i].name);
            dlclose(lib);
            return;
        }
        memcpy((char *)&table + syms[i].offset, &fn, sizeof(fn));
    }
    /* The reference taken by RTLD_NOLOAD is dropped; the core's keeps the
     * library loaded for the life of the process. */
    dlclose(lib);
    status = 0;
}

int nvrm_cuda_get(const struct nvrm_cuda **out)
{
    pthread_once(&once, load);
    if (status == 0)
        *out = &table;
    return status;
}
