/*
 * test_vmm_free.c - VMM memory (cuMemCreate + cuMemMap) pinned through
 * libgdrx: cuMemUnmap revokes the pins of the range it unmapped, once
 * CUDA unmapped it; an unmap CUDA refuses (part of a mapping, nothing
 * mapped) and a cuMemFree of a mapped address revoke nothing (issue 29).
 * An IPC import (cuIpcOpenMemHandle in another process) is revoked there
 * by its cuIpcCloseMemHandle, which UCX's own CUDA hooks do not see.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcuda.h"

#define MiB (1024u * 1024u)
#define LEN (4 * MiB)

static struct {
    __typeof__(&cuMemCreate)         Create;
    __typeof__(&cuMemRelease)        Release;
    __typeof__(&cuMemAddressReserve) Reserve;
    __typeof__(&cuMemAddressFree)    AddressFree;
    __typeof__(&cuMemMap)            Map;
    __typeof__(&cuMemUnmap)          Unmap;
    __typeof__(&cuMemSetAccess)      SetAccess;
} vmm;

static int frees;
static uint64_t freed_base, freed_size;

static void count_free(const struct gdrx_mem_event *ev, void *arg)
{
    (void)arg;
    if (ev->type != GDRX_MEM_EVENT_FREE)
        return;
    frees++;
    freed_base = ev->base;
    freed_size = ev->size;
}

static int load(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *f[7];
    static const char *const names[7] = { "cuMemCreate", "cuMemRelease", "cuMemAddressReserve",
                                          "cuMemAddressFree", "cuMemMap", "cuMemUnmap",
                                          "cuMemSetAccess" };
    int ok = lib != NULL;

    for (int i = 0; i < 7; i++)
        ok = ok && (f[i] = dlsym(lib, names[i])) != NULL;
    if (lib)
        dlclose(lib);
    if (!ok)
        return -1;
    memcpy(&vmm.Create, &f[0], sizeof(void *));
    memcpy(&vmm.Release, &f[1], sizeof(void *));
    memcpy(&vmm.Reserve, &f[2], sizeof(void *));
    memcpy(&vmm.AddressFree, &f[3], sizeof(void *));
    memcpy(&vmm.Map, &f[4], sizeof(void *));
    memcpy(&vmm.Unmap, &f[5], sizeof(void *));
    memcpy(&vmm.SetAccess, &f[6], sizeof(void *));
    return 0;
}

struct fixture {
    gdrx_t                       g;
    gdrx_mem_sub_t               sub;
    CUmemGenericAllocationHandle h;
    CUdeviceptr                  va;
    gdrx_pin_t                   pin;
    void                        *cpu;
};

/* LEN of device 0's memory mapped read-write at a reservation of 2 LEN,
 * pinned and mapped through libgdrx, seed 3 written through the pin. */
