/*
 * entry_patch.c - function-entry patching: trampolines, stubs, the atomic
 * write.  See entry_patch.h for the form of the patch and why.
 *
 * SPDX-License-Identifier: MIT
 *
 * Each patch gets two private pages, each written while only we can reach
 * it and made read+execute before anything jumps there (no page is ever
 * writable and executable while code runs in it):
 *  - the trampoline page, within rel32 reach of the function (relocated
 *    instructions keep their rip-relative operands): the moved entry
 *    instructions, then a jump back past them; and a pad for the 5-byte
 *    form;
 *  - the stub page, below 2 GiB (MAP_32BIT) so its address fits the
 *    imm32 of `mov eax, imm32`: r9 = record, jump to the hook.
 */
#include "entry_patch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "insn_reloc.h"
#include "log.h"
#include "proc_maps.h"

#define PAGE 4096u
#define PAD_OFFSET 2048u         /* of the pad in the trampoline page */
#define ENTRY_LEN 7              /* B8 imm32 FF E0 */
#define FOREIGN_JMP_LEN 5        /* E9 rel32 */
#define NEAR_REACH (1u << 30)    /* trampoline within 1 GiB: operands stay in reach */
#define NEAR_STEP (1u << 20)

/* movabs r9, record; movabs r11, hook; jmp r11 */
static void write_stub(uint8_t *at, const struct gdrx_entry_patch *p, void *hook)
{
    uint8_t code[23] = { 0x49, 0xB9, [10] = 0x49, 0xBB, [20] = 0x41, 0xFF, 0xE3 };
    uintptr_t rec = (uintptr_t)p, h = (uintptr_t)hook;

    memcpy(code + 2, &rec, 8);
    memcpy(code + 12, &h, 8);
    memcpy(at, code, sizeof(code));
}

static void *map_code(void *hint, int flags)
{
    void *m = mmap(hint, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);

    return m == MAP_FAILED ? NULL : m;
}

/* A page within NEAR_REACH of target, searching outwards (below first:
 * the free space of the mmap area lies under the libraries). */
static void *map_near(uintptr_t target)
{
    uintptr_t base = target & ~(uintptr_t)(NEAR_STEP - 1);

    for (uintptr_t d = NEAR_STEP; d < NEAR_REACH; d += NEAR_STEP) {
        uintptr_t cand[2] = { base - d, base + d };
        for (int i = 0; i < 2; i++) {
            if (cand[i] < 0x10000 || cand[i] + PAGE > (1ull << 47))
                continue;
            void *m = map_code((void *)cand[i], MAP_FIXED_NOREPLACE);
            if (m == (void *)cand[i])
                return m;
            if (m) /* a kernel without NOREPLACE treats it as a hint */
                munmap(m, PAGE);
        }
    }
    return NULL;
}

struct block16 {
    uint64_t w[2];
};

static bool cas16(void *at, struct block16 *old, const struct block16 *val)
{
    bool ok;

    __asm__ __volatile__("lock cmpxchg16b %1"
                         : "=@ccz"(ok), "+m"(*(volatile struct block16 *)at),
                           "+a"(old->w[0]), "+d"(old->w[1])
                         : "b"(val->w[0]), "c"(val->w[1])
                         : "memory");
    return ok;
}

static void store_block(uintptr_t blk, size_t width, size_t off, const uint8_t *bytes, size_t n)
{
    if (width == 8) {
        uint64_t v;
        memcpy(&v, (const void *)blk, sizeof(v));
        memcpy((uint8_t *)&v + off, bytes, n);
        /* One aligned 8-byte store (atomic on x86-64), written in asm so
         * that a sanitizer does not instrument a store into library code. */
        __asm__ __volatile__("movq %1, %0" : "=m"(*(volatile uint64_t *)blk) : "r"(v) : "memory");
        return;
    }
    struct block16 old, val;
    memcpy(&old, (const void *)blk, sizeof(old));
    do {
        val = old;
        memcpy((uint8_t *)&val + off, bytes, n);
    } while (!cas16((void *)blk, &old, &val));
}

