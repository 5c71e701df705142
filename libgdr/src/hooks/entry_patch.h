/*
 * entry_patch.h - redirect an x86-64 function by rewriting its first bytes.
 *
 * SPDX-License-Identifier: MIT
 *
 * The entry becomes `mov eax, imm32; jmp rax` (B8 imm32, FF E0): imm32 is
 * the address of a small stub below 2 GiB that loads the patch record into
 * r9 and jumps to the hook.  That form is one UCX's bistro relocator can
 * move (a plain `mov r32, imm32` then the unchanged `jmp rax`), so UCX may
 * patch the function after us and still reach us.  An entry that already
 * starts with another patcher's `jmp rel32` keeps its 5 bytes: it is
 * pointed at a pad near the function instead, and the old jump becomes
 * what we call as the original.
 *
 * The hook is entered with the caller's arguments in place and the record
 * in r9, so it must be declared with the record as its 6th integer
 * argument; only functions of at most 5 integer arguments can be hooked.
 */
#ifndef GDRX_ENTRY_PATCH_H
#define GDRX_ENTRY_PATCH_H

#include <stddef.h>
#include <stdint.h>

struct gdrx_entry_patch {
    void *target;    /* the patched function entry */
    void *original;  /* call this to run the function as it was */
    void *hook;
    int   kind;      /* the caller's tag (which hook this is) */
};

/*
 * Patch target to enter hook; *p is filled and must stay valid for the
 * life of the process (the stub points to it).  Returns 0, -ENOTSUP (an
 * instruction we cannot relocate, an entry straddling a 16-byte block, not
 * x86-64; logged at debug with the bytes), -ENOMEM (no code memory within
 * reach), or -errno of mprotect.  Nothing is changed on error.
 */
int gdrx_entry_patch(void *target, void *hook, int kind, struct gdrx_entry_patch *p);

/* Store n (<= 16) bytes at code address at with one atomic write, the page
 * writable only meanwhile; for patches and tests.  0, -ENOTSUP if the
 * bytes straddle an aligned 16-byte block, or -errno. */
int gdrx_entry_write(void *at, const uint8_t *bytes, size_t n);

#endif /* GDRX_ENTRY_PATCH_H */
