/*
 * free_paths.c - every way CUDA releases device memory, against a live
 * libgdrx pin of that memory, on a real GPU (the H200 of the device tool;
 * the simulated GPU's tests cover the paths the sim has).
 *
 * SPDX-License-Identifier: MIT
 *
 * For each path: pin and map the memory, copy through the mapping (0),
 * release the memory that way, then copy again.  A revoked pin returns
 * -ESTALE; "NOT REVOKED" means copies still reach whatever the memory
 * became.  The FREE events a subscriber saw are counted too.  Paths:
 *   free            cuMemFree
 *   refused-free    cuMemFree(base + 64 KiB): CUDA refuses, must revoke nothing
 *   free-async      cuMemFreeAsync, stream sync, cuMemPoolTrimTo(pool, 0)
 *   vmm             cuMemUnmap + cuMemRelease of cuMemCreate'd memory
 *   ctx-destroy     cuCtxDestroy of a context owning the allocation
 *   graph-free      a graph's free node (cuGraphAddMemFreeNode), launched:
 *                   not revoked (known limit), but the launch raises
 *                   GDRX_MEM_EVENT_GRAPH_LAUNCH, after which a cache's
 *                   buffer-id check (gdrx_mem_query) and gdrx_pin_query
 *                   must see the memory gone, and the address, allocated
 *                   again by a later launch, as another buffer
 *   ipc-close       cuIpcCloseMemHandle in a second process
 *   primary-reset   cuDevicePrimaryCtxReset (what cudaDeviceReset calls)
 *
 *   free_paths cost   what a check that catches every free costs per use of
 *                     a cached pin: ns per cuPointerGetAttribute(BUFFER_ID)
 *                     and per gdrx_pin_query (mean over 100,000, after
 *                     10,000 warm-up calls)
 * Exit status: the number of paths whose result is wrong (refused-free must
 * stay live, every other path must be revoked, except graph-free: a graph's
 * free node runs inside cuGraphLaunch, which no entry hook can tie to the
 * memory, so it is reported as the known limit it is).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "gdrx.h"
#include "gpu_vmm.h"

#define LEN (2u << 20)

static gdrx_t g;
static int frees_seen, launches_seen, wrong;

static void on_event(const struct gdrx_mem_event *ev, void *arg)
{
    (void)arg;
    __atomic_fetch_add(ev->type == GDRX_MEM_EVENT_FREE ? &frees_seen : &launches_seen, 1,
                       __ATOMIC_RELAXED);
}

struct probe {
    gdrx_pin_t pin;
    void      *cpu;
};

static int arm(struct probe *pr, CUdeviceptr p)
{
    uint64_t v = 0x1122334455667788ull;

    if (gdrx_pin(g, p, 4096, 0, &pr->pin) || gdrx_map(g, pr->pin, &pr->cpu))
        return -1;
    return gdrx_copy_to_mapping(pr->pin, pr->cpu, &v, sizeof(v));
}

/* After the release: report, and count a result other than expected. */
enum expect { REVOKED, LIVE, LIMIT };

static void verdict(const char *path, struct probe *pr, int before, enum expect expect)
{
    uint64_t v = 1;
    int rc = gdrx_copy_to_mapping(pr->pin, pr->cpu, &v, sizeof(v));
    int events = __atomic_load_n(&frees_seen, __ATOMIC_RELAXED) - before;
    int ok = expect == LIVE ? rc == 0 && events == 0 : rc == -ESTALE;

    printf("%-14s copy after: %-12s FREE events: %d   %s\n", path,
           rc == -ESTALE ? "-ESTALE" : rc == 0 ? "0 NOT REVOKED" : gdrx_strerror(rc), events,
           ok ? "ok" : expect == LIMIT ? "known limit" : "WRONG");
    wrong += !ok && expect != LIMIT;
    gdrx_unmap(g, pr->pin);
    gdrx_unpin(g, pr->pin);
}

/* A set-up call that must work, else the path is not run (and counts as
 * wrong): the function returns with `ret`. */
