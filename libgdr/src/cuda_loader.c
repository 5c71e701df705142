/*
 * cuda_loader.c - resolve the CUDA driver entry points from libcuda.so.1.
 *
 * SPDX-License-Identifier: MIT
 *
 * cuGetProcAddress is the supported way to obtain a driver entry point of a
 * given ABI version; when the driver lacks it (older than 11.3) or does not
 * know a symbol, the versioned export (e.g. cuMemGetAddressRange_v2) is
 * looked up with dlsym instead.  This file is the only one that touches
 * libcuda's symbol table.
 */
#include "cuda_loader.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ipoint.h"
#include "lock_order.h"
#include "log.h"

/* The CUDA version whose ABI the prototypes in struct gdrx_cuda follow for
 * every symbol we use (none of them changed between 12.0 and 13.x). */
#define GDRX_CUDA_ABI_VERSION 12000

typedef CUresult (*get_proc_v2_fn)(const char *, void **, int, cuuint64_t,
                                   CUdriverProcAddressQueryResult *);
typedef CUresult (*get_proc_v1_fn)(const char *, void **, int, cuuint64_t);

struct cuda_sym {
    const char *name;     /* base name, for cuGetProcAddress */
    const char *export;   /* versioned export, for dlsym */
    size_t      offset;   /* member of struct gdrx_cuda */
    int         required;
};

#define SYM(member, export, req) \
    { "cu" #member, export, offsetof(struct gdrx_cuda, member), req }

static const struct cuda_sym cuda_syms[] = {
    SYM(Init,                        "cuInit", 1),
    SYM(DriverGetVersion,            "cuDriverGetVersion", 1),
    SYM(DeviceGetCount,              "cuDeviceGetCount", 1),
    SYM(DeviceGet,                   "cuDeviceGet", 1),
    SYM(DeviceGetAttribute,          "cuDeviceGetAttribute", 1),
    SYM(DevicePrimaryCtxRetain,      "cuDevicePrimaryCtxRetain", 1),
    SYM(DevicePrimaryCtxRelease,     "cuDevicePrimaryCtxRelease_v2", 1),
    SYM(CtxPushCurrent,              "cuCtxPushCurrent_v2", 1),
    SYM(CtxPopCurrent,               "cuCtxPopCurrent_v2", 1),
    SYM(MemGetAddressRange,          "cuMemGetAddressRange_v2", 1),
    SYM(PointerGetAttribute,         "cuPointerGetAttribute", 1),
    SYM(PointerSetAttribute,         "cuPointerSetAttribute", 1),
    SYM(MemGetHandleForAddressRange, "cuMemGetHandleForAddressRange", 0),
    SYM(PointerGetAttributes,        "cuPointerGetAttributes", 0),
};

static struct gdrx_cuda cuda;
/* 0 once loaded; a failure is not kept: the next call tries again, e.g.
 * after the application loaded libcuda itself or the driver came up. */
static atomic_int cuda_loaded;
static pthread_mutex_t cuda_lock = PTHREAD_MUTEX_INITIALIZER;

static void *resolve(void *lib, get_proc_v2_fn gp2, get_proc_v1_fn gp1,
                     const struct cuda_sym *s)
{
    void *fn = NULL;
    CUresult res = CUDA_ERROR_NOT_FOUND;

    if (gp2) {
        CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
        res = gp2(s->name, &fn, GDRX_CUDA_ABI_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st);
        if (st != CU_GET_PROC_ADDRESS_SUCCESS)
            res = CUDA_ERROR_NOT_FOUND;
    } else if (gp1) {
        res = gp1(s->name, &fn, GDRX_CUDA_ABI_VERSION, CU_GET_PROC_ADDRESS_DEFAULT);
    }
    if (res == CUDA_SUCCESS && fn)
        return fn;
    return dlsym(lib, s->export);
}

/* Resolve every entry point and initialise the driver: 0 or -errno. */
static int cuda_load(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    int rc = 0;

    if (!lib) {
        gdrx_err("cannot load libcuda.so.1: %s", dlerror());
        return -ELIBACC;
    }
    get_proc_v2_fn gp2 = (get_proc_v2_fn)dlsym(lib, "cuGetProcAddress_v2");
    get_proc_v1_fn gp1 = gp2 ? NULL : (get_proc_v1_fn)dlsym(lib, "cuGetProcAddress");

    for (size_t i = 0; i < sizeof(cuda_syms) / sizeof(cuda_syms[0]); i++) {
        const struct cuda_sym *s = &cuda_syms[i];
        void *fn = resolve(lib, gp2, gp1, s);

        if (!fn && s->required) {
            gdrx_err("libcuda.so.1 lacks %s", s->export);
            rc = -ELIBACC;
            goto fail;
        }
        /* Object and function pointers share a representation on every
         * platform dlsym works on; memcpy avoids the ISO C cast warning. */
        memcpy((char *)&cuda + s->offset, &fn, sizeof(fn));
    }
    /* cuda_lock held: libcuda registers its fork handlers in here (issue
     * 43, defect 9: a fork must not wait for this thread) */
    GDRX_IPOINT("cuda_loader.before_init");
    CUresult res = cuda.Init(0);
    if (res != CUDA_SUCCESS) {
        gdrx_err("cuInit failed: CUDA error %d", (int)res);
        /* Kept loaded (CUDA does not support dlclose once initialised);
         * a retry's dlopen only takes another reference. */
        memset(&cuda, 0, sizeof(cuda));
        return -ENODEV;
    }
    if (cuda.DriverGetVersion(&cuda.driver_version) != CUDA_SUCCESS)
        cuda.driver_version = 0;
    gdrx_info("CUDA driver %d.%d loaded", cuda.driver_version / 1000,
              cuda.driver_version % 1000 / 10);
    return 0;

fail:
    memset(&cuda, 0, sizeof(cuda));
    dlclose(lib);
    return rc;
}

int gdrx_cuda_get(const struct gdrx_cuda **cu)
{
    int rc = 0;

    if (!atomic_load_explicit(&cuda_loaded, memory_order_acquire)) {
        gdrx_mutex_lock(&cuda_lock, GDRX_LOCK_CUDA_LOADER);
        if (!atomic_load_explicit(&cuda_loaded, memory_order_relaxed)) {
            rc = cuda_load();
            if (rc == 0)
                atomic_store_explicit(&cuda_loaded, 1, memory_order_release);
        }
        gdrx_mutex_unlock(&cuda_lock, GDRX_LOCK_CUDA_LOADER);
    }
    if (rc == 0)
        *cu = &cuda;
    return rc;
}

int gdrx_cuda_get_if_loaded(const struct gdrx_cuda **cu)
{
    void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);

    if (!lib)
        return -ENODEV;
    dlclose(lib); /* gdrx_cuda_get keeps its own reference */
    return gdrx_cuda_get(cu);
}

