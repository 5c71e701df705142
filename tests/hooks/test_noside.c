/*
 * test_noside.c - loading libgdrx changes nothing in the process: every
 * GOT slot of every object and libcuda's code stay as they were, dlsym
 * and dlopen keep the loader's own answers.  This program links neither
 * libgdrx nor libcuda, so each case decides what is loaded and when.
 *
 * SPDX-License-Identifier: MIT
 */
#include "test_hooks.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "gdrx.h"
#include "got_elf.h"

#define MAX_SLOTS (1 << 16)

struct slot_rec {
    void **slot;
    void  *val;
    void  *self_lo, *self_hi; /* the object's extent: lazy stubs point there */
};

struct snapshot {
    struct slot_rec *rec;
    size_t n;
    uint8_t *text;  /* a copy of libcuda's executable segment */
    size_t text_len;
    const uint8_t *text_at;
};

static void *cur_lo, *cur_hi;

static void visit(void **slot, const char *name, void *arg)
{
    struct snapshot *s = arg;

    (void)name;
    if (s->n < MAX_SLOTS)
        s->rec[s->n++] = (struct slot_rec){ slot, *slot, cur_lo, cur_hi };
}

static int walk(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct snapshot *s = arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;

    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        lo = a < lo ? a : lo;
        hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
        if ((ph->p_flags & PF_X) && strstr(info->dlpi_name, "libcuda.so")) {
            s->text_at = (const uint8_t *)a;
            s->text_len = ph->p_memsz;
        }
    }
    cur_lo = (void *)lo;
    cur_hi = (void *)hi;
    gdrx_got_elf_walk(info, visit, s);
    return 0;
}

static void take(struct snapshot *s)
{
    memset(s, 0, sizeof(*s));
    s->rec = calloc(MAX_SLOTS, sizeof(*s->rec));
    CU_ASSERT_PTR_NOT_NULL_FATAL(s->rec);
    dl_iterate_phdr(walk, s);
    CU_ASSERT_FATAL(s->n > 0 && s->n < MAX_SLOTS);
    if (s->text_at) {
        s->text = malloc(s->text_len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s->text);
        memcpy(s->text, s->text_at, s->text_len);
    }
}

/* Slots that changed between a and b, except lazy-binding stubs the loader
 * resolved meanwhile to something outside libgdrx. */
static int changed_slots(const struct snapshot *a, const struct snapshot *b)
{
    int changed = 0;

    for (size_t i = 0, j = 0; i < a->n; i++) {
        const struct slot_rec *o = &a->rec[i];
        while (j < b->n && b->rec[j].slot != o->slot)
            j++;
        if (j == b->n) {
            j = 0;
            continue;
        }
        void *now = b->rec[j].val;
        if (now == o->val)
            continue;
        Dl_info di;
        int lazy = o->val >= o->self_lo && o->val < o->self_hi;
        int ours = dladdr(now, &di) && di.dli_fname && strstr(di.dli_fname, "libgdrx");
        if (!lazy || ours) {
            fprintf(stderr, "GOT slot %p changed: %p -> %p (%s)\n", (void *)o->slot, o->val, now,
                    ours ? "libgdrx" : "other");
            changed++;
        }
    }
    return changed;
}

static int text_changed(const struct snapshot *s)
{
    return s->text && memcmp(s->text, s->text_at, s->text_len) != 0;
}

static void no_op(const struct gdrx_mem_event *ev, void *arg)
{
    (void)ev; (void)arg;
}

static void *load_libcuda(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);

    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    return h;
}

/* Load `file` from `dir` with libcuda present: nothing changes.  Then
 * subscribe (the positive control): libcuda's code changes, no GOT slot. */
static void loaded_changes_nothing(const char *dir, const char *file)
{
    struct snapshot before, after, subscribed;
    gdrx_mem_sub_t sub;

    load_libcuda();
    take(&before);
    CU_ASSERT_PTR_NOT_NULL_FATAL(before.text);
    void *h = hooks_dlopen(dir, file, RTLD_NOW | RTLD_LOCAL);
    take(&after);
    CU_ASSERT_EQUAL(changed_slots(&before, &after), 0);
    CU_ASSERT_FALSE(text_changed(&before));

    void *g = dlopen("libgdrx.so.0", RTLD_NOW | RTLD_NOLOAD);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    int (*subscribe)(uint32_t, gdrx_mem_event_cb_t, void *, gdrx_mem_sub_t *) =
        (int (*)(uint32_t, gdrx_mem_event_cb_t, void *, gdrx_mem_sub_t *))dlsym(g, "gdrx_mem_events_subscribe");
    CU_ASSERT_PTR_NOT_NULL_FATAL(subscribe);
    CU_ASSERT_EQUAL(subscribe(GDRX_MEM_EVENT_FREE, no_op, NULL, &sub), 0);
    CU_ASSERT_TRUE(text_changed(&before));
    take(&subscribed);
    CU_ASSERT_EQUAL(changed_slots(&before, &subscribed), 0);
    (void)h;
}

