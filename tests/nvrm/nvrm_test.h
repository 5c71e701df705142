/*
 * nvrm_test.h - helpers shared by the nvrm backend suites.
 *
 * SPDX-License-Identifier: MIT
 *
 * The suites run under the RM-ioctl emulator (tests/nvrm/emu): main()
 * calls nvt_under_emulator(), which re-executes the program with
 * LD_PRELOAD=<sanitizer runtime>:libnvrm_emu.so the first time.  CUDA is
 * the simulated GPU (tests/sim), whose sim_rm.c mirrors its memory into
 * the emulator like the real libcuda does.
 */
#ifndef NVRM_TEST_H
#define NVRM_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "gdrx_test.h"
#include "nvrm_emu.h"
#include "nvrm_reexec.h"
#include "tcuda.h"

/* The emulator is preloaded, not linked: its functions are found at run
 * time (main() makes sure it is there before any case runs). */
#pragma weak nvrm_emu_present
#pragma weak nvrm_emu_set_versions
#pragma weak nvrm_emu_set_gpus
#pragma weak nvrm_emu_sim_gpus
#pragma weak nvrm_emu_bind_memory
#pragma weak nvrm_emu_fail
#pragma weak nvrm_emu_fail_clear
#pragma weak nvrm_emu_get_stats
#pragma weak nvrm_emu_set_bar1

/* A failed precondition ends the case (gdrx_test.h). */
#define NVT_REQUIRE(cond) GDRX_REQUIRE(cond)

/* NV_STATUS values the suites inject (nvrm_emu_fail). */
#define NV_ERR_INSUFFICIENT_RESOURCES   0x1Au
#define NV_ERR_INSUFFICIENT_PERMISSIONS 0x1Bu
#define NV_ERR_INVALID_ARGUMENT         0x1Fu
#define NV_ERR_NO_MEMORY                0x51u
#define NV_ERR_NOT_SUPPORTED            0x56u

#define KiB ((size_t)1024)
#define MiB ((size_t)1024 * 1024)


/* tc_setup(dev) after telling the sim how many GPUs to have (0 = keep). */
int nvt_setup(int ngpus, int dev);

/* gdrx_open forcing the nvrm backend; returns its error. */
int nvt_open(gdrx_t *g);

/* Emulator counters now. */
struct nvrm_emu_stats nvt_stats(void);

/* The driver version the suite runs against: NVRM_EMU_VERSION (make check
 * runs the suites once per branch, tests/nvrm/local.mk), else the
 * emulator's default 580.159.04; and it as major << 16 | minor. */
const char *nvt_version(void);
uint64_t nvt_version_code(void);
/* 1 if that version's branch is checked only against headers (the
 * backend runs its open self-test there), 0 if validated on hardware. */
int nvt_branch_checked(void);
/* Assert that every RM mapping, BAR1 byte, CPU mapping and memory handle
 * made since `before` was given back. */
void nvt_assert_released(const struct nvrm_emu_stats *before);

/* Capture what is written to stderr between begin and end (returned
 * string, caller frees; never NULL). */
int   nvt_capture_begin(void);
char *nvt_capture_end(int token);

/* Pin [p, p+len), map it and return the CPU address of p (CU_FAIL and
 * NULL on error). */
void *nvt_pin_map(gdrx_t g, CUdeviceptr p, size_t len, gdrx_pin_t *pin);

/* The usual start of a case: nvt_setup(0, 0), nvt_open, and a fresh
 * allocation of len bytes pinned and mapped whole.  0, or -1 after
 * CU_FAIL. */
struct nvt_mapped {
    gdrx_t      g;
    CUdeviceptr p;
    gdrx_pin_t  pin;
    void       *cpu;
};
int nvt_mapped_alloc(struct nvt_mapped *m, size_t len);

/* Write pattern seed through the mapping with gdrx_copy_to_mapping and
 * check it through CUDA; then the reverse with seed + 1.  1 if both hold. */
int nvt_roundtrip(gdrx_pin_t pin, void *cpu, CUdeviceptr p, size_t len, uint32_t seed);

/* Run the program `name` built in tests/nvrm with one argument, in this
 * process's environment; its exit status, or -1 if it could not run or
 * died of a signal. */
int nvt_run_helper(const char *name, const char *arg);

/* The sim's test helper (sim_rm.c): export the RM object behind p. */
int nvt_sim_export_fd(CUdeviceptr p, int *fd);
/* And: from `at` on, the object holding it is a second RM object's pages. */
int nvt_sim_split(CUdeviceptr at);

#endif /* NVRM_TEST_H */
