/*
 * graph_mem.c - which memory a graph launch may free unseen (graph_mem.h).
 *
 * SPDX-License-Identifier: MIT
 *
 * CUDA frees a graph allocation in a launch only where it was made by an
 * allocation node: cuGraphAddMemFreeNode refuses every other address, and
 * AUTO_FREE_ON_LAUNCH frees the graph's own allocations (cuda.h).  Memory
 * of cuMemAlloc is never one.  CUDA has no attribute that names a graph
 * allocation; what it has is CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
 * 1 only for memory of cuMemAlloc (cuIpcGetMemHandle takes nothing else).
 * So everything else is taken for possibly launch-bound: graph memory, and
 * with it memory pools' (cuMemAllocAsync) and VMM mappings, which launches
 * cannot free but which CUDA does not tell apart from graph memory by any
 * attribute we could rely on without the hardware's word.  The cost is
 * theirs: such pins go at the next graph launch of the process (a process
 * that launches no graph pays nothing), never a mapping of another
 * allocation's pages.
 */
#include "graph_mem.h"

#include <errno.h>
#include <string.h>

#include "free_hook.h"
#include "log.h"
#ifdef GDRX_HAVE_FREE_HOOKS
#include "hooks/cuda_hooks.h"
#endif

int gdrx_graph_mem_launch_bound(const struct gdrx_cuda *cu, CUdeviceptr dptr)
{
    int legacy = 0;
    CUresult res = cu->PointerGetAttribute(&legacy, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                                           dptr);

    if (res == CUDA_ERROR_INVALID_VALUE)
        return 1; /* a driver that cannot say: the safe side */
    if (res != CUDA_SUCCESS)
        return gdrx_cuda_errno(res);
    return legacy != 1;
}

/* Whether every cuGraphLaunch entry this libcuda has is hooked: the
 * exported ones that exist (-ENOENT: not in this libcuda) must be. */
static int launch_hooks_installed(void)
{
#ifdef GDRX_HAVE_FREE_HOOKS
    const char *name;
    int rc, seen = 0;

    if (gdrx_free_hook_enable() != 0)
        return 0;
    for (size_t i = 0; gdrx_cuda_hooks_entry(i, &name, &rc) == 0; i++) {
        if (strncmp(name, "cuGraphLaunch", 13) != 0 || rc == -ENOENT)
            continue;
        if (rc != 0)
            return 0;
        seen = 1;
    }
    return seen;
#else
    return 0;
#endif
}

int gdrx_graph_mem_launches_seen(void)
{
    static int told;

    if (launch_hooks_installed())
        return 0;
    if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
        gdrx_err("memory that is not cuMemAlloc's (a CUDA graph allocation, or memory CUDA "
                 "cannot tell from one: pools, VMM) is refused (-EOPNOTSUPP): without the CUDA "
                 "hooks on cuGraphLaunch (GDRX_FREE_HOOKS=0, not x86-64, or a patch refused) "
                 "a graph launch could free it unseen and a mapping would reach the next "
                 "owner's memory; copy through CUDA instead (docs/free-interception.md)");
    return -EOPNOTSUPP;
}