#define CK_OR(call, ret)                                                           \
    do {                                                                           \
        CUresult r_ = (call);                                                      \
        if (r_ != CUDA_SUCCESS) {                                                  \
            printf("%-14s %s failed (%d): not run\n", path, #call, (int)r_);        \
            wrong++;                                                               \
            return ret;                                                            \
        }                                                                          \
    } while (0)
#define CK(call) CK_OR(call, )

static void path_free(int refused)
{
    const char *path = refused ? "refused-free" : "free";
    struct probe pr;
    CUdeviceptr p;

    CK(cuMemAlloc(&p, LEN));
    CK(arm(&pr, p) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS);
    int before = frees_seen;
    if (refused) {
        CUresult r = cuMemFree(p + 65536);
        verdict(path, &pr, before, LIVE);
        if (r != CUDA_ERROR_INVALID_VALUE)
            printf("%-14s cuMemFree(base + 64 KiB) returned %d\n", path, (int)r);
        cuMemFree(p);
        return;
    }
    CK(cuMemFree(p));
    verdict(path, &pr, before, REVOKED);
}

static void path_free_async(void)
{
    const char *path = "free-async";
    CUmemoryPool pool;
    CUstream s;
    struct probe pr;
    CUdeviceptr p;

    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuDeviceGetDefaultMemPool(&pool, 0));
    CK(cuMemAllocAsync(&p, LEN, s));
    CK(cuStreamSynchronize(s));
    CK(arm(&pr, p) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS);
    int before = frees_seen;
    CK(cuMemFreeAsync(p, s));
    CK(cuStreamSynchronize(s));
    CK(cuMemPoolTrimTo(pool, 0));
    verdict(path, &pr, before, REVOKED);
    cuStreamDestroy(s);
}

static void path_vmm(void)
{
    const char *path = "vmm", *what = "";
    struct vmm m;
    struct probe pr;

    CUresult r = vmm_create(&m, LEN, &what);
    if (r != CUDA_SUCCESS) {
        printf("%-14s %s failed (%d): not run\n", path, what, (int)r);
        wrong++;
        return;
    }
    CK(arm(&pr, m.va) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS);
    int before = frees_seen;
    CK(cuMemUnmap(m.va, m.size));
    CK(cuMemRelease(m.h));
    verdict(path, &pr, before, REVOKED);
    cuMemAddressFree(m.va, m.size);
}

static void path_ctx_destroy(void)
{
    const char *path = "ctx-destroy";
    CUcontext prev = NULL, c;
    CUdevice dev;
    struct probe pr;
    CUdeviceptr p;

    CK(cuCtxGetCurrent(&prev));
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate(&c, NULL, 0, dev));
    CK(cuMemAlloc(&p, LEN));
    CK(arm(&pr, p) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS);
    int before = frees_seen;
    CK(cuCtxDestroy(c));
    CK(cuCtxSetCurrent(prev));
    verdict(path, &pr, before, REVOKED);
}

static void path_graph_free(void)
{
    const char *path = "graph-free";
    CUDA_MEM_ALLOC_NODE_PARAMS ap;
    CUgraph graph;
    CUgraphNode an, fn;
    CUgraphExec exec;
    CUstream s;
    struct probe pr;

    memset(&ap, 0, sizeof(ap));
    ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ap.poolProps.location.id = 0;
    ap.bytesize = LEN;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuGraphCreate(&graph, 0));
    CK(cuGraphAddMemAllocNode(&an, graph, NULL, 0, &ap));
    CK(cuGraphInstantiate(&exec, graph, 0));
    CK(cuGraphLaunch(exec, s));
    CK(cuStreamSynchronize(s));
    CK(arm(&pr, ap.dptr) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS);
    CUgraph fg;
    CUgraphExec fexec;
    CK(cuGraphCreate(&fg, 0));
    CK(cuGraphAddMemFreeNode(&fn, fg, NULL, 0, ap.dptr));
    CK(cuGraphInstantiate(&fexec, fg, 0));
    struct gdrx_mem_info mi;
    uint64_t id_before = gdrx_mem_query(ap.dptr, &mi) == 0 ? mi.buffer_id : 0;
    int before = frees_seen, launches = launches_seen;
    CK(cuGraphLaunch(fexec, s));
    CK(cuStreamSynchronize(s));
    int launch_events = launches_seen - launches;
    /* What a cache re-checks after GRAPH_LAUNCH: gone, or another buffer. */
    int qrc = gdrx_mem_query(ap.dptr, &mi);
    struct gdrx_pin_info pi;
    int prc = gdrx_pin_query(g, pr.pin, &pi);
    int caught = (qrc != 0 || mi.buffer_id != id_before) && prc == 0 && pi.stale;
    printf("%-14s GRAPH_LAUNCH events: %d; after it: gdrx_mem_query %s, gdrx_pin_query "
           "stale %d   %s\n", path, launch_events,
           qrc ? gdrx_strerror(qrc) : mi.buffer_id != id_before ? "another buffer id" : "same buffer",
           prc == 0 ? pi.stale : -1, launch_events == 1 && caught ? "ok" : "WRONG");
    wrong += !(launch_events == 1 && caught);
    /* Allocated again by the first graph: the cached id must not match. */
    CK(cuGraphLaunch(exec, s));
    CK(cuStreamSynchronize(s));
    qrc = gdrx_mem_query(ap.dptr, &mi);
    printf("%-14s relaunched alloc: address %s, buffer id %s   %s\n", path,
           qrc ? "not allocated again" : "allocated again",
           qrc ? "-" : mi.buffer_id != id_before ? "differs" : "SAME",
           qrc || mi.buffer_id != id_before ? "ok" : "WRONG");
    wrong += !(qrc || mi.buffer_id != id_before);
    CK(cuDeviceGraphMemTrim(0));
    verdict(path, &pr, before, LIMIT);
    cuGraphExecDestroy(fexec);
    cuGraphExecDestroy(exec);
    cuStreamDestroy(s);
}