int gdrx_cuda_get_if_initialised(const struct gdrx_cuda **cu)
{
    void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    CUresult (*get_count)(int *);
    int count, rc = -ENODEV;

    if (!lib)
        return -ENODEV;
    void *sym = dlsym(lib, "cuDeviceGetCount");
    memcpy(&get_count, &sym, sizeof(sym));
    /* before cuInit the count fails and changes nothing; after it, our
     * cuInit(0) is a no-op */
    if (get_count && get_count(&count) == CUDA_SUCCESS)
        rc = gdrx_cuda_get(cu);
    dlclose(lib); /* gdrx_cuda_get keeps its own reference */
    return rc;
}

int gdrx_cuda_refused(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    CUresult (*init)(unsigned int);

    if (!lib)
        return 0;
    void *sym = dlsym(lib, "cuInit");
    memcpy(&init, &sym, sizeof(sym));
    /* after a successful cuInit a second one is a no-op; where it failed
     * the caller's open has failed anyway */
    int refused = init && init(0) == CUDA_ERROR_NOT_INITIALIZED;
    dlclose(lib);
    return refused;
}

int gdrx_cuda_errno(CUresult res)
{
    switch (res) {
    case CUDA_SUCCESS:                return 0;
    case CUDA_ERROR_INVALID_VALUE:    return -EINVAL;
    case CUDA_ERROR_OUT_OF_MEMORY:    return -ENOMEM;
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:   return -ENODEV;
    case CUDA_ERROR_NOT_SUPPORTED:    return -EOPNOTSUPP;
    case CUDA_ERROR_NOT_PERMITTED:    return -EPERM;
    case CUDA_ERROR_NOT_FOUND:        return -ENOENT;
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: return -EINVAL;
    default:                          return -EIO;
    }
}

/* One thread here; another may have been loading libcuda, holding
 * cuda_lock, when the process was copied.  What it had resolved is redone
 * by the child's first gdrx_cuda_get (cuda_loaded is set last). */
void gdrx_cuda_fork_child(void)
{
    gdrx_mutex_child_reset(&cuda_lock, GDRX_LOCK_CUDA_LOADER);
}
