/*
 * cpu_features.h - which copy-relevant features the CPU has *and* the OS
 * has enabled: x86's from CPUID and XCR0, aarch64's from the kernel's
 * HWCAP.  Internal to libgdr/src/copy.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_CPU_FEATURES_H
#define GDRX_CPU_FEATURES_H

#include <stddef.h>
#include <stdint.h>

/* The raw CPUID words the decision reads (so tests can inject them). */
struct gdrx_cpuid_words {
    uint32_t max_leaf;  /* CPUID.0:EAX, highest basic leaf */
    uint32_t leaf1_ecx; /* CPUID.1:ECX */
    uint32_t leaf1_edx; /* CPUID.1:EDX */
    uint32_t leaf7_ebx; /* CPUID.(7,0):EBX, ignored if max_leaf < 7 */
    uint32_t leaf7_ecx; /* CPUID.(7,0):ECX, ignored if max_leaf < 7 */
};

/* Each flag is 1 only if the instructions may actually be executed. */
struct gdrx_cpu_features {
    unsigned sse2 : 1;
    unsigned sse41 : 1;
    unsigned osxsave : 1;    /* XGETBV usable; xcr0 below is meaningful */
    unsigned os_avx : 1;     /* XCR0 enables XMM and YMM state */
    unsigned os_avx512 : 1;  /* ... and opmask, ZMM_Hi256, Hi16_ZMM state */
    unsigned avx : 1;
    unsigned avx2 : 1;
    unsigned avx512f : 1;
    unsigned avx512bw : 1;
    unsigned avx512vl : 1;
    unsigned movdir64b : 1;
    unsigned neon : 1;       /* aarch64: Advanced SIMD (HWCAP_ASIMD) */
    uint64_t xcr0;           /* 0 when !osxsave */
};

/* Pure: the features implied by the CPUID words and XCR0.  xcr0 is ignored
 * when CPUID.1:ECX.OSXSAVE is clear (XGETBV would fault there). */
void gdrx_cpu_decide(const struct gdrx_cpuid_words *w, uint64_t xcr0,
                     struct gdrx_cpu_features *out);

/* The running CPU's features, computed once (thread-safe). */
const struct gdrx_cpu_features *gdrx_cpu_features(void);

/* Writes a space-separated list of the flags set (e.g. "sse2 sse4.1 avx2")
 * into buf; returns buf. */
char *gdrx_cpu_features_str(const struct gdrx_cpu_features *f, char *buf, size_t size);

#endif /* GDRX_CPU_FEATURES_H */
