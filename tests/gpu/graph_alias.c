/*
 * graph_alias.c - CUDA graph memory handed to another allocation while a
 * libgdrx pin of it still exists, on a real GPU (issue 43, defect 6; the
 * simulated GPU's test is tests/libgdr/test_graph_mem.c).
 *
 * SPDX-License-Identifier: MIT
 *
 *   graph_alias [-s SEED] [-n ITERS] [-c CASE] [-o]
 *
 * -o: the backend is optional here (concurrency.sh's dmabuf run): if
 * gdrx_open or the first pin fails, the result is SKIP, not FAIL.
 *
 * Each iteration (sizes, offsets and patterns drawn from SEED, printed):
 * graph A allocates (one mem-alloc node), the allocation is pinned and
 * mapped, through gdrx_pin/gdrx_map or, every other iteration,
 * libgdrapi.so.2's gdr_pin_buffer/gdr_map (dlopened; skipped when absent),
 * and written through the mapping.  Graph F frees it (a free node), then
 *   1. A is launched again: same address, and on the H100 the same pages
 *      (issue 43 saw a write through the old pin land there);
 *   2. F again, then graph B allocates at another address, maybe on A's
 *      pages.
 * After each, the new allocation is filled through cuMemcpyHtoD, every
 * copy through the old pin (to and from the mapping) must return an error,
 * a raw load through the old CPU pointer must fault, and every byte of
 * the new allocation must still be what CUDA wrote.  A fresh pin of the
 * relaunched A must read its new bytes.  "reused" counts the new
 * allocations whose bytes were the old one's before the fill: evidence
 * that the pages really were handed on (else the iteration proves less).
 *
 * Exit 0 and "RESULT <case> PASS" if no old-pin copy returned 0, no raw
 * load got through, no byte changed and every set-up step worked.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "gdrapi.h"
#include "gdrx.h"
#include "gpu_conc.h"
#include "gpu_pattern.h"

#define PAGE64K   (64u * 1024u)
#define MAX_PAGES 128u /* graph allocations up to 8 MiB */
#define STEP_S    60u  /* one iteration: a few launches and copies */

/* libgdrapi.so.2, looked up at run time: a build without it still runs the
 * gdrx half.  It links the same libgdrx.so.0 as this program. */
static struct {
    gdr_t (*open)(void);
    int (*close)(gdr_t);
    int (*pin)(gdr_t, unsigned long, size_t, uint64_t, uint32_t, gdr_mh_t *);
    int (*unpin)(gdr_t, gdr_mh_t);
    int (*map)(gdr_t, gdr_mh_t, void **, size_t);
    int (*unmap)(gdr_t, gdr_mh_t, void *, size_t);
    int (*to)(gdr_mh_t, void *, const void *, size_t);
    int (*from)(gdr_mh_t, void *, const void *, size_t);
    gdr_t g;
} ga;

static gdrx_t g;
static CUstream stream;
static long pins_made, first_pin_refused;
static unsigned char *hbuf, *hbuf2; /* MAX_PAGES * 64 KiB each */

static struct {
    long iters, attacks, attack_ok, raw_loads, raw_through, bad_bytes, setup, reused_same,
        reused_other, gdrapi_iters, fresh_bad;
} st;

/* ---------------------------------------------------- one pin, either API */

struct gpin {
    int           api;  /* 0: gdrx, 1: gdrapi */
    gdrx_pin_t    pin;
    gdr_mh_t      mh;
    void         *map;  /* what gdrx_map / gdr_map returned */
    size_t        maplen;
    unsigned char *cpu; /* CPU address of the window's first byte */
    size_t        len;  /* the window: the bytes the copies use */
};

/* Pins the window [off, off+len) of the allocation at base (size bytes,
 * 64 KiB aligned).  gdrapi pins and maps the whole allocation, as
 * gdrcopy's callers do; gdrx just the window. */
static int gpin_make(struct gpin *p, int api, CUdeviceptr base, size_t size, size_t off,
                     size_t len)
{
    memset(p, 0, sizeof(*p));
    p->api = api;
    p->len = len;
    if (api == 0) {
        int rc = gdrx_pin(g, base + off, len, 0, &p->pin);
        if (rc == 0 && (rc = gdrx_map(g, p->pin, &p->map)) != 0)
            gdrx_unpin(g, p->pin);
        if (rc) {
            fprintf(stderr, "gdrx_pin/map of a graph allocation: %s\n", gdrx_strerror(rc));
            first_pin_refused += pins_made == 0;
            return -1;
        }
        p->cpu = p->map;
        pins_made++;
        return 0;
    }
    int rc = ga.pin(ga.g, base, size, 0, 0, &p->mh);
    if (rc == 0 && (rc = ga.map(ga.g, p->mh, &p->map, size)) != 0)
        ga.unpin(ga.g, p->mh);
    if (rc) {
        fprintf(stderr, "gdr_pin_buffer/gdr_map of a graph allocation: %d\n", rc);
        first_pin_refused += pins_made == 0;
        return -1;
    }
    pins_made++;
    p->maplen = size;
    p->cpu = (unsigned char *)p->map + off;
    return 0;
}

