/*
 * nvrm_reexec.h - run a test program under the RM-ioctl emulator
 * (tests/nvrm/emu), and find files built in tests/nvrm.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef NVRM_REEXEC_H
#define NVRM_REEXEC_H

#include <stddef.h>

/* Re-exec under the emulator unless already there (LD_PRELOAD=<sanitizer
 * runtime>:libnvrm_emu.so); returns 0 when the program runs under it, -1
 * (message printed) when it cannot. */
int nvt_under_emulator(char **argv);

/* nvt_under_emulator, then GDRX_BACKEND=nvrm: for a libgdrx suite built
 * to run on the nvrm backend (tc_main's before). */
int nvt_use_nvrm(char **argv);

/* A file built in tests/nvrm: $GDRX_TEST_BUILDDIR/tests/nvrm/<rel>, else
 * found from this program's own directory.  rel is "name" or ".libs/name".
 * 0 and the path in out, or -1. */
int nvt_find_built(const char *rel, char *out, size_t size);

#endif /* NVRM_REEXEC_H */
