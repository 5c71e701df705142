/*
 * test_reloc.c - the relocator on hand-assembled prologues, and the entry
 * patcher on a hand-assembled function.
 *
 * SPDX-License-Identifier: MIT
 */
#include "test_hooks.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "entry_patch.h"
#include "insn_reloc.h"

/* Source and destination in one mapping, 1 MiB apart: every rel32 reaches. */
#define NEAR_GAP (1u << 20)

struct area {
    uint8_t *src, *dst;
    void    *map;
};

static struct area area_near(const uint8_t *code, size_t n)
{
    struct area a;

    a.map = mmap(NULL, 2 * NEAR_GAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CU_ASSERT_FATAL(a.map != MAP_FAILED);
    a.src = (uint8_t *)a.map + 64;
    a.dst = (uint8_t *)a.map + NEAR_GAP + 128;
    memset(a.src, 0xCC, 256);
    memcpy(a.src, code, n);
    return a;
}

static void area_free(struct area *a)
{
    munmap(a->map, 2 * NEAR_GAP);
}

/* Relocate code (n bytes, at least min covered); returns the result. */
static int reloc(struct area *a, size_t min, struct gdrx_insn_reloc *r)
{
    return gdrx_insn_relocate(a->src, min, a->dst, 256, r);
}

static int32_t rd32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Instructions with nothing position-dependent come out unchanged. */
static void expect_verbatim(const uint8_t *code, size_t n, size_t min)
{
    struct area a = area_near(code, n);
    struct gdrx_insn_reloc r;

    CU_ASSERT_EQUAL_FATAL(reloc(&a, min, &r), 0);
    CU_ASSERT_EQUAL(r.src_len, n);
    CU_ASSERT_EQUAL(r.dst_len, n);
    CU_ASSERT_EQUAL(memcmp(a.dst, code, n), 0);
    area_free(&a);
}

static void test_plain_forms(void)
{
    /* endbr64; push rbp; mov rbp,rsp */
    expect_verbatim((const uint8_t[]){ 0xF3, 0x0F, 0x1E, 0xFA, 0x55, 0x48, 0x89, 0xE5 }, 8, 7);
    /* push r12; push rbx; sub rsp,0x18 (imm8); pop rbx */
    expect_verbatim((const uint8_t[]){ 0x41, 0x54, 0x53, 0x48, 0x83, 0xEC, 0x18, 0x5B }, 8, 8);
    /* sub rsp,0x1000 (imm32); add rsp,8 */
    expect_verbatim((const uint8_t[]){ 0x48, 0x81, 0xEC, 0, 0x10, 0, 0, 0x48, 0x83, 0xC4, 8 }, 11, 8);
    /* xor eax,eax; test rdi,rdi; and esi,0xff (imm32); cmp edx,3 */
    expect_verbatim((const uint8_t[]){ 0x31, 0xC0, 0x48, 0x85, 0xFF, 0x81, 0xE6, 0xFF, 0, 0, 0,
                                       0x83, 0xFA, 3 }, 14, 14);
    /* mov rbx,rdi; mov [rsp+8],rsi (SIB disp8); mov eax,[rdi+0x100] (disp32) */
    expect_verbatim((const uint8_t[]){ 0x48, 0x89, 0xFB, 0x48, 0x89, 0x74, 0x24, 8,
                                       0x8B, 0x87, 0, 1, 0, 0 }, 14, 14);
    /* mov eax, imm32 (our own patch); movabs rax, imm64 */
    expect_verbatim((const uint8_t[]){ 0xB8, 1, 2, 3, 4 }, 5, 5);
    expect_verbatim((const uint8_t[]){ 0x48, 0xB8, 1, 2, 3, 4, 5, 6, 7, 8 }, 10, 7);
    /* lea rdi,[rsi+8]; nop dword [rax+rax*1+0] */
    expect_verbatim((const uint8_t[]){ 0x48, 0x8D, 0x7E, 8, 0x0F, 0x1F, 0x44, 0, 0 }, 9, 9);
}

/* Terminal forms: UCX's far patch (movabs; jmp rax) and jmp r11. */
static void test_jump_register(void)
{
    const uint8_t ucx_far[] = { 0x48, 0xB8, 1, 2, 3, 4, 5, 6, 7, 8, 0xFF, 0xE0 };
    const uint8_t r11[] = { 0x49, 0xBB, 1, 2, 3, 4, 5, 6, 7, 8, 0x41, 0xFF, 0xE3 };
    struct area a = area_near(ucx_far, sizeof(ucx_far));
    struct gdrx_insn_reloc r;

    CU_ASSERT_EQUAL_FATAL(reloc(&a, 12, &r), 0);
    CU_ASSERT_EQUAL(r.src_len, 12);
    CU_ASSERT_TRUE(r.ends_flow);
    CU_ASSERT_EQUAL(memcmp(a.dst, ucx_far, 12), 0);
    area_free(&a);
    a = area_near(r11, sizeof(r11));
    CU_ASSERT_EQUAL_FATAL(reloc(&a, 11, &r), 0);
    CU_ASSERT_EQUAL(r.src_len, 13);
    CU_ASSERT_TRUE(r.ends_flow);
    area_free(&a);
}

/* rip-relative operands keep their absolute target. */
static void test_rip_relative(void)
{
    /* mov rax,[rip+0x40]; lea rdi,[rip-0x20]; cmp dword [rip+0x10],5 (imm8 after disp) */
    const uint8_t code[] = { 0x48, 0x8B, 0x05, 0x40, 0, 0, 0,
                             0x48, 0x8D, 0x3D, 0xE0, 0xFF, 0xFF, 0xFF,
                             0x83, 0x3D, 0x10, 0, 0, 0, 5 };
    struct area a = area_near(code, sizeof(code));
    struct gdrx_insn_reloc r;

    CU_ASSERT_EQUAL_FATAL(reloc(&a, sizeof(code), &r), 0);
    CU_ASSERT_EQUAL(r.dst_len, sizeof(code));
    /* target = insn end + disp, at the source and at the destination */
    CU_ASSERT_EQUAL((intptr_t)(a.dst + 7) + rd32(a.dst + 3), (intptr_t)(a.src + 7) + 0x40);
    CU_ASSERT_EQUAL((intptr_t)(a.dst + 14) + rd32(a.dst + 10), (intptr_t)(a.src + 14) - 0x20);
    CU_ASSERT_EQUAL((intptr_t)(a.dst + 21) + rd32(a.dst + 16), (intptr_t)(a.src + 21) + 0x10);
    CU_ASSERT_EQUAL(a.dst[20], 5);
    area_free(&a);
}

/* A rip-relative operand out of rel32 reach from the destination. */
static void test_rip_out_of_reach(void)
{
    const uint8_t code[] = { 0x48, 0x8B, 0x05, 0, 0, 0, 0 };
    uint8_t *src = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *far = malloc(256); /* the heap lies far from the mmap area */
    struct gdrx_insn_reloc r;

    CU_ASSERT_FATAL(src != MAP_FAILED && far);
    memcpy(src, code, sizeof(code));
    if ((uintptr_t)far - (uintptr_t)src < (1ull << 32) || (uintptr_t)src - (uintptr_t)far < (1ull << 32))
        CU_FAIL("heap and mmap area unexpectedly close");
    CU_ASSERT_EQUAL(gdrx_insn_relocate(src, 7, far, 256, &r), -ERANGE);
    free(far);
    munmap(src, 4096);
}

/* E9 and EB become E9 to the same target; E8 and Jcc keep theirs. */
static void test_relative_branches(void)
{
    const uint8_t jmp32[] = { 0xE9, 0x00, 0x01, 0, 0 };
    const uint8_t jmp8[] = { 0x55, 0xEB, 0x20 };
    /* push rbp; call +0x200; je +0x30; push rbx */
    const uint8_t mixed[] = { 0x55, 0xE8, 0, 2, 0, 0, 0x74, 0x30, 0x53 };
    struct area a = area_near(jmp32, sizeof(jmp32));
    struct gdrx_insn_reloc r;

    CU_ASSERT_EQUAL_FATAL(reloc(&a, 5, &r), 0);
    CU_ASSERT_TRUE(r.ends_flow);
    CU_ASSERT_EQUAL(a.dst[0], 0xE9);
    CU_ASSERT_EQUAL((intptr_t)(a.dst + 5) + rd32(a.dst + 1), (intptr_t)(a.src + 5) + 0x100);
    area_free(&a);

    a = area_near(jmp8, sizeof(jmp8));
    CU_ASSERT_EQUAL_FATAL(reloc(&a, 7, &r), 0); /* stops at the jump */
    CU_ASSERT_EQUAL(r.src_len, 3);
    CU_ASSERT_TRUE(r.ends_flow);
    CU_ASSERT_EQUAL(a.dst[1], 0xE9);
    CU_ASSERT_EQUAL((intptr_t)(a.dst + 6) + rd32(a.dst + 2), (intptr_t)(a.src + 3) + 0x20);
    area_free(&a);

    a = area_near(mixed, sizeof(mixed));
    CU_ASSERT_EQUAL_FATAL(reloc(&a, 9, &r), 0);
    CU_ASSERT_FALSE(r.ends_flow);
    CU_ASSERT_EQUAL(a.dst[1], 0xE8);
    CU_ASSERT_EQUAL((intptr_t)(a.dst + 6) + rd32(a.dst + 2), (intptr_t)(a.src + 6) + 0x200);
    CU_ASSERT_EQUAL(a.dst[6], 0x0F);
    CU_ASSERT_EQUAL(a.dst[7], 0x84);
    CU_ASSERT_EQUAL((intptr_t)(a.dst + 12) + rd32(a.dst + 8), (intptr_t)(a.src + 8) + 0x30);
    CU_ASSERT_EQUAL(a.dst[12], 0x53);
    CU_ASSERT_EQUAL(r.dst_len, 13);
    area_free(&a);
}

/* Far destinations get absolute forms. */
static void test_far_branches(void)
{
    const uint8_t code[] = { 0x75, 0x10, 0xE9, 0, 1, 0, 0 }; /* jne +0x10; jmp +0x100 */
    uint8_t *src = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *far = malloc(256);
    struct gdrx_insn_reloc r;
    uint64_t t;

    CU_ASSERT_FATAL(src != MAP_FAILED && far);
    memcpy(src, code, sizeof(code));
    CU_ASSERT_EQUAL_FATAL(gdrx_insn_relocate(src, 7, far, 256, &r), 0);
    /* jne -> je over `jmp [rip+0]; .quad target` */
    CU_ASSERT_EQUAL(far[0], 0x74);
    CU_ASSERT_EQUAL(far[1], 14);
    CU_ASSERT_EQUAL(far[2], 0xFF);
    CU_ASSERT_EQUAL(far[3], 0x25);
    memcpy(&t, far + 8, 8);
    CU_ASSERT_EQUAL(t, (uint64_t)(uintptr_t)(src + 2 + 0x10));
    CU_ASSERT_EQUAL(far[16], 0xFF);
    memcpy(&t, far + 22, 8);
    CU_ASSERT_EQUAL(t, (uint64_t)(uintptr_t)(src + 7 + 0x100));
    CU_ASSERT_EQUAL(r.dst_len, 30);
    free(far);
    munmap(src, 4096);
}

static void test_refusals(void)
{
    struct gdrx_insn_reloc r;
    /* push rbp; hlt (not a prologue instruction) */
    struct area a = area_near((const uint8_t[]){ 0x55, 0xF4, 0x90, 0x90, 0x90, 0x90, 0x90 }, 7);

    CU_ASSERT_EQUAL(reloc(&a, 7, &r), -ENOTSUP);
    area_free(&a);
    /* push rbp; jne back to the entry (inside the bytes to be overwritten) */
    a = area_near((const uint8_t[]){ 0x55, 0x75, 0xFD, 0x90, 0x90, 0x90, 0x90 }, 7);
    CU_ASSERT_EQUAL(reloc(&a, 7, &r), -ENOTSUP);
    area_free(&a);
    /* far jmp through memory (FF /5) */
    a = area_near((const uint8_t[]){ 0xFF, 0x2D, 0, 0, 0, 0, 0x90 }, 7);
    CU_ASSERT_EQUAL(reloc(&a, 7, &r), -ENOTSUP);
    area_free(&a);
    /* no room */
    a = area_near((const uint8_t[]){ 0x55, 0x48, 0x89, 0xE5, 0x53 }, 5);
    CU_ASSERT_EQUAL(gdrx_insn_relocate(a.src, 5, a.dst, 3, &r), -ENOSPC);
    area_free(&a);
}

/* ------------------------------------------------- the entry patcher */

static int hook_calls;

/* Entered from the stub with the record in the 6th argument. */
static int hook_add_one(int x, uintptr_t a2, uintptr_t a3, uintptr_t a4, uintptr_t a5,
                        const struct gdrx_entry_patch *p)
{
    (void)a2; (void)a3; (void)a4; (void)a5;
    hook_calls++;
    return ((int (*)(int))p->original)(x) + 1;
}

/* push rbp; mov rbp,rsp; lea eax,[rdi+41]; pop rbp; ret   => x + 41 */
static const uint8_t plus41[] = { 0x55, 0x48, 0x89, 0xE5, 0x8D, 0x47, 41, 0x5D, 0xC3 };

static uint8_t *code_page(const uint8_t *code, size_t n, size_t at)
{
    uint8_t *pg = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    CU_ASSERT_FATAL(pg != MAP_FAILED);
    memset(pg, 0xCC, 4096);
    memcpy(pg + at, code, n);
    CU_ASSERT_FATAL(mprotect(pg, 4096, PROT_READ | PROT_EXEC) == 0);
    return pg;
}

static void poke(void *at)
{
    *(volatile uint8_t *)at = 0x90;
}

/* Only the first byte changes, to E9; the jump lands where the function's
 * next four bytes say, and disarming puts the byte back. */
static void test_entry_patch_runs(void)
{
    static struct gdrx_entry_patch p;
    uint8_t *pg = code_page(plus41, sizeof(plus41), 0);
    int (*fn)(int) = (int (*)(int))(void *)pg;
    int32_t d;

    CU_ASSERT_EQUAL(fn(1), 42);
    hook_calls = 0;
    CU_ASSERT_EQUAL_FATAL(gdrx_entry_patch(pg, (void *)hook_add_one, 0, &p), 0);
    CU_ASSERT_EQUAL(pg[0], 0xE9);
    CU_ASSERT_EQUAL(memcmp(pg + 1, plus41 + 1, sizeof(plus41) - 1), 0); /* the rest untouched */
    CU_ASSERT_EQUAL(p.form, GDRX_PATCH_LANDING);
    memcpy(&d, plus41 + 1, 4);
    CU_ASSERT_EQUAL(gdrx_test_is_mapped(pg + 5 + d), 1); /* the landing */
    CU_ASSERT_EQUAL(fn(1), 43);
    CU_ASSERT_EQUAL(hook_calls, 1);
    /* the page is back to read+execute: a write faults */
    CU_ASSERT_EQUAL(gdrx_test_signal_of(poke, pg), SIGSEGV);
    CU_ASSERT_EQUAL(gdrx_entry_disarm(&p), 0);
    CU_ASSERT_EQUAL(memcmp(pg, plus41, sizeof(plus41)), 0);
    CU_ASSERT_EQUAL(fn(1), 42);
    CU_ASSERT_EQUAL(gdrx_entry_disarm(&p), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_entry_arm(&p), 0);
    CU_ASSERT_EQUAL(fn(1), 43);
    CU_ASSERT_EQUAL(hook_calls, 2);
}

/* A function whose landing address someone else has mapped is refused and
 * left as it was: `mov eax, 16` makes it land 21 bytes in, on its own page. */
static void test_entry_patch_landing_taken(void)
{
    static struct gdrx_entry_patch p;
    const uint8_t code[] = { 0xB8, 16, 0, 0, 0, 0xC3 };
    uint8_t *pg = code_page(code, sizeof(code), 0);

    CU_ASSERT_EQUAL(gdrx_entry_patch(pg, (void *)hook_add_one, 0, &p), -EADDRINUSE);
    CU_ASSERT_EQUAL(memcmp(pg, code, sizeof(code)), 0);
    CU_ASSERT_EQUAL(p.state, GDRX_PATCH_NONE);
}

/* The property the one-byte patch exists for: a thread stopped after the
 * first instruction while the patch lands runs on through the original
 * bytes.  The function parks its caller in a loop over bytes 1-16, which
 * any patch of more than one byte would overwrite:
 *   0: push rbp
 *   1: mov byte [rip+arrived], 1     (7 bytes)
 *   8: cmp byte [rip+go], 0          (7 bytes)
 *  15: je 1
 *  17: lea eax, [rdi+41]; pop rbp; ret */
static volatile uint8_t *park_flags; /* [0] go, [1] arrived */
static volatile int parked_result;

static void *parked_caller(void *fn)
{
    parked_result = ((int (*)(int))fn)(1);
    return NULL;
}

static void test_entry_patch_thread_inside(void)
{
    static struct gdrx_entry_patch p;
    uint8_t *pg = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t code[] = { 0x55, 0xC6, 0x05, 0, 0, 0, 0, 1, 0x80, 0x3D, 0, 0, 0, 0, 0,
                       0x74, 0xF0, 0x8D, 0x47, 41, 0x5D, 0xC3 };
    int32_t arrived = 4096 + 1 - 8, go = 4096 - 15; /* rip-relative, to the flag page */
    pthread_t t;

    CU_ASSERT_FATAL(pg != MAP_FAILED);
    memcpy(code + 3, &arrived, 4);
    memcpy(code + 10, &go, 4);
    memset(pg, 0xCC, 4096);
    memcpy(pg, code, sizeof(code));
    park_flags = pg + 4096;
    CU_ASSERT_FATAL(mprotect(pg, 4096, PROT_READ | PROT_EXEC) == 0);
    parked_result = 0;
    hook_calls = 0;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, parked_caller, pg), 0);
    while (!park_flags[1])
        sched_yield();
    CU_ASSERT_EQUAL(gdrx_entry_patch(pg, (void *)hook_add_one, 0, &p), 0);
    CU_ASSERT_EQUAL(memcmp(pg + 1, code + 1, sizeof(code) - 1), 0);
    park_flags[0] = 1;
    CU_ASSERT_EQUAL(pthread_join(t, NULL), 0);
    CU_ASSERT_EQUAL(parked_result, 42); /* the original: it entered before the patch */
    CU_ASSERT_EQUAL(hook_calls, 0);
    CU_ASSERT_EQUAL(((int (*)(int))(void *)pg)(1), 43); /* a new call is hooked */
    CU_ASSERT_EQUAL(hook_calls, 1);
}

