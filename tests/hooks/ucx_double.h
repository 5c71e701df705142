/*
 * ucx_double.h - a test double that hooks cuMemFree_v2 the way UCX 1.13's
 * CUDA memory hooks do, to check that gdrx and UCX see every free
 * whichever patches first.
 *
 * SPDX-License-Identifier: MIT
 *
 * bistro: relocate the first >= 5 bytes of the function with a relocator
 * that knows only what UCX 1.13-1.22's does (push reg, REX.W 81 /5 sub
 * rsp, REX.W 89 mov to rbp or a SIB operand, B8+r imm32 without REX), then
 * write `jmp rel32` (5 bytes) when the hook is within 2 GiB, else
 * `movabs rax, hook; jmp rax` (12 bytes).
 * reloc: rewrite one object's GOT import to a hook that calls the
 * definition dlsym finds.
 */
#ifndef UCX_DOUBLE_H
#define UCX_DOUBLE_H

#include <cuda.h>
#include <stdint.h>

enum ucx_double_mode {
    UCX_BISTRO_NEAR, /* the hook reached through a pad within 2 GiB: E9 */
    UCX_BISTRO_FAR,  /* the hook's own address: movabs + jmp rax */
    UCX_RELOC,       /* the GOT import of cuMemFree_v2 in libhooks_late */
};

/* Install the double's cuMemFree_v2 hook.  0 or -errno (-ENOTSUP: the
 * entry has an instruction UCX cannot relocate). */
int ucx_double_install(enum ucx_double_mode mode, void *libcuda);

/* Frees the double's hook saw, and the last pointer. */
extern int ucx_double_frees;
extern CUdeviceptr ucx_double_last;

#endif /* UCX_DOUBLE_H */