/* The child: open the parent's allocation, pin it, close it. */
static int ipc_child(const char *hex)
{
    const char *path = "ipc-close";
    CUipcMemHandle h;
    CUcontext c;
    CUdeviceptr p;
    struct probe pr;
    gdrx_mem_sub_t sub;

    for (size_t i = 0; i < sizeof(h.reserved); i++)
        sscanf(hex + 2 * i, "%2hhx", (unsigned char *)&h.reserved[i]);
    if (cuInit(0) || cuDevicePrimaryCtxRetain(&c, 0) || cuCtxSetCurrent(c) || gdrx_open(NULL, &g) ||
        gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE, on_event, NULL, &sub))
        return 100;
    if (cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) || arm(&pr, p))
        return 101;
    int before = frees_seen;
    if (cuIpcCloseMemHandle(p))
        return 102;
    verdict(path, &pr, before, REVOKED);
    return wrong;
}

static void path_ipc_close(void)
{
    const char *path = "ipc-close";
    CUipcMemHandle h;
    CUdeviceptr p;
    char hex[2 * sizeof(h.reserved) + 1];

    CK(cuMemAlloc(&p, LEN));
    CK(cuIpcGetMemHandle(&h, p));
    for (size_t i = 0; i < sizeof(h.reserved); i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)h.reserved[i]);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "free_paths", "ipc-child", hex, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) {
        printf("%-14s child status %#x\n", path, st);
        wrong++;
    }
    cuMemFree(p);
}

static void path_primary_reset(void)
{
    const char *path = "primary-reset";
    struct probe pr;
    CUdeviceptr p;

    CK(cuMemAlloc(&p, LEN));
    CK(arm(&pr, p) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS);
    int before = frees_seen;
    CK(cuDevicePrimaryCtxReset(0));
    verdict(path, &pr, before, REVOKED);
}

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int check_cost(void)
{
    const char *path = "cost";
    unsigned long long id = 0;
    struct gdrx_pin_info info;
    struct probe pr;
    CUdeviceptr p;
    const int n = 100000;

    CK_OR(cuMemAlloc(&p, LEN), 1);
    CK_OR(arm(&pr, p) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS, 1);
    for (int i = 0; i < 10000; i++)
        cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p);
    double t0 = now_ns();
    for (int i = 0; i < n; i++)
        cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p + 64);
    double t1 = now_ns();
    for (int i = 0; i < 10000; i++)
        gdrx_pin_query(g, pr.pin, &info);
    double t2 = now_ns();
    for (int i = 0; i < n; i++)
        gdrx_pin_query(g, pr.pin, &info);
    double t3 = now_ns();
    printf("cuPointerGetAttribute(BUFFER_ID): %.0f ns; gdrx_pin_query: %.0f ns\n",
           (t1 - t0) / n, (t3 - t2) / n);
    gdrx_unmap(g, pr.pin);
    gdrx_unpin(g, pr.pin);
    cuMemFree(p);
    return 0;
}

int main(int argc, char **argv)
{
    gdrx_mem_sub_t sub;
    CUcontext c;

    if (argc == 3 && strcmp(argv[1], "ipc-child") == 0)
        return ipc_child(argv[2]);
    if (cuInit(0) || cuDevicePrimaryCtxRetain(&c, 0) || cuCtxSetCurrent(c)) {
        printf("no GPU: not run\n");
        return 3;
    }
    int rc = gdrx_open(NULL, &g);
    if (rc || gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE | GDRX_MEM_EVENT_GRAPH_LAUNCH,
                                        on_event, NULL, &sub)) {
        printf("gdrx_open: %s: not run\n", gdrx_strerror(rc));
        return 3;
    }
    if (argc == 2 && strcmp(argv[1], "cost") == 0)
        return check_cost();
    path_free(0);
    path_free(1);
    path_free_async();
    path_vmm();
    path_ctx_destroy();
    path_graph_free();
    path_ipc_close();
    path_primary_reset(); /* last: the primary context's memory all goes */
    printf("%d path(s) wrong\n", wrong);
    return wrong;
}