static void test_dlopen_libgdrx(void)
{
    loaded_changes_nothing("libgdr", "libgdrx.so.0");
}

static void test_library_linking_libgdrx(void)
{
    loaded_changes_nothing("tests/hooks", "libhooks_linked.so");
}

/* No libcuda in the process: queries and subscriptions never load it. */
static void test_no_libcuda_stays_without(void)
{
    struct gdrx_mem_info info;
    gdrx_mem_sub_t sub;
    void *g = hooks_dlopen("libgdr", "libgdrx.so.0", RTLD_NOW | RTLD_LOCAL);
    int (*query)(uint64_t, struct gdrx_mem_info *) =
        (int (*)(uint64_t, struct gdrx_mem_info *))dlsym(g, "gdrx_mem_query");
    int (*subscribe)(uint32_t, gdrx_mem_event_cb_t, void *, gdrx_mem_sub_t *) =
        (int (*)(uint32_t, gdrx_mem_event_cb_t, void *, gdrx_mem_sub_t *))dlsym(g, "gdrx_mem_events_subscribe");

    CU_ASSERT_FATAL(query && subscribe);
    CU_ASSERT_EQUAL(query(0x10000, &info), -ENODEV);
    CU_ASSERT_EQUAL(subscribe(GDRX_MEM_EVENT_FREE, no_op, NULL, &sub), 0);
    CU_ASSERT_PTR_NULL(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD));
}

static void count_alloc(const struct gdrx_mem_event *ev, void *arg)
{
    if (ev->type == GDRX_MEM_EVENT_ALLOC)
        ++*(int *)arg;
}

/* A subscription made before libcuda is loaded gets events from the next
 * gdrx_open on (which loads it), with no pin in between: the UCX transport
 * subscribes at MPI_Init, opens, and the application allocates its buffers
 * before the first message; UCX on a CUDA-less build learns they are GPU
 * memory only from these events (the H200 run that crashed without it). */
static void test_subscribed_before_libcuda(void)
{
    gdrx_mem_sub_t sub;
    gdrx_t ctx;
    int allocs = 0;
    void *g = hooks_dlopen("libgdr", "libgdrx.so.0", RTLD_NOW | RTLD_LOCAL);
    int (*subscribe)(uint32_t, gdrx_mem_event_cb_t, void *, gdrx_mem_sub_t *) =
        (int (*)(uint32_t, gdrx_mem_event_cb_t, void *, gdrx_mem_sub_t *))dlsym(g, "gdrx_mem_events_subscribe");
    int (*open_ctx)(const struct gdrx_open_params *, gdrx_t *) =
        (int (*)(const struct gdrx_open_params *, gdrx_t *))dlsym(g, "gdrx_open");

    CU_ASSERT_FATAL(subscribe && open_ctx);
    CU_ASSERT_PTR_NULL_FATAL(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD));
    CU_ASSERT_EQUAL_FATAL(subscribe(GDRX_MEM_EVENT_ALLOC, count_alloc, &allocs, &sub), 0);
    CU_ASSERT_EQUAL_FATAL(open_ctx(NULL, &ctx), 0); /* loads libcuda */
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cuda);
    CUresult (*retain)(CUcontext *, CUdevice) =
        (CUresult (*)(CUcontext *, CUdevice))dlsym(cuda, "cuDevicePrimaryCtxRetain");
    CUresult (*set_current)(CUcontext) = (CUresult (*)(CUcontext))dlsym(cuda, "cuCtxSetCurrent");
    CUresult (*mem_alloc)(CUdeviceptr *, size_t) =
        (CUresult (*)(CUdeviceptr *, size_t))dlsym(cuda, "cuMemAlloc_v2");
    CUcontext c;
    CUdeviceptr p;
    CU_ASSERT_FATAL(retain && set_current && mem_alloc);
    CU_ASSERT_EQUAL_FATAL(retain(&c, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(set_current(c), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(mem_alloc(&p, 4096), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(allocs, 1);
}

/* gdrx_probe, gdrx_open and gdrx_open_params_init of the loaded libgdrx g. */
struct gdrx_entry_points {
    int (*probe)(const struct gdrx_open_params *, gdrx_backend_t *);
    int (*open_ctx)(const struct gdrx_open_params *, gdrx_t *);
    void (*params_init)(struct gdrx_open_params *);
};

static struct gdrx_entry_points entry_points(void *g)
{
    struct gdrx_entry_points gx;

    *(void **)&gx.probe = dlsym(g, "gdrx_probe");
    *(void **)&gx.open_ctx = dlsym(g, "gdrx_open");
    *(void **)&gx.params_init = dlsym(g, "gdrx_open_params_init");
    CU_ASSERT_FATAL(gx.probe && gx.open_ctx && gx.params_init);
    return gx;
}

/* Fork handlers libgdrx registered (others': the simulated libcuda's):
 * glibc's pthread_atfork, a stub linked into each caller, calls
 * __register_atfork with the caller's DSO handle; this executable exports
 * (-rdynamic) and so interposes it. */
static int atfork_calls;

int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
                      void *dso);
int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
                      void *dso)
{
    static int (*real)(void (*)(void), void (*)(void), void (*)(void), void *);

    Dl_info di;

    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "__register_atfork");
    if (dladdr(dso, &di) && di.dli_fname && strstr(di.dli_fname, "libgdrx"))
        atfork_calls++;
    return real ? real(prepare, parent, child, dso) : ENOSYS;
}