static int gpin_to(struct gpin *p, const void *src)
{
    return p->api ? ga.to(p->mh, p->cpu, src, p->len)
                  : gdrx_copy_to_mapping(p->pin, p->cpu, src, p->len);
}

static int gpin_from(struct gpin *p, void *dst)
{
    return p->api ? ga.from(p->mh, dst, p->cpu, p->len)
                  : gdrx_copy_from_mapping(p->pin, dst, p->cpu, p->len);
}

/* Unmap and unpin; on a revoked pin too (what an application does once it
 * learns the memory went). */
static int gpin_drop(struct gpin *p)
{
    if (p->api)
        return ga.unmap(ga.g, p->mh, p->map, p->maplen) | ga.unpin(ga.g, p->mh);
    return gdrx_unmap(g, p->pin) | gdrx_unpin(g, p->pin);
}

/* ------------------------------------------------ raw loads that must fault */

static sigjmp_buf raw_env;

static void on_fault(int sig)
{
    siglongjmp(raw_env, sig);
}

/* A load through the old CPU pointer: the revoked mapping must fault
 * (SIGBUS; SIGSEGV where no memfd can be made).  Only a load: a store
 * that got through would itself corrupt the new owner. */
static void raw_load(struct gpin *p, size_t at)
{
    struct sigaction sa = { .sa_handler = on_fault }, obus, osegv;
    volatile unsigned char *q = p->cpu + at;
    int sig;

    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &obus);
    sigaction(SIGSEGV, &sa, &osegv);
    st.raw_loads++;
    if ((sig = sigsetjmp(raw_env, 1)) == 0) {
        (void)*q;
        st.raw_through++;
        printf("  raw load through the old pointer (+%zu) did not fault\n", at);
    }
    sigaction(SIGBUS, &obus, NULL);
    sigaction(SIGSEGV, &osegv, NULL);
}

/* Every access the old pin offers, after its memory went to another
 * allocation: each copy must fail, the raw load must fault. */
static void attack(struct gpin *old, uint64_t *rs, const char *when)
{
    int to, from;

    memset(hbuf, 0xa5, old->len);
    to = gpin_to(old, hbuf);
    from = gpin_from(old, hbuf2);
    st.attacks += 2;
    st.attack_ok += (to == 0) + (from == 0);
    if (to == 0 || from == 0)
        printf("  %s: a copy through the old %s pin returned 0 (to %d, from %d)\n", when,
               old->api ? "gdrapi" : "gdrx", to, from);
    raw_load(old, gp_rnd(rs) % old->len);
}

/* ------------------------------------------------------------ the graphs */

static int alloc_graph(size_t size, CUgraph *gr, CUgraphExec *ex, CUdeviceptr *dptr)
{
    CUDA_MEM_ALLOC_NODE_PARAMS p;
    CUgraphNode n;

    memset(&p, 0, sizeof(p));
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = 0;
    p.bytesize = size;
    if (GC_CU(cuGraphCreate(gr, 0)) || GC_CU(cuGraphAddMemAllocNode(&n, *gr, NULL, 0, &p)) ||
        GC_CU(cuGraphInstantiateWithFlags(ex, *gr, 0)))
        return -1;
    *dptr = p.dptr;
    return 0;
}

static int free_graph(CUdeviceptr dptr, CUgraph *gr, CUgraphExec *ex)
{
    CUgraphNode n;

    if (GC_CU(cuGraphCreate(gr, 0)) || GC_CU(cuGraphAddMemFreeNode(&n, *gr, NULL, 0, dptr)) ||
        GC_CU(cuGraphInstantiateWithFlags(ex, *gr, 0)))
        return -1;
    return 0;
}

static int launch(CUgraphExec ex)
{
    return GC_CU(cuGraphLaunch(ex, stream)) || GC_CU(cuStreamSynchronize(stream)) ? -1 : 0;
}

/* The new allocation at p (size bytes): were its window's bytes the old
 * ones (pattern old_seed, so the pages were handed on)?  Then fill all of
 * it with pattern seed through CUDA and synchronise (graph memory, like
 * pool memory, ignores SYNC_MEMOPS: docs/semantics.md, "Ordering"). */