/* Patching over another patcher's `jmp rel32` keeps its one instruction
 * (only the displacement changes) and chains to it. */
static void test_entry_patch_foreign_jmp(void)
{
    static struct gdrx_entry_patch p;
    uint8_t *pg = code_page(plus41, sizeof(plus41), 64);
    uint8_t jmp[8] = { 0xE9 };
    int32_t d = 64 - 5; /* from pg to pg + 64: the "other hook" */
    int (*fn)(int) = (int (*)(int))(void *)pg;

    memcpy(jmp + 1, &d, 4);
    CU_ASSERT_FATAL(mprotect(pg, 4096, PROT_READ | PROT_WRITE) == 0);
    memcpy(pg, jmp, 5);
    CU_ASSERT_FATAL(mprotect(pg, 4096, PROT_READ | PROT_EXEC) == 0);
    CU_ASSERT_EQUAL(fn(2), 43);
    hook_calls = 0;
    CU_ASSERT_EQUAL_FATAL(gdrx_entry_patch(pg, (void *)hook_add_one, 0, &p), 0);
    CU_ASSERT_EQUAL(pg[0], 0xE9);
    CU_ASSERT_EQUAL(p.form, GDRX_PATCH_JMP_REL32);
    CU_ASSERT_EQUAL(pg[5], 0xCC); /* nothing written past the 5 bytes */
    CU_ASSERT_EQUAL(fn(2), 44);
    CU_ASSERT_EQUAL(hook_calls, 1);
    CU_ASSERT_EQUAL(gdrx_entry_disarm(&p), 0);
    CU_ASSERT_EQUAL(memcmp(pg, jmp, 5), 0);
    CU_ASSERT_EQUAL(fn(2), 43);
}

