/*
 * entry_patch.c - one-byte function-entry patches: the landing, the
 * trampoline, the stub.  See entry_patch.h for the form and why.
 *
 * SPDX-License-Identifier: MIT
 *
 * Per patched site (all pages private, written before anything can jump
 * there, and never unmapped: a thread may still be inside them):
 *  - the landing: 14 bytes `jmp [rip+0]; .quad stub` at the fixed address
 *    the site's new E9 reaches.  Its page is mapped with MAP_FIXED_NOREPLACE
 *    (never over anyone's mapping) and shared by the landings that fall in
 *    it; unused bytes are int3, so two landings can never overlap;
 *  - the trampoline page, within 1 GiB of the site (relocated operands stay
 *    in reach): the site's first instruction, relocated, then a jump back to
 *    the second; and the stub at PAD_OFFSET: r9 = record, jump to the hook.
 */
#include "entry_patch.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "insn_reloc.h"
#include "log.h"
#include "proc_maps.h"
#ifdef GDRX_HAVE_FREE_HOOKS
#  include "lock_order.h"
#endif

#define PAGE 4096u
#define PAD_OFFSET 2048u         /* of the stub in the trampoline page */
#define LANDING_LEN 14           /* FF 25 00000000 imm64 */
#define MAX_LANDING_PAGES 128
#define NEAR_REACH (1u << 30)    /* trampoline within 1 GiB: operands stay in reach */
#define NEAR_STEP (1u << 20)
#define USER_TOP (1ull << 47)

static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t landing_pages[MAX_LANDING_PAGES]; /* under patch_lock */
static int n_landing_pages;

/* movabs r9, record; movabs r11, hook; jmp r11 */
static void write_stub(uint8_t *at, const struct gdrx_entry_patch *p, void *hook)
{
    uint8_t code[23] = { 0x49, 0xB9, [10] = 0x49, 0xBB, [20] = 0x41, 0xFF, 0xE3 };
    uintptr_t rec = (uintptr_t)p, h = (uintptr_t)hook;

    memcpy(code + 2, &rec, 8);
    memcpy(code + 12, &h, 8);
    memcpy(at, code, sizeof(code));
}

/* jmp [rip+0]; .quad to */
static void write_abs_jmp(uint8_t *at, uintptr_t to)
{
    uint8_t code[LANDING_LEN] = { 0xFF, 0x25 };

    memcpy(code + 6, &to, 8);
    memcpy(at, code, sizeof(code));
}

static void *map_code(void *hint, int flags)
{
    void *m = mmap(hint, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);

    return m == MAP_FAILED ? NULL : m;
}

/* A new page exactly at addr, over nobody's mapping. */
static void *map_exact(uintptr_t addr)
{
    void *m = map_code((void *)addr, MAP_FIXED_NOREPLACE);

    if (m && m != (void *)addr) { /* a kernel without NOREPLACE treats it as a hint */
        munmap(m, PAGE);
        m = NULL;
    }
    return m;
}

/* A page within NEAR_REACH of target, searching outwards (below first:
 * the free space of the mmap area lies under the libraries). */
