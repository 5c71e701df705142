/*
 * test_ucx_cuda.c - gdrx's hooks next to the real CUDA memory hooks of a
 * CUDA-enabled UCX 1.13.1 (libucm_cuda), on the simulated GPU: in bistro
 * and reloc mode, loaded before and after gdrx, UCX still gets its
 * memtype free event and gdrx still revokes the pin.
 *
 * SPDX-License-Identifier: MIT
 *
 * UCX is a third-party build, never part of this tree (tc_ucx_cuda_prefix
 * says where it is looked for).  Without it the cases are not registered:
 * they count as not run, never as passed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcuda.h"

/* Facts from UCX 1.13.1's ucm.h. */
#define UCM_EVENT_MEM_TYPE_ALLOC (1 << 20)
#define UCM_EVENT_MEM_TYPE_FREE  (1 << 21)
struct ucm_mem_type_event {  /* the mem_type member of union ucm_event_t */
    void  *address;
    size_t size;
    int    mem_type;
};
typedef void (*ucm_cb_t)(int type, struct ucm_mem_type_event *ev, void *arg);

static char prefix[PATH_MAX];

static int find_ucx(void)
{
    return tc_ucx_cuda_prefix(prefix, sizeof(prefix));
}

static void *load(const char *rel)
{
    char path[PATH_MAX + 64];

    snprintf(path, sizeof(path), "%s/%s", prefix, rel);
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        fprintf(stderr, "    dlopen %s: %s\n", path, dlerror());
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    return h;
}

static int ucx_frees, ucx_allocs;
static void *ucx_last_free;

static void on_ucx_event(int type, struct ucm_mem_type_event *ev, void *arg)
{
    (void)arg;
    if (type == UCM_EVENT_MEM_TYPE_FREE) {
        ucx_frees++;
        ucx_last_free = ev->address;
    } else if (type == UCM_EVENT_MEM_TYPE_ALLOC) {
        ucx_allocs++;
    }
}

/* libucs parses UCX_MEM_* into libucm's options when it loads; the CUDA
 * module registers its installer; the handler installs the hooks.  Returns
 * what ucm_set_event_handler did (0: UCX's hooks are in). */
static int start_ucx(const char *mode)
{
    setenv("UCX_MEM_CUDA_HOOK_MODE", mode, 1);
    load("lib/libucs.so.0"); /* brings libucm, which needs libucs' symbols */
    void *ucm = load("lib/libucm.so.0");
    load("lib/ucx/libucm_cuda.so.0");
    int (*set_handler)(int, int, ucm_cb_t, void *) =
        (int (*)(int, int, ucm_cb_t, void *))dlsym(ucm, "ucm_set_event_handler");
    CU_ASSERT_PTR_NOT_NULL_FATAL(set_handler);
    return set_handler(UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_MEM_TYPE_FREE, 0, on_ucx_event, NULL);
}

/* Who comes first: UCX's hooks, a gdrx context with no pin yet, or a
 * gdrx pin (which installs gdrx's hooks). */
enum order { UCX_FIRST, GDRX_OPEN_FIRST, GDRX_PIN_FIRST };

