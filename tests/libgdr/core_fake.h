/*
 * core_fake.h - a fake CUDA driver and a fake backend for the white-box
 * suite of libgdrx's core (test_core_unit), which links the core's sources
 * built with GDRX_CORE_TEST_SEAM instead of the library.
 *
 * SPDX-License-Identifier: MIT
 *
 * Device memory is a table of fake allocations (no memory behind them);
 * the backend maps each pin to anonymous memory at a CPU address the test
 * may choose, so that a test can make two pins share one address.
 */
#ifndef GDRX_CORE_FAKE_H
#define GDRX_CORE_FAKE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core.h"

#define FAKE_MAX_ALLOCS 8

struct fake {
    /* CUDA: live allocations [base, base+size) with a buffer id each. */
    struct { uint64_t base; size_t size; uint64_t buffer_id; } alloc[FAKE_MAX_ALLOCS];
    uint64_t next_buffer_id;
    /* Backend: calls seen, and where the next map() puts its mapping
     * (NULL: anywhere). */
    int   pins, unpins, maps, unmaps;
    void *next_map_at;
    /* Copies the fast path let through (the copy routines record them). */
    int   copies;
    /* core_test_mmap fails with this errno while > 0 (PROT_NONE replacement). */
    int   revoke_mmap_errno;
    /* Set by core_test_publishing when it saw an even counter. */
    int   publishing_seen, publishing_even;
};

extern struct fake fk;
extern const struct gdrx_backend_ops fake_ops;

/* A context on the fake backend (no handle: the core's pin code needs
 * only these fields). */
void fake_ctx_init(struct gdrx_ctx *ctx);
void fake_ctx_fini(struct gdrx_ctx *ctx);

/* A fake allocation at base; returns its slot. */
int fake_alloc(uint64_t base, size_t size);
/* Forget it, as a free the hooks did not see would. */
void fake_free(uint64_t base);

/* Pin [dptr, dptr+len) and map it: the pin and the CPU pointer of dptr. */
struct gdrx_pin *fake_pin_map(struct gdrx_ctx *ctx, uint64_t dptr, size_t len, uint64_t *id,
                              void **cpu);

/* The pin an id names, locked. */
struct gdrx_pin *fake_locked(struct gdrx_ctx *ctx, uint64_t id);

/* The seams of the core's sources (GDRX_CORE_TEST_SEAM): pin_state.c's
 * PROT_NONE replacement (core_fake.c) and fastpath.c's publication, called
 * while the counter is odd (the test program). */
void *core_test_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void core_test_publishing(struct gdrx_pin *pin);

/* 1 if [p, p+len) is mapped in this process (mincore). */
int fake_is_mapped(const void *p, size_t len);

#endif /* GDRX_CORE_FAKE_H */
