/*
 * entry_patch.h - redirect an x86-64 function by rewriting ONE byte of it.
 *
 * SPDX-License-Identifier: MIT
 *
 * Other threads may be running the function while it is patched, and a
 * thread can be stopped between any two of its instructions.  So the patch
 * changes nothing but the first byte of the first instruction, into E9
 * (`jmp rel32`): the four bytes after it, the function's own, are taken as
 * the displacement, and the jump lands at a fixed address (the "landing",
 * function + 5 + those bytes as a signed 32-bit number) where we map a page
 * that jumps on to our stub.  A thread that already ran the first
 * instruction finds every later byte as it was; one that has not runs
 * either the old instruction or the new jump, never a mix (one byte, one
 * store).  This is the only kind of live code change that x86 processors
 * guarantee (Linux's text_poke_bp ends the same way).
 *
 * An entry that is already another patcher's jump (UCX's bistro: `jmp
 * rel32`, or `movabs rax, imm64; jmp rax`) keeps its instruction: only its
 * target field changes, in one aligned 8- or 16-byte store, to our stub,
 * and the old target becomes our original, so every caller passes through
 * both hooks.
 *
 * The hook is entered with the caller's arguments in place and the record
 * in r9, so it must be declared with the record as its 6th integer
 * argument; only functions of at most 5 integer arguments can be hooked.
 * docs/free-interception.md says why this design and what it costs.
 */
#ifndef GDRX_ENTRY_PATCH_H
#define GDRX_ENTRY_PATCH_H

#include <stddef.h>
#include <stdint.h>

enum gdrx_patch_state {
    GDRX_PATCH_NONE,     /* not built */
    GDRX_PATCH_ARMED,    /* the target jumps to the hook */
    GDRX_PATCH_DISARMED, /* the target's bytes are back; pages kept for re-arming */
};

enum gdrx_patch_form {
    GDRX_PATCH_LANDING,    /* first byte -> E9 to the landing (the usual case) */
    GDRX_PATCH_JMP_REL32,  /* another patcher's E9: its displacement swapped */
    GDRX_PATCH_MOVABS_RAX, /* another patcher's movabs rax; jmp rax: its imm64 swapped */
};

struct gdrx_entry_patch {
    void   *target;   /* the patched function entry */
    void   *original; /* call this to run the function as it was; stored
                       * (release) after the rest of the record and before
                       * the entry is armed, so a hook that loads it first
                       * (acquire: gdrx_entry_original) sees the whole record,
                       * and thread sanitizers see why */
    void   *hook;
    int     kind;     /* the caller's tag (which hook this is) */
    int     target_prot; /* PROT_* of the target's page */
    enum gdrx_patch_form form;
    /* What arming and disarming write: the first byte (landing form: E9
     * and the original byte), or the jump's target field (ours, the old). */
    uint64_t armed_field, saved_field;
    enum gdrx_patch_state state;
};

/* The record's original, loaded before any other field (see above). */
static inline void *gdrx_entry_original(const struct gdrx_entry_patch *p)
{
    return __atomic_load_n(&p->original, __ATOMIC_ACQUIRE);
}


/*
 * Patch target to enter hook; *p is filled and must stay valid for the
 * life of the process (the stub points to it).  Returns 0, -ENOTSUP (an
 * instruction we cannot relocate, a jump whose target field is not
 * inside one aligned 8- or 16-byte block, not x86-64; logged at debug with the bytes), -EADDRINUSE (the landing
 * address is taken by another mapping), -ENOMEM (no code memory within
 * reach), or -errno of mprotect.  Nothing is changed on error.
 */
int gdrx_entry_patch(void *target, void *hook, int kind, struct gdrx_entry_patch *p);

/* Put the target's bytes back (disarm) or the jump again (arm); the
 * pages stay, since a thread may still be inside them.  For tests and for
 * re-installation; 0, -EINVAL in the wrong state, or -errno. */
int gdrx_entry_disarm(struct gdrx_entry_patch *p);
int gdrx_entry_arm(struct gdrx_entry_patch *p);

#endif /* GDRX_ENTRY_PATCH_H */