static void run(const char *mode, enum order order)
{
    const size_t len = 1u << 20;
    gdrx_pin_t pin, first_pin;
    CUdeviceptr first = 0;
    void *cpu = NULL;
    char byte = 1;

    tc_default_backend();
    if (tc_setup(0))
        return;
    if (order == UCX_FIRST)
        CU_ASSERT_EQUAL_FATAL(start_ucx(mode), 0);
    gdrx_t g = tc_open();
    if (order == GDRX_PIN_FIRST) {
        CU_ASSERT_FATAL(cuMemAlloc(&first, 65536) == CUDA_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, first, 65536, 0, &first_pin), 0);
    }
    /* gdrx's hooks come with its first pin (or subscription), not with
     * gdrx_open.  After them UCX's bistro meets our entry's `jmp rel32`,
     * which its relocator does not know, and refuses
     * (docs/free-interception.md); the UCX transport therefore lets UCX's
     * hooks in first. */
    int ucx_hooks = order == UCX_FIRST || start_ucx(mode) == 0;
    CU_ASSERT_EQUAL(ucx_hooks, order != GDRX_PIN_FIRST || strcmp(mode, "bistro") != 0);
    if (first) {
        CU_ASSERT_EQUAL(gdrx_unpin(g, first_pin), 0);
        CU_ASSERT(cuMemFree(first) == CUDA_SUCCESS);
    }

    CUdeviceptr p = 0;
    CU_ASSERT_FATAL(cuMemAlloc(&p, len) == CUDA_SUCCESS); /* through this program's GOT */
    CU_ASSERT(ucx_allocs >= (ucx_hooks ? 1 : 0));
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, p, len, 0, &pin), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, pin, &cpu), 0);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pin, cpu, &byte, 1), 0);
    int before = ucx_frees;
    CU_ASSERT(cuMemFree(p) == CUDA_SUCCESS);
    if (ucx_hooks) {
        CU_ASSERT_EQUAL(ucx_frees, before + 1);         /* UCX's memtype free */
        CU_ASSERT_PTR_EQUAL(ucx_last_free, (void *)(uintptr_t)p);
    }
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pin, cpu, &byte, 1), -ESTALE); /* gdrx revoked */
    CU_ASSERT_EQUAL(gdrx_unmap(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    gdrx_close(g);
}

/* Whether UCX alone (no gdrx in the process yet) installs its hooks in
 * `mode` on this libcuda: UCX 1.13's bistro cannot patch every libcuda
 * (it needs a jump it can place near the function).  Asked in a child. */
static int ucx_alone_installs(const char *mode)
{
    char path[PATH_MAX + 64];
    pid_t pid = fork();
    int status = 0;

    if (pid == 0) {
        setenv("UCX_MEM_CUDA_HOOK_MODE", mode, 1);
        if (tc.Init == NULL || tc.Init(0) != CUDA_SUCCESS)
            _exit(2);
        const char *libs[] = { "lib/libucs.so.0", "lib/libucm.so.0", "lib/ucx/libucm_cuda.so.0" };
        void *ucm = NULL;
        for (int i = 0; i < 3; i++) {
            snprintf(path, sizeof(path), "%s/%s", prefix, libs[i]);
            void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
            if (!h)
                _exit(3);
            if (i == 1)
                ucm = h;
        }
        int (*set_handler)(int, int, ucm_cb_t, void *) =
            (int (*)(int, int, ucm_cb_t, void *))dlsym(ucm, "ucm_set_event_handler");
        _exit(set_handler && set_handler(UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_MEM_TYPE_FREE, 0,
                                         on_ucx_event, NULL) == 0 ? 0 : 1);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return 0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void test_bistro_ucx_first(void) { run("bistro", UCX_FIRST); }
static void test_bistro_gdrx_first(void) { run("bistro", GDRX_OPEN_FIRST); }
static void test_bistro_gdrx_pin_first(void) { run("bistro", GDRX_PIN_FIRST); }
static void test_reloc_ucx_first(void) { run("reloc", UCX_FIRST); }
static void test_reloc_gdrx_first(void) { run("reloc", GDRX_OPEN_FIRST); }
static void test_reloc_gdrx_pin_first(void) { run("reloc", GDRX_PIN_FIRST); }

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_reloc_ucx_first),
    GDRX_TEST_CASE(test_reloc_gdrx_first),
    GDRX_TEST_CASE(test_reloc_gdrx_pin_first),
    GDRX_TEST_CASE(test_bistro_ucx_first),
    GDRX_TEST_CASE(test_bistro_gdrx_first),
    GDRX_TEST_CASE(test_bistro_gdrx_pin_first),
    GDRX_TEST_END
};

/* The reloc cases alone, where UCX by itself cannot install bistro hooks. */
static const struct gdrx_test_case reloc_cases[] = {
    GDRX_TEST_CASE(test_reloc_ucx_first),
    GDRX_TEST_CASE(test_reloc_gdrx_first),
    GDRX_TEST_CASE(test_reloc_gdrx_pin_first),
    GDRX_TEST_END
};

static const struct gdrx_test_suite suites[] = {
    { "hooks/ucx-1.13.1-cuda", NULL, NULL, cases },
    GDRX_SUITE_END
};

static const struct gdrx_test_suite none[] = { GDRX_SUITE_END };

int main(int argc, char **argv)
{
    tc_load();
    if (!find_ucx()) {
        tc_report_skip("hooks/ucx-1.13.1-cuda",
                       "no CUDA-enabled UCX 1.13.1: set GDRX_UCX_CUDA_PREFIX or build it in "
                       "third_party/ucx-1.13.1-cuda");
        return gdrx_test_main(argc, argv, none);
    }
    if (!ucx_alone_installs("bistro")) {
        /* Not gdrx's doing: no gdrx call was made in that child. */
        tc_report_skip("hooks/ucx-1.13.1-cuda bistro",
                       "UCX's bistro hooks do not install on this libcuda even without gdrx");
        static const struct gdrx_test_suite reloc_only[] = {
            { "hooks/ucx-1.13.1-cuda", NULL, NULL, reloc_cases },
            GDRX_SUITE_END
        };
        return gdrx_test_main(argc, argv, reloc_only);
    }
    return gdrx_test_main(argc, argv, suites);
}
