/*
 * copy_tests.h - what the tests/copy files share.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_COPY_TESTS_H
#define GDRX_COPY_TESTS_H

#include <stddef.h>
#include <stdint.h>

#include "copy.h"
#include "gdrx_test.h"

/* Which way a routine copies: the mapping is dst (TO) or src (FROM). */
enum test_dir { TEST_TO_MAP, TEST_FROM_MAP };

/* The variant a per-variant case tests: its suite is named after it. */
gdrx_copy_variant_t test_current_variant(void);

/* The routine of the current suite's variant for one direction. */
gdrx_copy_fn test_copy_fn(enum test_dir dir);

/* Fill with pseudo-random bytes, none equal to `avoid`. */
void test_fill_random(uint8_t *p, size_t n, uint64_t *seed, uint8_t avoid);

/* Index of the first byte in [p, p+n) not equal to c, or n. */
size_t test_first_not(const uint8_t *p, size_t n, uint8_t c);

/* `pages` read-write pages with a PROT_NONE page on each side; returns the
 * first read-write page (NULL on failure).  Release with test_unmap_guarded. */
uint8_t *test_map_guarded(size_t pages);
void test_unmap_guarded(uint8_t *p, size_t pages);
size_t test_page_size(void);

/* Cases, by file. */
void test_equal_small_to(void);
void test_equal_small_from(void);
void test_equal_sampled_to(void);
void test_equal_sampled_from(void);
void test_guard_to(void);
void test_guard_from(void);
void test_once_to(void);
void test_once_from(void);
extern const struct gdrx_test_case test_driver_cases[];
extern const struct gdrx_test_case test_dispatch_cases[];
extern const struct gdrx_test_case test_fence_cases[];

#endif /* GDRX_COPY_TESTS_H */