int gdrx_entry_write(void *at, const uint8_t *bytes, size_t n)
{
    uintptr_t a = (uintptr_t)at, blk, page;
    size_t width;
    int prot;

    if (!at || !bytes || n == 0 || n > 16)
        return -EINVAL;
    if ((a & 7) + n <= 8)
        width = 8;
    else if ((a & 15) + n <= 16)
        width = 16;
    else
        return -ENOTSUP;
    blk = a & ~(uintptr_t)(width - 1);
    page = a & ~(uintptr_t)(PAGE - 1);
    if ((prot = gdrx_maps_prot(a)) < 0)
        return prot;
    /* Keep execute: other threads may be running code on this page. */
    if (!(prot & PROT_WRITE) &&
        mprotect((void *)page, PAGE, prot | PROT_READ | PROT_WRITE) != 0)
        return -errno;
    store_block(blk, width, a - blk, bytes, n);
    if (!(prot & PROT_WRITE) && mprotect((void *)page, PAGE, prot) != 0)
        gdrx_warn("cannot restore the protection of %#lx (errno %d)", (unsigned long)page, errno);
    return 0;
}

static void log_refusal(const void *target, int rc)
{
    const uint8_t *b = target;
    char hex[16 * 3 + 1];

    if (gdrx_log_level() < GDRX_LOG_DEBUG)
        return;
    for (int i = 0; i < 16; i++)
        snprintf(hex + 3 * i, 4, " %02x", b[i]);
    gdrx_dbg("cannot patch %p (%d): code%s", target, rc, hex);
}

static int build_trampoline(uint8_t *tramp, const uint8_t *target, size_t need,
                            struct gdrx_insn_reloc *r)
{
    int rc = gdrx_insn_relocate(target, need, tramp, PAD_OFFSET - 16, r);

    if (rc)
        return rc;
    if (r->src_len < need && r->ends_flow)
        return -ENOTSUP; /* the bytes after the jump may be someone's code */
    if (!r->ends_flow) {
        uint8_t back[14] = { 0xFF, 0x25 };
        uintptr_t to = (uintptr_t)target + r->src_len;
        memcpy(back + 6, &to, 8);
        memcpy(tramp + r->dst_len, back, sizeof(back));
    }
    return 0;
}

static int install(struct gdrx_entry_patch *p, uint8_t *tramp, uint8_t *stub)
{
    uint8_t *target = p->target, patch[ENTRY_LEN];
    bool foreign_jmp = target[0] == 0xE9;
    struct gdrx_insn_reloc r;
    size_t n;
    int rc = build_trampoline(tramp, target, foreign_jmp ? FOREIGN_JMP_LEN : ENTRY_LEN, &r);

    if (rc)
        return rc;
    write_stub(stub, p, p->hook);
    if (foreign_jmp) {
        /* Keep the jump's length: its owner may resume right after it. */
        uint8_t *pad = tramp + PAD_OFFSET;
        int32_t d = (int32_t)((intptr_t)pad - (intptr_t)(target + FOREIGN_JMP_LEN));
        write_stub(pad, p, p->hook);
        patch[0] = 0xE9;
        memcpy(patch + 1, &d, 4);
        n = FOREIGN_JMP_LEN;
    } else {
        uint32_t s = (uint32_t)(uintptr_t)stub;
        patch[0] = 0xB8;
        memcpy(patch + 1, &s, 4);
        patch[5] = 0xFF;
        patch[6] = 0xE0;
        n = ENTRY_LEN;
    }
    if (mprotect(tramp, PAGE, PROT_READ | PROT_EXEC) || mprotect(stub, PAGE, PROT_READ | PROT_EXEC))
        return -errno;
    p->original = tramp;
    /* From here on callers may enter the hook, which calls p->original. */
    return gdrx_entry_write(target, patch, n);
}

int gdrx_entry_patch(void *target, void *hook, int kind, struct gdrx_entry_patch *p)
{
#if defined(__x86_64__)
    uint8_t *tramp, *stub;
    int rc;

    if (!target || !hook || !p)
        return -EINVAL;
    *p = (struct gdrx_entry_patch){ .target = target, .hook = hook, .kind = kind };
    tramp = map_near((uintptr_t)target);
    stub = map_code(NULL, MAP_32BIT);
    if (!tramp || !stub || (uintptr_t)stub > INT32_MAX) {
        rc = -ENOMEM;
    } else {
        rc = install(p, tramp, stub);
    }
    if (rc) {
        log_refusal(target, rc);
        if (tramp)
            munmap(tramp, PAGE);
        if (stub)
            munmap(stub, PAGE);
        p->original = NULL;
    }
    return rc;
#else
    (void)target; (void)hook; (void)kind; (void)p;
    return -ENOTSUP;
#endif
}