/* gdrx_probe names the backend gdrx_open would use and changes nothing (the
 * UCX plugin lists its resource with it); gdrx_open then installs its fork
 * handlers, and a subscription the hooks: the positive controls.  Bad
 * parameters: -EINVAL. */
static void test_probe_changes_nothing(void)
{
    struct snapshot before, after;
    struct gdrx_open_params bad;
    gdrx_backend_t found = GDRX_BACKEND_AUTO;
    gdrx_t ctx;

    load_libcuda();
    void *g = hooks_dlopen("libgdr", "libgdrx.so.0", RTLD_NOW | RTLD_LOCAL);
    struct gdrx_entry_points gx = entry_points(g);
    int (*probe)(const struct gdrx_open_params *, gdrx_backend_t *) = gx.probe;
    int (*open_ctx)(const struct gdrx_open_params *, gdrx_t *) = gx.open_ctx;
    void (*params_init)(struct gdrx_open_params *) = gx.params_init;

    take(&before);
    params_init(&bad);
    bad.flags = 2; /* no such flag */
    CU_ASSERT_EQUAL(probe(&bad, &found), -EINVAL);
    CU_ASSERT_EQUAL(found, GDRX_BACKEND_AUTO);
    setenv("GDRX_BACKEND", "bogus", 1);
    CU_ASSERT_EQUAL(probe(NULL, &found), -EINVAL);
    unsetenv("GDRX_BACKEND");
    CU_ASSERT_EQUAL(probe(NULL, NULL), 0);
    CU_ASSERT_EQUAL(probe(NULL, &found), 0);
    CU_ASSERT_NOT_EQUAL(found, GDRX_BACKEND_AUTO);
    take(&after);
    CU_ASSERT_EQUAL(changed_slots(&before, &after), 0);
    CU_ASSERT_FALSE(text_changed(&before));
    CU_ASSERT_EQUAL(atfork_calls, 0);

    CU_ASSERT_EQUAL_FATAL(open_ctx(NULL, &ctx), 0);
    /* fork handlers now; the CUDA hooks only with a pin or a subscription */
    CU_ASSERT(atfork_calls > 0);
    CU_ASSERT_FALSE(text_changed(&before));
    int (*subscribe)(uint32_t, gdrx_mem_event_cb_t, void *, gdrx_mem_sub_t *) =
        (int (*)(uint32_t, gdrx_mem_event_cb_t, void *, gdrx_mem_sub_t *))dlsym(g, "gdrx_mem_events_subscribe");
    gdrx_mem_sub_t sub;
    CU_ASSERT_PTR_NOT_NULL_FATAL(subscribe);
    CU_ASSERT_EQUAL_FATAL(subscribe(GDRX_MEM_EVENT_FREE, no_op, NULL, &sub), 0);
    CU_ASSERT_TRUE(text_changed(&before));
}

