/*
 * copy_arm_order.h - the aarch64 side of copy_driver.h: the host-side
 * 16-B vector and the two fences of gdrx_copy_run(), and why they are
 * what they are.  Included by copy_driver.h only; internal to
 * libgdr/src/copy.
 *
 * SPDX-License-Identifier: MIT
 *
 * The ordering the aarch64 copies rely on
 * ---------------------------------------
 * On arm64 Linux a write-combined mapping of a PCIe BAR (what gdrdrv, the
 * nvrm backend and a dma-buf mmap give for GDRX_MAPPING_WC) has the Normal
 * Non-cacheable attribute, and a "device" mapping Device-nGnRE (or -GRE):
 * both are weakly ordered, unlike x86's WC, whose only reordering is the
 * one SFENCE/LFENCE cover.  What the Armv8-A memory model (Arm ARM, DDI
 * 0487, "Memory ordering" and "Memory barriers") gives and what we add:
 *
 *  1. Host -> mapping.  Stores to Normal-NC may be merged, reordered with
 *     each other and with later stores to other memory (a flag in host
 *     memory the GPU polls, a doorbell, an MPI message that tells the peer
 *     the data is there).  Device-GRE allows Gathering and Reordering too.
 *     gdrx_copy_to_mapping() therefore ends with DSB ST: no instruction
 *     after it executes until every earlier store has *completed*, so
 *     whatever the caller does next to say "done" is issued after the data
 *     left the CPU.  A DMB ST would only order the stores as seen by
 *     observers; the PCIe endpoint's own reads of what it was sent are not
 *     an observer of the CPU's later stores in the same sense, so the
 *     architecture gives no ordering between them without completion.
 *     This is what Linux's wmb() is on arm64 (dsb st).  A cheaper DMB
 *     OSHST is what dma_wmb() uses for coherent DMA memory; whether it is
 *     enough for BAR writes on a given SoC is a measurement on hardware,
 *     not something to assume.
 *  2. Mapping -> host.  Loads from Normal-NC may be performed
 *     speculatively and out of order, so without a barrier they may read
 *     the GPU memory before the caller's earlier load of the flag or event
 *     that said the GPU finished, and return old data.
 *     gdrx_copy_from_mapping() therefore starts with DSB LD (Linux's rmb()
 *     on arm64): every earlier load has completed before any load of the
 *     copy is issued.  It costs a few ns against a PCIe round trip.
 *  3. Alignment.  Device memory faults on an unaligned access, Normal-NC
 *     does not; the driver in copy_driver.h only ever issues naturally
 *     aligned accesses on the mapping side (1/2/4/8 bytes while climbing,
 *     then 16/32/64-B vectors at their own alignment), so both work.
 *  4. Exactly once.  The NEON steps are written as inline LDP/STP of Q
 *     registers with a "memory" clobber, so the compiler neither merges,
 *     splits nor drops them; no LDNP/STNP: a non-temporal pair is a hint
 *     for cacheable memory only, and LDNP may ignore an address
 *     dependency, which we do not want to reason about here.
 *  5. Cached (coherent) mappings, e.g. GPU memory over NVLink-C2C on
 *     Grace: ordinary Normal Write-Back memory in the Inner Shareable
 *     domain; the LIBC variant is memcpy followed by DMB ISH, the same
 *     ordering a lock release gives (copy_select.c).  A pin whose mapping
 *     is GDRX_MAPPING_CACHING gets it both ways, every other pin the NEON
 *     variant (gdrx_copy_for_mapping, copy_dispatch.c, says why).
 */
#ifndef GDRX_COPY_ARM_ORDER_H
#define GDRX_COPY_ARM_ORDER_H

#include <arm_neon.h>

typedef uint8x16_t gdrx_host16;
#define GDRX_HOST16_LOAD(p) vld1q_u8((const uint8_t *)(const void *)(p))
#define GDRX_HOST16_STORE(p, v) vst1q_u8((uint8_t *)(void *)(p), (v))
/* 2. above */
#define GDRX_FENCE_BEFORE_MAP_LOADS() __asm__ volatile("dsb ld" ::: "memory")
/* 1. above (also ends from_mapping: the contract says every routine ends
 * with a store fence, and the host stores of the copy are then complete) */
#define GDRX_FENCE_AFTER_COPY() __asm__ volatile("dsb st" ::: "memory")
/* 5. above */
#define GDRX_FENCE_CACHED() __asm__ volatile("dmb ish" ::: "memory")

#endif /* GDRX_COPY_ARM_ORDER_H */
