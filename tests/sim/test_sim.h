/*
 * test_sim.h - helpers shared by the simulated GPU's own test files.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef TEST_SIM_H
#define TEST_SIM_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "gdrx_test.h"
#include "simcu.h"

#define MiB ((size_t)1 << 20)
#define KiB ((size_t)1 << 10)

/* cuInit, retain device `dev`'s primary context and make it current. */
void sim_test_setup_device(int dev);
/* The same for device 0. */
void sim_test_setup(void);
/* cuMemAlloc that must succeed. */
CUdeviceptr sim_test_alloc(size_t size);
/* Fill buf with a pattern derived from seed / check it; returns 1 if equal. */
void sim_test_fill(void *buf, size_t len, uint64_t seed);
int sim_test_check(const void *buf, size_t len, uint64_t seed);
/* Whether this process still has a file descriptor or a mapping of object
 * `id`'s memfd (the memfd backing names them simcu-obj-<id>). */
int sim_test_fd_held(uint64_t object_id);
int sim_test_mapping_held(uint64_t object_id);
/* 1 if reading / writing the byte at addr kills a child with SIGSEGV. */
int sim_test_read_faults(uint64_t addr);
int sim_test_write_faults(uint64_t addr);

extern const struct gdrx_test_case sim_memory_cases[];
extern const struct gdrx_test_case sim_api_cases[];
extern const struct gdrx_test_case sim_stream_cases[];
extern const struct gdrx_test_case sim_context_cases[];
extern const struct gdrx_test_case sim_vmm_cases[];
extern const struct gdrx_test_case sim_cudart_cases[];
extern const struct gdrx_test_case sim_host_cases[];
extern const struct gdrx_test_case sim_pointer_cases[];

#endif /* TEST_SIM_H */