/* gdrx_probe with GDRX_PROBE_FLAG_NO_CUDA (the UCX plugin lists its
 * resource with it) loads no libcuda and initialises no CUDA: dmabuf
 * counts only once the program itself initialised CUDA; gdrdrv counts
 * only with a device node that answers as gdrdrv.  Nothing is installed.
 * gdrx_open refuses the flag. */
static void test_probe_no_cuda(void)
{
    struct snapshot before, after;
    struct gdrx_open_params params;
    gdrx_backend_t found = GDRX_BACKEND_AUTO;
    int (*get_count)(int *), (*init)(unsigned);
    int count;
    gdrx_t ctx;

    void *g = hooks_dlopen("libgdr", "libgdrx.so.0", RTLD_NOW | RTLD_LOCAL);
    struct gdrx_entry_points gx = entry_points(g);
    int (*probe)(const struct gdrx_open_params *, gdrx_backend_t *) = gx.probe;
    int (*open_ctx)(const struct gdrx_open_params *, gdrx_t *) = gx.open_ctx;
    void (*params_init)(struct gdrx_open_params *) = gx.params_init;

    params_init(&params);
    params.flags = GDRX_PROBE_FLAG_NO_CUDA;
    CU_ASSERT_EQUAL(open_ctx(&params, &ctx), -EINVAL);
    params.backend = GDRX_BACKEND_DMABUF;
    CU_ASSERT_EQUAL(probe(&params, &found), -ENODEV);
    CU_ASSERT_PTR_NULL(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD));

    void *cuda = load_libcuda();
    *(void **)&get_count = dlsym(cuda, "cuDeviceGetCount");
    *(void **)&init = dlsym(cuda, "cuInit");
    CU_ASSERT_FATAL(get_count && init);
    take(&before);
    CU_ASSERT_EQUAL(probe(&params, &found), -ENODEV);
    CU_ASSERT_NOT_EQUAL(get_count(&count), 0); /* still not initialised */

    params.backend = GDRX_BACKEND_GDRDRV;
    setenv("GDRX_GDRDRV_PATH", "/nonexistent/gdrdrv", 1);
    CU_ASSERT_EQUAL(probe(&params, &found), -ENODEV);
    setenv("GDRX_GDRDRV_PATH", "/dev/null", 1); /* opens, but is no gdrdrv */
    CU_ASSERT_EQUAL(probe(&params, &found), -ENODEV);
    CU_ASSERT_EQUAL(found, GDRX_BACKEND_AUTO);
    CU_ASSERT_NOT_EQUAL(get_count(&count), 0);

    /* the program initialises CUDA: now dmabuf can be told to work */
    CU_ASSERT_EQUAL_FATAL(init(0), 0);
    params.backend = GDRX_BACKEND_DMABUF;
    CU_ASSERT_EQUAL(probe(&params, &found), 0);
    CU_ASSERT_EQUAL(found, GDRX_BACKEND_DMABUF);
    take(&after);
    CU_ASSERT_EQUAL(changed_slots(&before, &after), 0);
    CU_ASSERT_FALSE(text_changed(&before));
    CU_ASSERT_EQUAL(atfork_calls, 0);
}

/* The loader's own answers: a symbol only an RTLD_LOCAL library defines
 * is not found through RTLD_NEXT or RTLD_DEFAULT. */
static void test_dlsym_local_symbol(void)
{
    hooks_dlopen("libgdr", "libgdrx.so.0", RTLD_NOW | RTLD_GLOBAL);
    void *h = hooks_dlopen("tests/hooks", "libhooks_late.so", RTLD_NOW | RTLD_LOCAL);

    CU_ASSERT_PTR_NOT_NULL(dlsym(h, "hooks_local_only"));
    CU_ASSERT_PTR_NULL(dlsym(RTLD_NEXT, "hooks_local_only"));
    CU_ASSERT_PTR_NULL(dlsym(RTLD_DEFAULT, "hooks_local_only"));
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_dlopen_libgdrx),
    GDRX_TEST_CASE(test_library_linking_libgdrx),
    GDRX_TEST_CASE(test_no_libcuda_stays_without),
    GDRX_TEST_CASE(test_subscribed_before_libcuda),
    GDRX_TEST_CASE(test_probe_changes_nothing),
    GDRX_TEST_CASE(test_probe_no_cuda),
    GDRX_TEST_CASE(test_dlsym_local_symbol),
    GDRX_TEST_END
};

static const struct gdrx_test_suite suites[] = {
    { "hooks/noside", NULL, NULL, cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    return gdrx_test_main(argc, argv, suites);
}
