/*
 * ut_uct.c - shared setup of the gdrx UCX suites (see ut_uct.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include "config.h"

#include "ut_uct.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <ucm/api/ucm.h>

/* A failed setup step: a failed assertion inside a test case, a message
 * elsewhere (the benchmark). */
#define UT_REQUIRE(_cond) \
    do { \
        if (!(_cond)) { \
            ut_fail(#_cond, __LINE__); \
            return -1; \
        } \
    } while (0)

static void ut_fail(const char *what, int line)
{
    if (CU_get_current_suite() != NULL) {
        CU_assertImplementation(CU_FALSE, line, what, __FILE__, "", CU_FALSE);
    } else {
        fprintf(stderr, "%s:%d: %s failed\n", __FILE__, line, what);
    }
}

void ut_build_path(char *buf, size_t size, const char *rel)
{
    const char *top = getenv("GDRX_TEST_BUILDDIR");

    snprintf(buf, size, "%s/%s", top ? top : ".", rel);
}

void ut_sim_preload(char *buf, size_t size)
{
    char sim[512], init[512];

    ut_build_path(sim, sizeof(sim), "tests/sim/.libs/libcuda.so.1");
    ut_build_path(init, sizeof(init), "tests/ucx/.libs/libut_cuda_init.so");
    snprintf(buf, size, "%s:%s", sim, init);
}

/* Only the release gdrx was built for, with gdr_copy built, counts (the
 * build script's stamp names the release). */
int ut_ucx_cuda_libpath(char *buf, size_t size)
{
    char prefix[PATH_MAX], f[PATH_MAX + 64], line[PATH_MAX] = "", want[64];
    char sim[PATH_MAX], gdrapi[PATH_MAX], nvml[PATH_MAX] = "";
    FILE *fp;

    if (!tc_ucx_cuda_prefix(prefix, sizeof(prefix)))
        return 0;
    snprintf(f, sizeof(f), "%s/lib/ucx/libuct_cuda_gdrcopy.so.0", prefix);
    if (access(f, R_OK) != 0)
        return 0;
    snprintf(f, sizeof(f), "%s/.ucx-cuda-debian", prefix);
    fp = fopen(f, "r");
    if (fp == NULL)
        return 0;
    if (fgets(line, sizeof(line), fp) == NULL)
        line[0] = '\0';
    fclose(fp);
    snprintf(want, sizeof(want), "ucx %s-", GDRX_UCX_BUILD_VERSION);
    if (strncmp(line, want, strlen(want)) != 0)
        return 0;
    snprintf(f, sizeof(f), "%s/.nvml-libdir", prefix);
    fp = fopen(f, "r");
    if (fp != NULL) {
        if (fgets(nvml, sizeof(nvml), fp) != NULL)
            nvml[strcspn(nvml, "\n")] = '\0';
        fclose(fp);
    }
    ut_build_path(sim, sizeof(sim), "tests/sim/.libs");
    ut_build_path(gdrapi, sizeof(gdrapi), "libgdr/gdrapi/.libs");
    snprintf(buf, size, "%s:%s:%s/lib%s%s", sim, gdrapi, prefix, nvml[0] ? ":" : "",
             nvml);
    return 1;
}

static void ut_noop_mem_event(ucm_event_type_t type, ucm_event_t *event,
                              void *arg)
{
    (void)type;
    (void)event;
    (void)arg;
}

/* Asked of UCM rather than of the files in UCX's module directory: a
 * module there may not load (libucm_cuda needs libcudart and libcuda), and
 * UCX loads modules from the directory next to libucs and from
 * UCX_MODULE_DIR's both (setting that one kept the CUDA modules in).
 * Setting a handler of CUDA events loads UCM's modules and has each
 * install its hooks, once per process, as UCP's memory-type cache does. */
int ut_ucx_has_cuda(void)
{
    ucs_status_t status;
    void *ucm_cuda;

    status = ucm_set_event_handler(UCM_EVENT_MEM_TYPE_FREE, 0,
                                   ut_noop_mem_event, NULL);
    if (status == UCS_OK) {
        ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_FREE, ut_noop_mem_event,
                                NULL);
    }
    ucm_cuda = dlopen("libucm_cuda.so.0", RTLD_LAZY | RTLD_NOLOAD);
    if (ucm_cuda == NULL) {
        return 0;
    }
    dlclose(ucm_cuda);
    return status == UCS_OK;
}

int ut_load_plugin(void)
{
    char path[512];

    ut_build_path(path, sizeof(path), "ucx_plugin/.libs/libuct_gdrx.so.0");
    if (dlopen(path, RTLD_NOW | RTLD_GLOBAL) == NULL) {
        fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
        return -1;
    }
    return 0;
}

int ut_suite_init(void)
{
    tc_load();
    tc_default_backend();
    return ut_load_plugin();
}