static void *map_near(uintptr_t target)
{
    uintptr_t base = target & ~(uintptr_t)(NEAR_STEP - 1);

    for (uintptr_t d = NEAR_STEP; d < NEAR_REACH; d += NEAR_STEP) {
        uintptr_t cand[2] = { base - d, base + d };
        for (int i = 0; i < 2; i++) {
            if (cand[i] < 0x10000 || cand[i] + PAGE > USER_TOP)
                continue;
            void *m = map_exact(cand[i]);
            if (m)
                return m;
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
    if (width == 1) { /* the patch itself: one byte, nothing else rewritten */
        __asm__ __volatile__("movb %1, %0" : "=m"(*(volatile uint8_t *)blk) : "q"(bytes[0]) : "memory");
        return;
    }
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

/* The write, given the page's protection (prot < 0: look it up). */
static int write_code(void *at, const uint8_t *bytes, size_t n, int prot)
{
    uintptr_t a = (uintptr_t)at, blk, page;
    size_t width;

    if (!at || !bytes || n == 0 || n > 16)
        return -EINVAL;
    if (n == 1)
        width = 1;
    else if ((a & 7) + n <= 8)
        width = 8;
    else if ((a & 15) + n <= 16)
        width = 16;
    else
        return -ENOTSUP;
    blk = a & ~(uintptr_t)(width - 1);
    page = a & ~(uintptr_t)(PAGE - 1);
    if (prot < 0 && (prot = gdrx_maps_prot(a)) < 0)
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

/* ----------------------------------------------------------- landings */

static bool landing_page_ours(uintptr_t page)
{
    for (int i = 0; i < n_landing_pages; i++)
        if (landing_pages[i] == page)
            return true;
    return false;
}

/* Make [at, at + LANDING_LEN) ours and unused, mapping its pages as
 * needed; -EADDRINUSE if another mapping or landing has it. */
static int landing_reserve(uintptr_t at)
{
    uintptr_t first = at & ~(uintptr_t)(PAGE - 1), last = (at + LANDING_LEN - 1) & ~(uintptr_t)(PAGE - 1);

    if (at < 0x10000 || at + LANDING_LEN > USER_TOP)
        return -EADDRINUSE;
    for (uintptr_t pg = first; pg <= last; pg += PAGE) {
        if (landing_page_ours(pg))
            continue;
        if (n_landing_pages == MAX_LANDING_PAGES)
            return -ENOMEM;
        uint8_t *m = map_exact(pg);
        if (!m)
            return -EADDRINUSE;
        memset(m, 0xCC, PAGE);
        if (mprotect(m, PAGE, PROT_READ | PROT_EXEC)) {
            munmap(m, PAGE);
            return -errno;
        }
        landing_pages[n_landing_pages++] = pg;
    }
    for (size_t i = 0; i < LANDING_LEN; i++)
        if (((const uint8_t *)at)[i] != 0xCC)
            return -EADDRINUSE;
    return 0;
}

/* Write a landing into reserved bytes: no thread can be there yet, but
 * others may run landings elsewhere on the page, so execute stays on. */
static int landing_write(uintptr_t at, uintptr_t stub)
{
    uintptr_t first = at & ~(uintptr_t)(PAGE - 1);
    size_t span = ((at + LANDING_LEN - 1) & ~(uintptr_t)(PAGE - 1)) - first + PAGE;

    if (mprotect((void *)first, span, PROT_READ | PROT_WRITE | PROT_EXEC))
        return -errno;
    write_abs_jmp((uint8_t *)at, stub);
    return mprotect((void *)first, span, PROT_READ | PROT_EXEC) ? -errno : 0;
}

/* -------------------------------------------------------------- patch */

static int build_trampoline(uint8_t *tramp, const uint8_t *site, struct gdrx_insn_reloc *r)
{
    int rc = gdrx_insn_relocate(site, 1, tramp, PAD_OFFSET - 16, r);

    if (rc)
        return rc;
    if (!r->ends_flow) {
        uint8_t back[LANDING_LEN];
        write_abs_jmp(back, (uintptr_t)site + r->src_len);
        memcpy(tramp + r->dst_len, back, sizeof(back));
    }
    return 0;
}

static uintptr_t landing_of(const uint8_t *site)
{
    int32_t d;

    memcpy(&d, site + 1, 4);
    return (uintptr_t)site + 5 + (intptr_t)d;
}

/* The trampoline page made executable, and the target page's protection
 * kept for every later arm and disarm. */
static int seal(struct gdrx_entry_patch *p, uint8_t *tramp)
{
    int prot;

    if (mprotect(tramp, PAGE, PROT_READ | PROT_EXEC))
        return -errno;
    if ((prot = gdrx_maps_prot((uintptr_t)p->target)) < 0)
        return prot;
    p->target_prot = prot;
    return 0;
}

/* The usual case: only the first byte will change (to E9), and the jump
 * lands where the function's own next four bytes say. */
static int build_landing(struct gdrx_entry_patch *p, uint8_t *site, uint8_t *tramp)
{
    uintptr_t at = landing_of(site);
    struct gdrx_insn_reloc r;
    int rc = 0;

    if ((rc = landing_reserve(at)) || (rc = build_trampoline(tramp, site, &r)))
        return rc;
    write_stub(tramp + PAD_OFFSET, p, p->hook);
    if ((rc = seal(p, tramp)))
        return rc;
    p->form = GDRX_PATCH_LANDING;
    p->armed_field = 0xE9;
    p->saved_field = site[0];
    __atomic_store_n(&p->original, (void *)tramp, __ATOMIC_RELEASE); /* see entry_patch.h */
    return landing_write(at, (uintptr_t)(tramp + PAD_OFFSET));
}

/* Another patcher's entry jump, whose target field we can swap: E9 rel32,
 * or movabs rax, imm64 followed by jmp rax (UCX's near and far forms). */
static enum gdrx_patch_form jump_form(const uint8_t *c)
{
    if (c[0] == 0xE9)
        return GDRX_PATCH_JMP_REL32;
    if (c[0] == 0x48 && c[1] == 0xB8 && c[10] == 0xFF && c[11] == 0xE0)
        return GDRX_PATCH_MOVABS_RAX;
    return GDRX_PATCH_LANDING;
}

/* An entry that is already another patcher's jump keeps its instruction:
 * only its target field will change (to our stub), in one aligned 8- or
 * 16-byte store, and the old target becomes our original.  No thread can
 * be inside one instruction, and the fetch sees the old or the new field
 * (the way JITs retarget their calls). */
static int build_retarget(struct gdrx_entry_patch *p, uint8_t *site, uint8_t *tramp)
{
    uintptr_t stub = (uintptr_t)(tramp + PAD_OFFSET), old;
    int32_t d = 0;
    int rc = 0;

    p->form = jump_form(site);
    if (p->form == GDRX_PATCH_JMP_REL32) {
        if (((uintptr_t)site & 7) + 5 > 8)
            return -ENOTSUP;
        memcpy(&d, site + 1, 4);
        old = (uintptr_t)(site + 5 + d);
        p->armed_field = (uint64_t)(uint32_t)(int32_t)((intptr_t)stub - (intptr_t)(site + 5));
    } else {
        if (((uintptr_t)site & 15) + 10 > 16)
            return -ENOTSUP;
        memcpy(&old, site + 2, 8);
        p->armed_field = stub;
    }
    write_stub(tramp + PAD_OFFSET, p, p->hook);
    if ((rc = seal(p, tramp)))
        return rc;
    __atomic_store_n(&p->original, (void *)old, __ATOMIC_RELEASE); /* see entry_patch.h */
    p->saved_field = p->form == GDRX_PATCH_JMP_REL32 ? (uint64_t)(uint32_t)d : old;
    return 0;
}

int gdrx_entry_patch(void *target, void *hook, int kind, struct gdrx_entry_patch *p)
{
#if defined(__x86_64__)
    uint8_t *site = target, *tramp = NULL;
    int rc;

    if (!target || !hook || !p)
        return -EINVAL;
    *p = (struct gdrx_entry_patch){ .target = target, .hook = hook, .kind = kind };
#ifdef GDRX_HAVE_FREE_HOOKS
    gdrx_lock_order_expect(GDRX_LOCK_CUDA_HOOKS, "entry patch");
#endif
    pthread_mutex_lock(&patch_lock);
    if (!(tramp = map_near((uintptr_t)site)))
        rc = -ENOMEM;
    else
        rc = jump_form(site) != GDRX_PATCH_LANDING ? build_retarget(p, site, tramp)
                                                   : build_landing(p, site, tramp);
    if (rc == 0) {
        p->state = GDRX_PATCH_DISARMED;
        /* From here on callers may enter the hook, which calls p->original. */
        rc = gdrx_entry_arm(p);
    }
    pthread_mutex_unlock(&patch_lock);
    if (rc) {
        log_refusal(target, rc);
        /* A landing written but never reached stays reserved: harmless. */
        if (tramp && p->state == GDRX_PATCH_NONE)
            munmap(tramp, PAGE);
        *p = (struct gdrx_entry_patch){ .target = target, .hook = hook, .kind = kind };
    }
    return rc;
#else
    (void)target; (void)hook; (void)kind; (void)p;
    return -ENOTSUP;
#endif
}

/* Arm or disarm: the first byte (landing form) or the jump's target field
 * (retarget forms). */
static int set_state(struct gdrx_entry_patch *p, enum gdrx_patch_state from,
                     enum gdrx_patch_state to)
{
    uint8_t b[10] = { 0xE9 };
    uint64_t field;
    int rc;

    if (!p || p->state != from)
        return -EINVAL;
    field = to == GDRX_PATCH_ARMED ? p->armed_field : p->saved_field;
    switch (p->form) {
    case GDRX_PATCH_JMP_REL32:
        memcpy(b + 1, &field, 4);
        rc = write_code(p->target, b, 5, p->target_prot);
        break;
    case GDRX_PATCH_MOVABS_RAX:
        b[0] = 0x48;
        b[1] = 0xB8;
        memcpy(b + 2, &field, 8);
        rc = write_code(p->target, b, 10, p->target_prot);
        break;
    default:
        b[0] = (uint8_t)field;
        rc = write_code(p->target, b, 1, p->target_prot);
        break;
    }
    if (rc == 0)
        p->state = to;
    return rc;
}

int gdrx_entry_arm(struct gdrx_entry_patch *p)
{
    return set_state(p, GDRX_PATCH_DISARMED, GDRX_PATCH_ARMED);
}

int gdrx_entry_disarm(struct gdrx_entry_patch *p)
{
    return set_state(p, GDRX_PATCH_ARMED, GDRX_PATCH_DISARMED);
}
