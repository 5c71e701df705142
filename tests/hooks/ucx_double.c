/*
 * ucx_double.c - see ucx_double.h.
 *
 * SPDX-License-Identifier: MIT
 */
#include "ucx_double.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "got_import.h"

int ucx_double_frees;
CUdeviceptr ucx_double_last;

static CUresult (*orig_free)(CUdeviceptr);

static CUresult double_free(CUdeviceptr p)
{
    ucx_double_frees++;
    ucx_double_last = p;
    return orig_free(p);
}

/* Length of one instruction UCX's relocator accepts, or 0. */
static size_t ucx_insn_len(const uint8_t *c)
{
    uint8_t rex = 0, op = c[0];
    size_t i = 1;

    if ((op & 0xF0) == 0x40) {
        rex = op;
        op = c[i++];
    }
    if ((rex == 0 || rex == 0x41) && (op & 0xF0) == 0x50)
        return i;                                       /* push/pop reg */
    if (rex == 0x48 && op == 0x81 && c[i] == 0xEC)
        return i + 5;                                   /* sub rsp, imm32 */
    if (rex == 0x48 && op == 0x89) {
        uint8_t m = c[i];
        if (m == 0xE5)
            return i + 1;                               /* mov rbp, rsp */
        if ((m >> 6) == 1 && (m & 7) == 4)
            return i + 3;                               /* [SIB + disp8] */
        if ((m >> 6) == 2 && (m & 7) == 4)
            return i + 6;
        return 0;
    }
    if (rex == 0 && (op & 0xF8) == 0xB8)
        return i + 4;                                   /* mov r32, imm32 */
    return 0;
}

/* UCX allocates its trampolines anywhere (they jump back through an
 * absolute address); only the near patch's pad must be within 2 GiB. */
static void *map_near(uintptr_t at)
{
    uintptr_t base = at & ~(uintptr_t)0xFFFFF;

    for (uintptr_t d = 1u << 20; d < (1u << 30); d += 1u << 20) {
        uintptr_t cand[2] = { base - d, base + d };
        for (int i = 0; i < 2; i++) {
            void *m = mmap((void *)cand[i], 4096, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
            if (m != MAP_FAILED)
                return m;
        }
    }
    return NULL;
}

static void put_abs_jmp(uint8_t *at, uintptr_t to)
{
    at[0] = 0xFF;
    at[1] = 0x25;
    memset(at + 2, 0, 4);
    memcpy(at + 6, &to, 8);
}

static int bistro(uint8_t *fn, int near)
{
    uint8_t patch[12];
    size_t plen, len = 0, n;
    uint8_t *tramp = map_near((uintptr_t)fn);

    if (!tramp)
        return -ENOMEM;
    if (near) {
        uint8_t *pad = tramp + 2048;
        int32_t d = (int32_t)((intptr_t)pad - (intptr_t)(fn + 5));
        put_abs_jmp(pad, (uintptr_t)double_free);
        patch[0] = 0xE9;
        memcpy(patch + 1, &d, 4);
        plen = 5;
    } else {
        uintptr_t h = (uintptr_t)double_free;
        patch[0] = 0x48;
        patch[1] = 0xB8;
        memcpy(patch + 2, &h, 8);
        patch[10] = 0xFF;
        patch[11] = 0xE0;
        plen = 12;
    }
    while (len < plen) {
        if (!(n = ucx_insn_len(fn + len)))
            return -ENOTSUP;
        len += n;
    }
    memcpy(tramp, fn, len);
    put_abs_jmp(tramp + len, (uintptr_t)fn + len);
    if (mprotect(tramp, 4096, PROT_READ | PROT_EXEC))
        return -errno;
    orig_free = (CUresult (*)(CUdeviceptr))(void *)tramp;
    /* UCX makes the page writable and copies the patch in. */
    uint8_t *pg = (uint8_t *)((uintptr_t)fn & ~(uintptr_t)4095);
    size_t span = (size_t)(fn + plen - pg) > 4096 ? 8192 : 4096;
    if (mprotect(pg, span, PROT_READ | PROT_WRITE | PROT_EXEC))
        return -errno;
    memcpy(fn, patch, plen);
    return mprotect(pg, span, PROT_READ | PROT_EXEC) ? -errno : 0;
}

int ucx_double_install(enum ucx_double_mode mode, void *libcuda)
{
    void *fn = dlsym(libcuda, "cuMemFree_v2");
    void *prev = NULL;

    if (!fn)
        return -ENOENT;
    if (mode != UCX_RELOC)
        return bistro(fn, mode == UCX_BISTRO_NEAR);
    orig_free = (CUresult (*)(CUdeviceptr))fn; /* UCX calls what dlsym finds */
    return gdrx_got_patch_import("libhooks_late", "cuMemFree_v2", (void *)double_free, &prev);
}
