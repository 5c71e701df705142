/*
 * cpu_features.c - runtime detection of the instructions the copy variants
 * use.  A CPUID feature bit alone is not enough: the OS must also save the
 * register state (XCR0), or the first AVX instruction raises #UD.
 *
 * SPDX-License-Identifier: MIT
 */
#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1ul << 1) /* the arm64 kernel's hwcap bit */
#endif
#endif
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cpu_features.h"

#define BIT(n) (1u << (n))

/* CPUID.1 */
#define L1_EDX_SSE2    BIT(26)
#define L1_ECX_SSE41   BIT(19)
#define L1_ECX_OSXSAVE BIT(27)
#define L1_ECX_AVX     BIT(28)
/* CPUID.(7,0) */
#define L7_EBX_AVX2      BIT(5)
#define L7_EBX_AVX512F   BIT(16)
#define L7_EBX_AVX512BW  BIT(30)
#define L7_EBX_AVX512VL  BIT(31)
#define L7_ECX_MOVDIR64B BIT(28)

/* XCR0: bit 1 SSE (XMM), bit 2 AVX (YMM upper halves); bits 5-7 opmask,
 * ZMM_Hi256 and Hi16_ZMM. */
#define XCR0_AVX_STATE    0x06ull
#define XCR0_AVX512_STATE 0xe6ull

void gdrx_cpu_decide(const struct gdrx_cpuid_words *w, uint64_t xcr0,
                     struct gdrx_cpu_features *out)
{
    memset(out, 0, sizeof(*out));
    uint32_t l7_ebx = w->max_leaf >= 7 ? w->leaf7_ebx : 0;
    uint32_t l7_ecx = w->max_leaf >= 7 ? w->leaf7_ecx : 0;

    /* SSE state is enabled by every x86-64 OS (the ABI passes floats in
     * XMM registers), so SSE needs no XCR0 check. */
    out->sse2 = !!(w->leaf1_edx & L1_EDX_SSE2);
    out->sse41 = out->sse2 && (w->leaf1_ecx & L1_ECX_SSE41);
    out->osxsave = !!(w->leaf1_ecx & L1_ECX_OSXSAVE);
    out->xcr0 = out->osxsave ? xcr0 : 0;
    out->os_avx = (out->xcr0 & XCR0_AVX_STATE) == XCR0_AVX_STATE;
    out->os_avx512 = (out->xcr0 & XCR0_AVX512_STATE) == XCR0_AVX512_STATE;

    out->avx = out->os_avx && (w->leaf1_ecx & L1_ECX_AVX);
    out->avx2 = out->avx && (l7_ebx & L7_EBX_AVX2);
    out->avx512f = out->avx && out->os_avx512 && (l7_ebx & L7_EBX_AVX512F);
    out->avx512bw = out->avx512f && (l7_ebx & L7_EBX_AVX512BW);
    out->avx512vl = out->avx512f && (l7_ebx & L7_EBX_AVX512VL);
    /* MOVDIR64B moves 64 bytes through memory, no register state. */
    out->movdir64b = !!(l7_ecx & L7_ECX_MOVDIR64B);
}

#if defined(__x86_64__)
static uint64_t read_xcr0(void)
{
    uint32_t lo, hi;
    /* xgetbv with ECX=0; spelled as asm so no -mxsave is needed here. */
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static struct gdrx_cpu_features detected;
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;

static void detect(void)
{
    struct gdrx_cpuid_words w = {0};
    unsigned a, b, c, d;

    w.max_leaf = __get_cpuid_max(0, NULL);
    if (w.max_leaf >= 1 && __get_cpuid(1, &a, &b, &c, &d)) {
        w.leaf1_ecx = c;
        w.leaf1_edx = d;
    }
    if (w.max_leaf >= 7 && __get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        w.leaf7_ebx = b;
        w.leaf7_ecx = c;
    }
    uint64_t xcr0 = (w.leaf1_ecx & L1_ECX_OSXSAVE) ? read_xcr0() : 0;
    gdrx_cpu_decide(&w, xcr0, &detected);
}
#elif defined(__aarch64__)
static struct gdrx_cpu_features detected;
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;

/* None of the x86 flags; Advanced SIMD is part of every Linux AArch64 ABI,
 * but the kernel says so in HWCAP and we believe it. */
static void detect(void)
{
    memset(&detected, 0, sizeof(detected));
    detected.neon = !!(getauxval(AT_HWCAP) & HWCAP_ASIMD);
}
#endif

const struct gdrx_cpu_features *gdrx_cpu_features(void)
{
    pthread_once(&detect_once, detect);
    return &detected;
}

char *gdrx_cpu_features_str(const struct gdrx_cpu_features *f, char *buf, size_t size)
{
    const struct { unsigned on; const char *name; } flags[] = {
        { f->sse2, "sse2" },         { f->sse41, "sse4.1" },
        { f->avx, "avx" },           { f->avx2, "avx2" },
        { f->avx512f, "avx512f" },   { f->avx512bw, "avx512bw" },
        { f->avx512vl, "avx512vl" }, { f->movdir64b, "movdir64b" },
        { f->neon, "neon" },
    };
    size_t used = 0;

    if (size)
        buf[0] = '\0';
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
        if (!flags[i].on || used >= size)
            continue;
        int n = snprintf(buf + used, size - used, "%s%s", used ? " " : "", flags[i].name);
        if (n > 0)
            used += (size_t)n;
    }
    return buf;
}