/* The stub passes five integer arguments through untouched (cuMemMap,
 * cuMemAllocPitch and cuGetProcAddress_v2 have five) and the record in
 * the sixth. */
static long hook_five(long a, long b, long c, long d, long e, const struct gdrx_entry_patch *p)
{
    hook_calls++;
    return 2 * ((long (*)(long, long, long, long, long))p->original)(a, b, c, d, e);
}

static void test_entry_patch_five_args(void)
{
    static struct gdrx_entry_patch p;
    /* lea rax,[rdi+rsi]; add rax,rdx; add rax,rcx; add rax,r8; ret */
    const uint8_t sum5[] = { 0x48, 0x8D, 0x04, 0x37, 0x48, 0x01, 0xD0, 0x48, 0x01, 0xC8,
                             0x4C, 0x01, 0xC0, 0xC3 };
    uint8_t *pg = code_page(sum5, sizeof(sum5), 32);
    long (*fn)(long, long, long, long, long) = (long (*)(long, long, long, long, long))(void *)(pg + 32);

    CU_ASSERT_EQUAL(fn(1, 20, 300, 4000, 50000), 54321);
    hook_calls = 0;
    CU_ASSERT_EQUAL_FATAL(gdrx_entry_patch(pg + 32, (void *)hook_five, 7, &p), 0);
    CU_ASSERT_EQUAL(p.kind, 7);
    CU_ASSERT_EQUAL(fn(1, 20, 300, 4000, 50000), 2 * 54321);
    CU_ASSERT_EQUAL(hook_calls, 1);
}

const struct gdrx_test_case reloc_cases[] = {
    GDRX_TEST_CASE(test_plain_forms),
    GDRX_TEST_CASE(test_jump_register),
    GDRX_TEST_CASE(test_rip_relative),
    GDRX_TEST_CASE(test_rip_out_of_reach),
    GDRX_TEST_CASE(test_relative_branches),
    GDRX_TEST_CASE(test_far_branches),
    GDRX_TEST_CASE(test_refusals),
    GDRX_TEST_CASE(test_entry_patch_runs),
    GDRX_TEST_CASE(test_entry_patch_five_args),
    GDRX_TEST_CASE(test_entry_patch_landing_taken),
    GDRX_TEST_CASE(test_entry_patch_thread_inside),
    GDRX_TEST_CASE(test_entry_patch_foreign_jmp),
    GDRX_TEST_END
};