static uct_component_h ut_find_component(void)
{
    uct_component_h *components, found = NULL;
    uct_component_attr_t attr = {.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME};
    unsigned i, n;

    if (uct_query_components(&components, &n) != UCS_OK) {
        return NULL;
    }
    for (i = 0; i < n; ++i) {
        if ((uct_component_query(components[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, "gdrx")) {
            found = components[i];
        }
    }
    uct_release_component_list(components);
    return found;
}

static int ut_open_iface(struct ut_uct *u)
{
    uct_iface_params_t params = {0};
    uct_iface_config_t *config;
    uct_ep_params_t ep_params = {0};
    uint64_t addr;
    ucs_status_t status;

    if (uct_md_iface_config_read(u->md, "gdrx", NULL, NULL, &config) != UCS_OK) {
        return -1;
    }
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "gdrx";
    params.mode.device.dev_name = "gdrx0";
    status = uct_iface_open(u->md, u->worker, &params, config, &u->iface);
    uct_config_release(config);
    if ((status != UCS_OK) || (uct_iface_query(u->iface, &u->attr) != UCS_OK) ||
        (uct_iface_get_address(u->iface, (uct_iface_addr_t*)&addr) != UCS_OK)) {
        return -1;
    }

    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = u->iface;
    ep_params.iface_addr = (const uct_iface_addr_t*)&addr;
    return (uct_ep_create(&ep_params, &u->ep) == UCS_OK) ? 0 : -1;
}

/* Stats files go to the case's scratch directory, which the harness
 * removes.  Outside the harness (the benchmark, GDRX_TEST_NOFORK) they go
 * to /tmp and are removed when the process that named them exits; a forked
 * child inherits that exit handler but not the files. */
#define UT_STATS_TAGS 4
static struct {
    pid_t owner;
    char  paths[UT_STATS_TAGS][256]; /* one per tag named */
} ut_stats_named;

static void ut_stats_remove(void)
{
    size_t i;

    if (ut_stats_named.owner != getpid()) {
        return;
    }
    for (i = 0; (i < UT_STATS_TAGS) && (ut_stats_named.paths[i][0] != '\0');
         ++i) {
        unlink(ut_stats_named.paths[i]);
    }
}

void ut_stats_file(char *buf, size_t size, const char *tag)
{
    const char *dir = getenv("GDRX_TEST_SCRATCH");
    static int registered;
    size_t i;

    snprintf(buf, size, "%s/gdrx-%s-stats.%d",
             ((dir != NULL) && (*dir != '\0')) ? dir : "/tmp", tag,
             (int)getpid());
    unlink(buf);
    setenv("UCX_GDRX_STATS_DUMP", buf, 1);
    if ((dir != NULL) && (*dir != '\0')) {
        return; /* the harness removes the directory */
    }
    if (ut_stats_named.owner != getpid()) {
        memset(&ut_stats_named, 0, sizeof(ut_stats_named));
        ut_stats_named.owner = getpid();
    }
    for (i = 0; i < UT_STATS_TAGS; ++i) {
        if ((ut_stats_named.paths[i][0] == '\0') ||
            (strcmp(ut_stats_named.paths[i], buf) == 0)) {
            snprintf(ut_stats_named.paths[i], sizeof(ut_stats_named.paths[i]),
                     "%s", buf);
            break;
        }
    }
    if (!registered) {
        registered = (atexit(ut_stats_remove) == 0);
    }
}

int ut_open_md(struct ut_uct *u)
{
    uct_md_config_t *md_config;
    ucs_status_t status;

    memset(u, 0, sizeof(*u));
    ut_stats_file(u->stats, sizeof(u->stats), "ucx");

    u->component = ut_find_component();
    UT_REQUIRE(u->component != NULL);
    UT_REQUIRE(uct_md_config_read(u->component, NULL, NULL, &md_config) ==
               UCS_OK);
    status = uct_md_open(u->component, "gdrx", md_config, &u->md);
    uct_config_release(md_config);
    UT_REQUIRE(status == UCS_OK);
    return 0;
}

int ut_open(struct ut_uct *u)
{
    if (ut_open_md(u) != 0) {
        return -1;
    }
    UT_REQUIRE(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                        &u->async) == UCS_OK);
    UT_REQUIRE(uct_worker_create(u->async, UCS_THREAD_MODE_SINGLE,
                                 &u->worker) == UCS_OK);
    UT_REQUIRE(ut_open_iface(u) == 0);
    return 0;
}

void ut_close(struct ut_uct *u)
{
    if (u->ep != NULL) {
        uct_ep_destroy(u->ep);
    }
    if (u->iface != NULL) {
        uct_iface_close(u->iface);
    }
    uct_worker_destroy(u->worker);
    ucs_async_context_destroy(u->async);
    uct_md_close(u->md);
}

ucs_status_t ut_reg(struct ut_uct *u, void *addr, size_t len, struct ut_reg *r)
{
    uint8_t packed[256];
    ucs_status_t status;

    status = uct_md_mem_reg(u->md, addr, len, UCT_MD_MEM_ACCESS_ALL, &r->memh);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_md_mkey_pack(u->md, r->memh, packed);
    if (status == UCS_OK) {
        status = uct_rkey_unpack(u->component, packed, &r->rkey);
    }
    if (status != UCS_OK) {
        ut_fail("mkey_pack/rkey_unpack", __LINE__);
        uct_md_mem_dereg(u->md, r->memh);
    }
    return status;
}

void ut_dereg(struct ut_uct *u, struct ut_reg *r)
{
    if ((uct_rkey_release(u->component, &r->rkey) != UCS_OK) ||
        (uct_md_mem_dereg(u->md, r->memh) != UCS_OK)) {
        ut_fail("rkey_release/mem_dereg", __LINE__);
    }
}

ucs_status_t ut_alloc(struct ut_uct *u, size_t len, uct_allocated_memory_t *mem)
{
    uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
    uct_mem_alloc_params_t params;

    params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS |
                        UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE |
                        UCT_MEM_ALLOC_PARAM_FIELD_MDS |
                        UCT_MEM_ALLOC_PARAM_FIELD_NAME;
    params.flags      = UCT_MD_MEM_ACCESS_ALL;
    params.mem_type   = UCS_MEMORY_TYPE_CUDA;
    params.mds.mds    = &u->md;
    params.mds.count  = 1;
    params.name       = "gdrx test";
    return uct_mem_alloc(len, &method, 1, &params, mem);
}

struct ut_bcopy_arg {
    void   *buf;
    size_t len;
};

static size_t ut_pack(void *dest, void *arg)
{
    struct ut_bcopy_arg *a = arg;

    memcpy(dest, a->buf, a->len);
    return a->len;
}

static void ut_unpack(void *arg, const void *data, size_t length)
{
    struct ut_bcopy_arg *a = arg;

    memcpy(a->buf, data, length);
    a->len = length;
}

ucs_status_t ut_put_memh(struct ut_uct *u, enum ut_op op, void *buf,
                         uct_mem_h memh, size_t len, uint64_t raddr,
                         uct_rkey_t rkey)
{
    struct ut_bcopy_arg arg = {buf, len};
    uct_iov_t iov = {buf, len, memh, 0, 1};
    ssize_t n;

    switch (op) {
    case UT_SHORT:
        return uct_ep_put_short(u->ep, buf, (unsigned)len, raddr, rkey);
    case UT_BCOPY:
        n = uct_ep_put_bcopy(u->ep, ut_pack, &arg, raddr, rkey);
        return (n < 0) ? (ucs_status_t)n :
               ((size_t)n == len) ? UCS_OK : UCS_ERR_IO_ERROR;
    default:
        return uct_ep_put_zcopy(u->ep, &iov, 1, raddr, rkey, NULL);
    }
}

ucs_status_t ut_get_memh(struct ut_uct *u, enum ut_op op, void *buf,
                         uct_mem_h memh, size_t len, uint64_t raddr,
                         uct_rkey_t rkey)
{
    struct ut_bcopy_arg arg = {buf, 0};
    uct_iov_t iov = {buf, len, memh, 0, 1};

    switch (op) {
    case UT_SHORT:
        return uct_ep_get_short(u->ep, buf, (unsigned)len, raddr, rkey);
    case UT_BCOPY:
        return uct_ep_get_bcopy(u->ep, ut_unpack, &arg, len, raddr, rkey,
                                NULL);
    default:
        return uct_ep_get_zcopy(u->ep, &iov, 1, raddr, rkey, NULL);
    }
}

ucs_status_t ut_put(struct ut_uct *u, enum ut_op op, void *buf, size_t len,
                    uint64_t raddr, uct_rkey_t rkey)
{
    return ut_put_memh(u, op, buf, NULL, len, raddr, rkey);
}

ucs_status_t ut_get(struct ut_uct *u, enum ut_op op, void *buf, size_t len,
                    uint64_t raddr, uct_rkey_t rkey)
{
    return ut_get_memh(u, op, buf, NULL, len, raddr, rkey);
}

long ut_counter(const char *stats_file, const char *what, const char *name)
{
    char line[1024], key[128];
    long total = -1, v;
    const char *p;
    FILE *f = fopen(stats_file, "r");

    if (f == NULL) {
        return -1;
    }
    snprintf(key, sizeof(key), " %s ", name);
    while (fgets(line, sizeof(line), f) != NULL) {
        p = strchr(line, ']');
        if ((p == NULL) || strncmp(p + 2, what, strlen(what)) ||
            ((p = strstr(p, key)) == NULL) ||
            (sscanf(p + strlen(key), "%ld", &v) != 1)) {
            continue;
        }
        total = (total < 0) ? v : total + v;
    }
    fclose(f);
    return total;
}

int ut_stats_has(const char *stats_file, const char *text)
{
    char line[1024];
    int found = 0;
    FILE *f   = fopen(stats_file, "r");

    while ((f != NULL) && !found && (fgets(line, sizeof(line), f) != NULL)) {
        found = (strstr(line, text) != NULL);
    }
    if (f != NULL) {
        fclose(f);
    }
    return found;
}

void ut_fork_child_exits(void)
{
    int st = 0;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        _exit(0);
    }
    CU_ASSERT_FATAL(pid > 0);
    CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
    CU_ASSERT(WIFEXITED(st) && (WEXITSTATUS(st) == 0));
}