static int reuse_and_fill(CUdeviceptr p, size_t size, size_t off, size_t len,
                          uint32_t old_seed, uint32_t seed, long *reused)
{
    if (GC_CU(cuMemcpyDtoH(hbuf, p + off, len)))
        return -1;
    *reused += gp_count_bad(hbuf, len, off, old_seed) < len / 10;
    gp_fill(hbuf, size, 0, seed);
    return GC_CU(cuMemcpyHtoD(p, hbuf, size)) || GC_CU(cuCtxSynchronize()) ? -1 : 0;
}

/* Every byte of the allocation at p still pattern seed. */
static void verify(CUdeviceptr p, size_t size, uint32_t seed, const char *what)
{
    if (GC_CU(cuMemcpyDtoH(hbuf, p, size))) {
        st.setup++;
        return;
    }
    uint64_t bad = gp_count_bad(hbuf, size, 0, seed);
    if (bad)
        printf("  %s: %llu of %zu bytes changed\n", what, (unsigned long long)bad, size);
    st.bad_bytes += (long)bad;
}

static int iteration(int it, uint64_t *rs)
{
    size_t sa = PAGE64K * (1 + gp_rnd(rs) % MAX_PAGES);
    size_t sb = gp_rnd(rs) % 2 ? sa : PAGE64K * (1 + gp_rnd(rs) % MAX_PAGES);
    size_t off = gp_rnd(rs) % (sa / 2), len = 1 + gp_rnd(rs) % (sa - off);
    uint32_t s_old = (uint32_t)gp_rnd(rs) | 1, s_a2 = s_old + 2, s_b = s_old + 4;
    int api = ga.g && it % 2;
    CUgraph gA, gF, gB, gFB;
    CUgraphExec eA, eF, eB, eFB;
    CUdeviceptr a, b;
    struct gpin old, fresh;

    printf("iter %d: %s, A %zu B, B %zu B, window +%zu %zu B\n", it, api ? "gdrapi" : "gdrx",
           sa, sb, off, len);
    gc_watch(STEP_S, "graph iteration %d", it);
    if (alloc_graph(sa, &gA, &eA, &a) || alloc_graph(sb, &gB, &eB, &b) ||
        free_graph(a, &gF, &eF) || free_graph(b, &gFB, &eFB) || launch(eA))
        return -1;
    if (a % PAGE64K) {
        fprintf(stderr, "graph allocation at %#llx: not 64 KiB aligned\n", (unsigned long long)a);
        return -1;
    }
    /* The old owner: CUDA's bytes, then the window written through the pin. */
    gp_fill(hbuf, sa, 0, s_old ^ 0x5a5a);
    if (GC_CU(cuMemcpyHtoD(a, hbuf, sa)) || GC_CU(cuCtxSynchronize()) ||
        gpin_make(&old, api, a, sa, off, len))
        return -1;
    gp_fill(hbuf, len, off, s_old);
    if (gpin_to(&old, hbuf) || GC_CU(cuMemcpyDtoH(hbuf2, a + off, len)) ||
        gp_count_bad(hbuf2, len, off, s_old)) {
        fprintf(stderr, "writing through a live pin of graph memory failed\n");
        return -1;
    }
    st.gdrapi_iters += api;

    /* 1. the free node, then the same graph again: same address. */
    if (launch(eF))
        return -1;
    attack(&old, rs, "after the free node");
    if (launch(eA) || reuse_and_fill(a, sa, off, len, s_old, s_a2, &st.reused_same))
        return -1;
    attack(&old, rs, "A relaunched");
    verify(a, sa, s_a2, "A relaunched");
    /* A pin made now maps the new allocation. */
    if (gpin_make(&fresh, api, a, sa, off, len) || gpin_from(&fresh, hbuf2))
        return -1;
    st.fresh_bad += gp_count_bad(hbuf2, len, off, s_a2) != 0;
    gpin_drop(&fresh);

    /* 2. freed again; another graph's node, at another address. */
    size_t boff = off < sb ? off : 0, blen = len < sb - boff ? len : sb - boff;
    if (launch(eF) || launch(eB) || reuse_and_fill(b, sb, boff, blen, s_a2, s_b, &st.reused_other))
        return -1;
    attack(&old, rs, "B allocated");
    verify(b, sb, s_b, "B at another address");
    if (gpin_drop(&old))
        printf("  unmap/unpin of the revoked pin failed\n");
    if (launch(eFB))
        return -1;
    cuGraphExecDestroy(eA);
    cuGraphExecDestroy(eF);
    cuGraphExecDestroy(eB);
    cuGraphExecDestroy(eFB);
    cuGraphDestroy(gA);
    cuGraphDestroy(gF);
    cuGraphDestroy(gB);
    cuGraphDestroy(gFB);
    gc_watch(0, NULL);
    st.iters++;
    return 0;
}