static int setup(struct fixture *f)
{
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;
    unsigned char *buf = malloc(LEN);

    memset(f, 0, sizeof(*f));
    memset(&prop, 0, sizeof(prop));
    memset(&acc, 0, sizeof(acc));
    frees = 0;
    if (!buf || tc_setup(0) || load()) {
        free(buf);
        CU_FAIL("no CUDA VMM");
        return -1;
    }
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    f->g = tc_open();
    CU_ASSERT_EQUAL_FATAL(vmm.Create(&f->h, LEN, &prop, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(vmm.Reserve(&f->va, 2 * LEN, 0, 0, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(vmm.Map(f->va, LEN, 0, f->h, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(vmm.SetAccess(f->va, LEN, &acc, 1), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(f->g, f->va, LEN, 0, &f->pin), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(f->g, f->pin, &f->cpu), 0);
    tc_pattern(buf, LEN, 3);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(f->pin, f->cpu, buf, LEN), 0);
    free(buf);
    CU_ASSERT_EQUAL_FATAL(gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE, count_free, NULL, &f->sub), 0);
    return 0;
}

static int copy_rc(const struct fixture *f)
{
    char c;

    return gdrx_copy_from_mapping(f->pin, &c, f->cpu, 1);
}

static void teardown(struct fixture *f)
{
    CU_ASSERT_EQUAL(gdrx_mem_events_unsubscribe(f->sub), 0);
    CU_ASSERT_EQUAL(gdrx_close(f->g), 0);
    CU_ASSERT_EQUAL(vmm.AddressFree(f->va, 2 * LEN), CUDA_SUCCESS);
}

/* cuMemUnmap of the mapping: revoked, one FREE of the unmapped range; the
 * handle's release afterwards changes nothing more. */
static void test_unmap_revokes(void)
{
    struct fixture f;

    if (setup(&f))
        return;
    CU_ASSERT_EQUAL(vmm.Release(f.h), CUDA_SUCCESS); /* pages stay: still mapped */
    CU_ASSERT_EQUAL(copy_rc(&f), 0);
    CU_ASSERT_EQUAL(frees, 0);
    CU_ASSERT_EQUAL(vmm.Unmap(f.va, LEN), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(copy_rc(&f), -ESTALE);
    CU_ASSERT_EQUAL(frees, 1);
    CU_ASSERT_EQUAL(freed_base, f.va);
    CU_ASSERT_EQUAL(freed_size, LEN);
    teardown(&f);
}

/* Unmaps CUDA refuses, and cuMemFree of a mapped address: nothing
 * revoked, no event, every byte still there through the pin. */
static void test_refused_unmaps_revoke_nothing(void)
{
    unsigned char *buf = malloc(LEN), *want = malloc(LEN);
    struct fixture f;

    if (setup(&f)) {
        free(buf);
        free(want);
        return;
    }
    CU_ASSERT_EQUAL(vmm.Unmap(f.va, LEN / 2), CUDA_ERROR_INVALID_VALUE); /* part of it */
    CU_ASSERT_EQUAL(vmm.Unmap(f.va + LEN, LEN), CUDA_ERROR_INVALID_VALUE); /* nothing there */
    CU_ASSERT_EQUAL(tc.MemFree(f.va), CUDA_ERROR_INVALID_VALUE); /* not cuMemAlloc's */
    CU_ASSERT_EQUAL(frees, 0);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(f.pin, buf, f.cpu, LEN), 0);
    tc_pattern(want, LEN, 3);
    CU_ASSERT_EQUAL(memcmp(buf, want, LEN), 0);
    CU_ASSERT(tc_check(f.va, LEN, 3));
    CU_ASSERT_EQUAL(vmm.Unmap(f.va, LEN), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(copy_rc(&f), -ESTALE);
    CU_ASSERT_EQUAL(frees, 1);
    CU_ASSERT_EQUAL(vmm.Release(f.h), CUDA_SUCCESS);
    teardown(&f);
    free(buf);
    free(want);
}

/* ------------------------------------------- an IPC import, closed */

static struct {
    __typeof__(&cuIpcGetMemHandle)     Get;
    __typeof__(&cuIpcOpenMemHandle_v2) Open;
    __typeof__(&cuIpcCloseMemHandle)   Close;
} ipc;

static int load_ipc(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *f[3] = { NULL, NULL, NULL };

    if (lib) {
        f[0] = dlsym(lib, "cuIpcGetMemHandle");
        f[1] = dlsym(lib, "cuIpcOpenMemHandle_v2");
        f[2] = dlsym(lib, "cuIpcCloseMemHandle");
        dlclose(lib);
    }
    if (!f[0] || !f[1] || !f[2])
        return -1;
    memcpy(&ipc.Get, &f[0], sizeof(void *));
    memcpy(&ipc.Open, &f[1], sizeof(void *));
    memcpy(&ipc.Close, &f[2], sizeof(void *));
    return 0;
}

/* In another process, forked before the exporter initialised CUDA (the
 * driver refuses CUDA in a child of a process that used it): take the
 * handle from the pipe, open the import, pin and map it, check every byte
 * through the mapping; a close CUDA refuses (of the process's own memory)
 * revokes nothing; the close of the import revokes the pin (copies
 * -ESTALE) with one FREE of the import's range.  Returns the failed checks. */
static int ipc_importer(int rfd)
{
    unsigned char *buf = malloc(LEN), *want = malloc(LEN);
    CUipcMemHandle handle;
    CUdeviceptr p = 0, own = 0;
    gdrx_mem_sub_t sub;
    gdrx_pin_t pin;
    void *cpu = NULL;
    gdrx_t g;
    int bad = 0;

    frees = 0;
    if (read(rfd, &handle, sizeof(handle)) != (ssize_t)sizeof(handle))
        return 99; /* the exporter failed before sending it */
    if (tc_setup(0) || load_ipc() || (own = tc_alloc(4096)) == 0)
        return 101;
    if (!buf || !want || gdrx_open(NULL, &g) != 0 || ipc.Open(&p, handle, 0) != CUDA_SUCCESS ||
        gdrx_pin(g, p, LEN, 0, &pin) != 0 || gdrx_map(g, pin, &cpu) != 0 ||
        gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE, count_free, NULL, &sub) != 0)
        return 100;
    tc_pattern(want, LEN, 5);
    bad += gdrx_copy_from_mapping(pin, buf, cpu, LEN) != 0 || memcmp(buf, want, LEN) != 0;
    bad += ipc.Close(own) != CUDA_ERROR_INVALID_VALUE; /* not an import */
    bad += gdrx_copy_from_mapping(pin, buf, cpu, 1) != 0 || frees != 0;
    bad += ipc.Close(p) != CUDA_SUCCESS;
    bad += gdrx_copy_from_mapping(pin, buf, cpu, 1) != -ESTALE;
    bad += frees != 1 || freed_base != p || freed_size != LEN;
    bad += gdrx_mem_events_unsubscribe(sub) != 0 || gdrx_close(g) != 0;
    free(buf);
    free(want);
    return bad;
}

/* cuIpcCloseMemHandle in the importer revokes its pins there; the
 * exporter's memory keeps its bytes. */
static void test_ipc_close_revokes(void)
{
    CUipcMemHandle handle;
    CUdeviceptr d;
    int status = -1, fds[2];

    CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        close(fds[1]);
        _exit(ipc_importer(fds[0]));
    }
    close(fds[0]);
    if (tc_setup(0) || load_ipc()) {
        CU_FAIL("no CUDA IPC");
        close(fds[1]);
        waitpid(pid, &status, 0);
        return;
    }
    CU_ASSERT_FATAL((d = tc_alloc(LEN)) != 0);
    tc_fill(d, LEN, 5);
    CU_ASSERT_EQUAL(ipc.Get(&handle, d), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(write(fds[1], &handle, sizeof(handle)), (ssize_t)sizeof(handle));
    close(fds[1]);
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT(WIFEXITED(status));
    CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
    CU_ASSERT(tc_check(d, LEN, 5));
    tc_free(d);
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_unmap_revokes),
    GDRX_TEST_CASE(test_refused_unmaps_revoke_nothing),
    GDRX_TEST_CASE(test_ipc_close_revokes),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite suites[] = {
    { "vmm_free", NULL, NULL, cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    return tc_main(argc, argv, suites, NULL);
}
