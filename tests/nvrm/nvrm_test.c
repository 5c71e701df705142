/*
 * nvrm_test.c - small helpers of the nvrm suites (the re-exec under the
 * emulator is nvrm_reexec.c).
 *
 * SPDX-License-Identifier: MIT
 */
#include "nvrm_test.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gdrx.h"
#include "nvrm_layout.h"

int nvt_setup(int ngpus, int dev)
{
    setenv("GDRX_BACKEND", "nvrm", 1);
    tc_load();
    if (ngpus > 0) {
        if (!tsim.set_device_count || tsim.set_device_count(ngpus) != 0) {
            CU_FAIL("cannot set the simulated GPU count");
            return -1;
        }
    }
    return tc_setup(dev);
}

int nvt_open(gdrx_t *g)
{
    struct gdrx_open_params params;

    gdrx_open_params_init(&params);
    params.backend = GDRX_BACKEND_NVRM;
    return gdrx_open(&params, g);
}

const char *nvt_version(void)
{
    const char *v = getenv("NVRM_EMU_VERSION");
    return v && *v ? v : "580.159.04";
}

uint64_t nvt_version_code(void)
{
    unsigned long major = 0, minor = 0;
    sscanf(nvt_version(), "%lu.%lu", &major, &minor);
    return ((uint64_t)major << 16) | minor;
}

int nvt_branch_checked(void)
{
    const struct nvrm_layout *l = nvrm_layout_for(nvt_version());
    return l && l->status == NVRM_BRANCH_CHECKED;
}

struct nvrm_emu_stats nvt_stats(void)
{
    struct nvrm_emu_stats s;

    memset(&s, 0, sizeof(s));
    if (!nvrm_emu_get_stats || nvrm_emu_get_stats(&s) != 0)
        CU_FAIL("emulator statistics unavailable");
    return s;
}

void nvt_assert_released(const struct nvrm_emu_stats *before)
{
    struct nvrm_emu_stats s = nvt_stats();
    CU_ASSERT_EQUAL(s.rm_maps_live, before->rm_maps_live);
    CU_ASSERT_EQUAL(s.rm_mapped_bytes, before->rm_mapped_bytes);
    CU_ASSERT_EQUAL(s.cpu_maps_live, before->cpu_maps_live);
    CU_ASSERT_EQUAL(s.memory_objects, before->memory_objects);
}

static int saved_stderr = -1;

int nvt_capture_begin(void)
{
    int fd = memfd_create("nvt-stderr", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    fflush(stderr);
    saved_stderr = dup(2);
    dup2(fd, 2);
    return fd;
}

char *nvt_capture_end(int fd)
{
    char *buf = calloc(1, 65536);

    fflush(stderr);
    if (saved_stderr >= 0) {
        dup2(saved_stderr, 2);
        close(saved_stderr);
        saved_stderr = -1;
    }
    if (fd >= 0 && buf) {
        ssize_t n = pread(fd, buf, 65535, 0);
        if (n < 0)
            buf[0] = '\0';
        close(fd);
        fprintf(stderr, "%s", buf); /* keep it in the log */
    }
    return buf ? buf : strdup("");
}

void *nvt_pin_map(gdrx_t g, CUdeviceptr p, size_t len, gdrx_pin_t *pin)
{
    void *cpu = NULL;
    int rc = gdrx_pin(g, p, len, 0, pin);

    if (rc) {
        fprintf(stderr, "    gdrx_pin(%#llx, %zu): %s\n", (unsigned long long)p, len,
                gdrx_strerror(rc));
        CU_FAIL("gdrx_pin failed");
        return NULL;
    }
    rc = gdrx_map(g, *pin, &cpu);
    if (rc) {
        fprintf(stderr, "    gdrx_map: %s\n", gdrx_strerror(rc));
        CU_FAIL("gdrx_map failed");
        return NULL;
    }
    return cpu;
}

int nvt_mapped_alloc(struct nvt_mapped *m, size_t len)
{
    memset(m, 0, sizeof(*m));
    if (nvt_setup(0, 0))
        return -1;
    if (nvt_open(&m->g) != 0) {
        CU_FAIL("gdrx_open failed");
        return -1;
    }
    m->p = tc_alloc(len);
    m->cpu = m->p ? nvt_pin_map(m->g, m->p, len, &m->pin) : NULL;
    return m->cpu ? 0 : -1;
}

int nvt_roundtrip(gdrx_pin_t pin, void *cpu, CUdeviceptr p, size_t len, uint32_t seed)
{
    unsigned char *want = malloc(len), *got = malloc(len);
    int ok = want && got;

    if (ok) {
        tc_pattern(want, len, seed);
        ok = gdrx_copy_to_mapping(pin, cpu, want, len) == 0 && tc_check(p, len, seed);
    }
    if (ok) {
        tc_fill(p, len, seed + 1);
        tc_pattern(want, len, seed + 1);
        ok = gdrx_copy_from_mapping(pin, got, cpu, len) == 0 && memcmp(want, got, len) == 0;
    }
    if (ok && len) {
        /* A plain CPU load sees the same byte. */
        ok = ((volatile unsigned char *)cpu)[len - 1] == want[len - 1];
    }
    free(want);
    free(got);
    return ok;
}

/* The simulated libcuda's function `name` (NULL if not loaded). */
static void *sim_function(const char *name)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *sym = lib ? dlsym(lib, name) : NULL;

    if (lib)
        dlclose(lib); /* still loaded: NOLOAD took a reference of its own */
    return sym;
}

int nvt_sim_export_fd(CUdeviceptr p, int *fd)
{
    int (*fn)(CUdeviceptr, int *) = NULL;
    void *sym = sim_function("simcu_rm_export_fd");

    memcpy(&fn, &sym, sizeof(sym));
    return fn ? fn(p, fd) : -ENOSYS;
}

int nvt_sim_split(CUdeviceptr at)
{
    int (*fn)(CUdeviceptr) = NULL;
    void *sym = sim_function("simcu_rm_split");

    memcpy(&fn, &sym, sizeof(sym));
    return fn ? fn(at) : -ENOSYS;
}

int nvt_run_helper(const char *name, const char *arg)
{
    char path[4096];

    if (nvt_find_built(name, path, sizeof(path)) != 0) {
        fprintf(stderr, "    %s not found (set GDRX_TEST_BUILDDIR)\n", name);
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        char *args[] = { path, (char *)arg, NULL };
        execv(path, args);
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    if (!WIFEXITED(status)) {
        fprintf(stderr, "    %s %s: killed by signal %d\n", name, arg,
                WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        return -1;
    }
    return WEXITSTATUS(status);
}