static void load_gdrapi(void)
{
    void *h = dlopen("libgdrapi.so.2", RTLD_NOW);

    if (!h) {
        printf("libgdrapi.so.2 not loaded (%s): gdrx only\n", dlerror());
        return;
    }
    *(void **)&ga.open = dlsym(h, "gdr_open");
    *(void **)&ga.close = dlsym(h, "gdr_close");
    *(void **)&ga.pin = dlsym(h, "gdr_pin_buffer");
    *(void **)&ga.unpin = dlsym(h, "gdr_unpin_buffer");
    *(void **)&ga.map = dlsym(h, "gdr_map");
    *(void **)&ga.unmap = dlsym(h, "gdr_unmap");
    *(void **)&ga.to = dlsym(h, "gdr_copy_to_mapping");
    *(void **)&ga.from = dlsym(h, "gdr_copy_from_mapping");
    if (ga.open && ga.close && ga.pin && ga.unpin && ga.map && ga.unmap && ga.to && ga.from)
        ga.g = ga.open();
    if (!ga.g)
        printf("libgdrapi.so.2: gdr_open failed: gdrx only\n");
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    int iters = 16, opt, optional = 0;
    CUcontext ctx;

    gc_case = "graph";
    while ((opt = getopt(argc, argv, "s:n:c:o")) != -1) {
        if (opt == 's')
            seed = strtoull(optarg, NULL, 0);
        else if (opt == 'n')
            iters = atoi(optarg);
        else if (opt == 'c')
            gc_case = optarg;
        else if (opt == 'o')
            optional = 1;
        else
            return fprintf(stderr, "usage: graph_alias [-s SEED] [-n ITERS] [-c CASE] [-o]\n"), 2;
    }
    uint64_t rs = seed ? seed : 1;
    setvbuf(stdout, NULL, _IOLBF, 0);
    hbuf = malloc((size_t)MAX_PAGES * PAGE64K);
    hbuf2 = malloc((size_t)MAX_PAGES * PAGE64K);
    if (!hbuf || !hbuf2 || GC_CU(cuInit(0)) || GC_CU(cuDevicePrimaryCtxRetain(&ctx, 0)) ||
        GC_CU(cuCtxSetCurrent(ctx)) || GC_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING))) {
        printf("RESULT %s FAIL setup=cuda\n", gc_case);
        return 1;
    }
    int rc = gdrx_open(NULL, &g);
    if (rc) {
        printf("RESULT %s %s setup=\"gdrx_open: %s\"\n", gc_case, optional ? "SKIP" : "FAIL",
               gdrx_strerror(rc));
        return !optional;
    }
    uint64_t backend = 0;
    gdrx_get_attr(g, GDRX_ATTR_BACKEND, &backend);
    load_gdrapi();
    printf("graph_alias: seed %llu, %d iterations, backend %s\n", (unsigned long long)seed, iters,
           gdrx_backend_name((gdrx_backend_t)backend));
    for (int i = 0; i < iters; i++)
        if (iteration(i, &rs)) {
            st.setup++;
            gc_watch(0, NULL);
            printf("  iteration %d: set-up failed, stopping\n", i);
            break;
        }
    if (optional && first_pin_refused && st.iters == 0) {
        printf("RESULT %s SKIP setup=\"this backend refused to pin graph memory\"\n", gc_case);
        return 0;
    }
    int pass = st.setup == 0 && st.attack_ok == 0 && st.raw_through == 0 && st.bad_bytes == 0 &&
               st.fresh_bad == 0 && st.iters == iters;
    printf("RESULT %s %s seed=%llu backend=%s iters=%ld gdrapi_iters=%ld old_pin_copies=%ld "
           "returned_0=%ld raw_loads=%ld not_faulted=%ld bytes_changed=%ld fresh_pin_bad=%ld "
           "pages_reused_same_addr=%ld pages_reused_other_addr=%ld setup_errors=%ld\n",
           gc_case, pass ? "PASS" : "FAIL", (unsigned long long)seed,
           gdrx_backend_name((gdrx_backend_t)backend), st.iters, st.gdrapi_iters, st.attacks,
           st.attack_ok, st.raw_loads, st.raw_through, st.bad_bytes, st.fresh_bad, st.reused_same,
           st.reused_other, st.setup);
    if (ga.g)
        ga.close(ga.g);
    gdrx_close(g);
    return pass ? 0 : 1;
}
