/*
 * tcuda.h - what the libgdrx suites need from CUDA and the simulated GPU.
 *
 * SPDX-License-Identifier: MIT
 *
 * libcuda.so.1 is dlopen'ed (the sim under `make check`, whatever the qemu
 * guest provides there), so the suites build and run without linking to
 * either.  Data is always checked through CUDA (cuMemcpyDtoH/HtoD), never
 * by trusting libgdrx.  The sim's control API (simcu_*) is optional: cases
 * that need it are registered only when it is present, and the suite says
 * so when they are not.
 */
#ifndef GDRX_TCUDA_H
#define GDRX_TCUDA_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "gdrx.h"
#include "gdrx_test.h"

struct simcu_copy_info; /* simcu.h */

struct tcuda {
    __typeof__(&cuInit)                   Init;
    __typeof__(&cuDeviceGet)              DeviceGet;
    __typeof__(&cuDeviceGetCount)         DeviceGetCount;
    __typeof__(&cuDeviceGetAttribute)     DeviceGetAttribute;
    __typeof__(&cuDevicePrimaryCtxRetain) DevicePrimaryCtxRetain;
    __typeof__(&cuDevicePrimaryCtxReset)  DevicePrimaryCtxReset;
    __typeof__(&cuCtxSetCurrent)          CtxSetCurrent;
    __typeof__(&cuCtxGetCurrent)          CtxGetCurrent;
    __typeof__(&cuMemAlloc)               MemAlloc;
    __typeof__(&cuMemFree)                MemFree;
    __typeof__(&cuMemcpyHtoD)             MemcpyHtoD;
    __typeof__(&cuMemcpyDtoH)             MemcpyDtoH;
    __typeof__(&cuMemsetD8)               MemsetD8;
    __typeof__(&cuPointerGetAttribute)    PointerGetAttribute;
    __typeof__(&cuGraphLaunch)            GraphLaunch;
    __typeof__(&cuGraphExecDestroy)       GraphExecDestroy;
};

/* The simulated GPU's control API; every member may be NULL. */
struct tsim {
    int  (*fail_next)(const char *function_name, CUresult err, int count);
    int  (*set_device_count)(int n);
    int  (*set_suballoc_threshold)(size_t bytes);
    int  (*set_suballoc_alignment)(size_t bytes);
    int  (*set_va_reuse)(int on);
    long (*live_allocations)(void);
    CUresult (*free_unhooked)(CUdeviceptr p);
    CUresult (*graph_free_node)(CUdeviceptr p, CUgraphExec *out);
    int  (*last_copy)(struct simcu_copy_info *out);
    long (*live_streams)(void);
    int  (*hide_entry_point)(const char *symbol, int hide);
    int  (*last_export)(unsigned long long *flags);
    int  (*place_next_alloc)(CUdeviceptr va, unsigned flags);
};

extern struct tcuda tc;
extern struct tsim tsim;

/* Load libcuda.so.1 and the optional simcu_* (no CUDA call; safe before
 * fork).  Returns 1 if the simulated GPU's control API is there. */
int tc_load(void);

/* Set GDRX_BACKEND to dmabuf unless the environment chose one. */
void tc_default_backend(void);

/* main() of a libgdrx suite: before(argv) first when not NULL (non-zero:
 * the program ends with status 1; e.g. nvt_use_nvrm), then the default
 * backend, libcuda loaded, and the suites run. */
int tc_main(int argc, char **argv, const struct gdrx_test_suite *suites,
            int (*before)(char **argv));

/* In a test case: cuInit and make device `dev`'s primary context current.
 * Fails the case (CU_FAIL) and returns -1 when that is impossible. */
int tc_setup(int dev);

/* Allocation on the current device; 0 on failure (and CU_FAIL). */
CUdeviceptr tc_alloc(size_t bytes);
/* An allocation the simulated GPU places (simcu_place_next_alloc): in an
 * object of its own, at va (2 MiB-aligned), or anywhere if va is 0; alone
 * (not 0): no later allocation is sub-allocated in that object either.
 * For a case whose precondition is where CUDA put an allocation (freed VA
 * handed out again, neighbours): the case fails (CU_FAIL, 0) when the
 * placement cannot be made, and never depends on what else allocated. */
CUdeviceptr tc_alloc_at(CUdeviceptr va, size_t bytes, int alone);
/* cuMemFree_v2 looked up at the time of the call, as an application that
 * resolves it after gdrx_open would: libgdrx's free hooks see this one. */
void tc_free(CUdeviceptr p);
/* A free through no entry point libgdrx hooks (the sim's
 * simcu_free_unhooked, like a graph's free node): libgdrx learns of it
 * only through gdrx_pin_query (and the nvrm backend's trace).  A pointer
 * fetched before gdrx_open would not do: installing the hooks patches what
 * cuGetProcAddress hands out too (tc_table_free). */
void tc_free_unseen(CUdeviceptr p);
/* What cuGetProcAddress_v2 hands out for "cuMemFree" at cudaVersion 12000,
 * fetched now (call it before gdrx_open, as a CUDA runtime that built its
 * driver table first): on the simulated GPU the driver's own free, not the
 * export, so a hook on the export alone does not see a free through it.
 * NULL (and CU_FAIL) if there is none. */
__typeof__(&cuMemFree) tc_table_free(void);

/* Fill / check through CUDA.  tc_fill writes pattern(seed, i) to
 * [p, p+len); tc_check returns 1 if the device holds that pattern. */
void tc_fill(CUdeviceptr p, size_t len, uint32_t seed);
int  tc_check(CUdeviceptr p, size_t len, uint32_t seed);
/* The same pattern in host memory. */
void tc_pattern(void *buf, size_t len, uint32_t seed);

/* gdrx_open with the backend the environment selects; CU_FAIL on error. */
gdrx_t tc_open(void);

/* Register `extra` after `base` in a suite table (both GDRX_SUITE_END
 * terminated); the result lives until exit. */
const struct gdrx_test_suite *tc_suites(const struct gdrx_test_suite *base,
                                        const struct gdrx_test_suite *extra);

/* main() of a suite program whose sim_suites need the simulated GPU's
 * control API (failure injection): with the backend the environment
 * selects, suites and, where the sim is loaded, sim_suites; else
 * sim_suites are reported as not run. */
int tc_main_with_sim(int argc, char **argv, const struct gdrx_test_suite *suites,
                     const struct gdrx_test_suite *sim_suites);

/* Print that a suite's cases did not run and why (they are not registered,
 * so they count neither as passed nor as failed). */
void tc_report_skip(const char *suite, const char *why);

/* The prefix of a CUDA-enabled UCX 1.13.1 build (one whose
 * lib/ucx/libucm_cuda.so.0 is readable), never part of this tree:
 * $GDRX_UCX_CUDA_PREFIX, then /opt/gdrx-ucx-cuda (config/deps.sh builds it
 * there), then third_party/ucx-1.13.1-cuda in or above $GDRX_TEST_SRCDIR.
 * 1 and the prefix in buf, or 0 if there is none. */
int tc_ucx_cuda_prefix(char *buf, size_t len);

/* Keep libgdrx from hooking the libcuda entry point `entry`: map the page
 * where its one-byte entry patch would land (entry_patch.h), as another
 * library's patch might have.  Call before the hooks go in.  0, or CU_FAIL
 * and -1. */
int tc_take_landing(const char *entry);

#endif /* GDRX_TCUDA_H */
