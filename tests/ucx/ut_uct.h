/*
 * ut_uct.h - what the gdrx UCX suites share: loading the plugin the way
 * LD_PRELOAD does, opening gdrx's MD/iface/ep through the public UCT API,
 * registering device memory and reading the plugin's counters.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UT_UCT_H
#define UT_UCT_H

#include <uct/api/uct.h>

#include "tcuda.h"
#include "ut_version.h"

struct ut_uct {
    uct_component_h      component;
    uct_md_h             md;
    ucs_async_context_t  *async;
    uct_worker_h         worker;
    uct_iface_h          iface;
    uct_iface_attr_t     attr;
    uct_ep_h             ep;
    char                 stats[256]; /* UCX_GDRX_STATS_DUMP file */
};

struct ut_reg {
    uct_mem_h            memh;
    uct_rkey_bundle_t    rkey;
};

/* Path of a file in the build tree (GDRX_TEST_BUILDDIR). */
void ut_build_path(char *buf, size_t size, const char *rel);

/* The simulated libcuda and tests/ucx's helper that initialises CUDA at
 * load, as an LD_PRELOAD list ("a:b"): a CUDA program that set up CUDA
 * before UCX, for programs of the suites' own that never touch CUDA
 * (ucx_info, MPI ranks before MPI_Init; see ut_cuda_init.c). */
void ut_sim_preload(char *buf, size_t size);

/* The library path of a process that runs the CUDA-enabled build of the
 * UCX release the plugin was built for, with its gdr_copy (built by
 * config/ucx-cuda-debian.sh): the simulated GPU and runtime, gdrx's
 * libgdrapi.so.2, that UCX, NVML.  0 (buf untouched) without such a build. */
int ut_ucx_cuda_libpath(char *buf, size_t size);

/* 1 if the UCX this process runs raises CUDA memory events of its own
 * (built with CUDA, its UCM module libucm_cuda loaded and hooked into
 * libcuda), as most users' UCX does: then UCX, not gdrx alone, writes
 * allocations into its memory-type cache and patches libcuda at
 * ucp_init.  Loads UCM's modules and installs UCX's CUDA hooks if UCP has
 * not yet (as UCP's first context does); libcuda must be loaded. */
int ut_ucx_has_cuda(void);

/* dlopen libuct_gdrx.so.0 (registration by constructors, as LD_PRELOAD). */
int ut_load_plugin(void);

/* CUnit suite init of the UCX suites: libcuda, dmabuf backend, plugin. */
int ut_suite_init(void);

/* Open gdrx (MD, worker, iface, ep to itself).  UCX_GDRX_* settings come
 * from the environment; counters go to u->stats.  0, or -1 after failing
 * the current test case (a message outside one). */
int ut_open(struct ut_uct *u);
/* The MD alone (nothing set up in it yet), same conventions. */
int ut_open_md(struct ut_uct *u);
/* Names this process's UCX_GDRX_STATS_DUMP file (gdrx-TAG-stats.PID, in
 * the case's scratch directory, else in /tmp and removed when the process
 * exits) in buf and sets the variable. */
void ut_stats_file(char *buf, size_t size, const char *tag);
/* Close everything; the counters are in u->stats afterwards. */
void ut_close(struct ut_uct *u);

ucs_status_t ut_reg(struct ut_uct *u, void *addr, size_t len,
                    struct ut_reg *r);
void ut_dereg(struct ut_uct *u, struct ut_reg *r);

/* fork(): the child exits at once; asserts that it did, with status 0.  A
 * fork that never returns is a case the harness kills. */
void ut_fork_child_exits(void);

/* uct_mem_alloc of CUDA memory through gdrx's MD alone. */
ucs_status_t ut_alloc(struct ut_uct *u, size_t len, uct_allocated_memory_t *mem);

/* The size classes of put and get. */
enum ut_op { UT_SHORT, UT_BCOPY, UT_ZCOPY };

/* One put / get of len bytes between buf and raddr by op; zcopy with one
 * iov whose memh is memh (short and bcopy ignore it). */
ucs_status_t ut_put_memh(struct ut_uct *u, enum ut_op op, void *buf,
                         uct_mem_h memh, size_t len, uint64_t raddr,
                         uct_rkey_t rkey);
ucs_status_t ut_get_memh(struct ut_uct *u, enum ut_op op, void *buf,
                         uct_mem_h memh, size_t len, uint64_t raddr,
                         uct_rkey_t rkey);
/* The same with a host buffer (no memh). */
ucs_status_t ut_put(struct ut_uct *u, enum ut_op op, void *buf, size_t len,
                    uint64_t raddr, uct_rkey_t rkey);
ucs_status_t ut_get(struct ut_uct *u, enum ut_op op, void *buf, size_t len,
                    uint64_t raddr, uct_rkey_t rkey);

/* Value of counter `name` on the stats line starting with `what` ("md",
 * "iface put_short", ...), summed over every line of the dump; -1 if absent. */
long ut_counter(const char *stats_file, const char *what, const char *name);

/* 1 if some line of the dump contains text. */
int ut_stats_has(const char *stats_file, const char *text);

#endif
