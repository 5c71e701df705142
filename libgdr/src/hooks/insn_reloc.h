/*
 * insn_reloc.h - copy the first instructions of an x86-64 function to
 * another address so they still do the same thing there.
 *
 * SPDX-License-Identifier: MIT
 *
 * Only the forms found in function prologues and in other patchers' entry
 * jumps are known (see insn_reloc.c); anything else is refused, so a
 * function we cannot move safely is left alone rather than broken.
 */
#ifndef GDRX_INSN_RELOC_H
#define GDRX_INSN_RELOC_H

#include <stddef.h>
#include <stdint.h>

/* Longest output one instruction can become (an out-of-range Jcc). */
#define GDRX_INSN_RELOC_MAX_GROWTH 32

struct gdrx_insn_reloc {
    size_t src_len;   /* bytes of whole instructions taken from src */
    size_t dst_len;   /* bytes written to dst */
    int    ends_flow; /* the last instruction never falls through (jmp, ret) */
};

/*
 * Relocate whole instructions from src (executing at its own address) to
 * dst (which will execute at dst's address) until at least min_len source
 * bytes are covered, or an instruction that never falls through ends the
 * flow.  Relative branches and rip-relative operands keep their targets.
 * Returns 0, -ENOTSUP for an instruction we do not know or a branch back
 * into the covered bytes, -ERANGE for a rip-relative operand out of reach
 * from dst, -ENOSPC if dst_cap is too small.  dst may hold garbage on error.
 */
int gdrx_insn_relocate(const uint8_t *src, size_t min_len, uint8_t *dst, size_t dst_cap,
                       struct gdrx_insn_reloc *out);

#endif /* GDRX_INSN_RELOC_H */
