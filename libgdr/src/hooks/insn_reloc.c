/*
 * insn_reloc.c - a small x86-64 instruction-length decoder and relocator
 * for function prologues.
 *
 * SPDX-License-Identifier: MIT
 *
 * Known: legacy prefixes 66/F2/F3, REX; one-byte ALU forms with ModRM
 * (add/or/adc/sbb/and/sub/xor/cmp, also their AL/eAX-immediate forms),
 * push/pop reg, push imm, movsxd, imul imm, group 1 (80/81/83), test,
 * xchg, mov (88-8B, B0-BF incl. movabs, C6/C7), lea, nop, ret, group 3
 * (F6/F7), group 5 (FF: inc/dec/call/jmp/push), call/jmp rel32, jmp rel8,
 * Jcc rel8/rel32, and 0F 1E (endbr64), 0F 1F (nop), 0F 40-4F (cmov),
 * 0F AF (imul), 0F B6/B7/BE/BF (movzx/movsx).  rip-relative operands get a
 * new disp32; relative branches are re-encoded (absolute through an
 * 8-byte literal when the target is beyond rel32 reach).
 */
#include "insn_reloc.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

enum insn_kind {
    INSN_PLAIN,     /* copied, with its rip-relative disp32 fixed if any */
    INSN_JMP_REL,   /* E9 / EB */
    INSN_CALL_REL,  /* E8 */
    INSN_JCC_REL,   /* 7x / 0F 8x */
    INSN_END,       /* never falls through: ret, jmp reg/mem */
};

struct insn {
    size_t         len;
    size_t         rip_disp;  /* offset of a rip-relative disp32, or 0 */
    enum insn_kind kind;
    int            cond;      /* Jcc condition (low nibble) */
    int64_t        rel;       /* branch displacement from the next insn */
};

/* ModRM (+SIB, +displacement) at code[i]; returns its length or -1.
 * Sets *rip when the operand is [rip + disp32]. */
static int modrm_len(const uint8_t *code, size_t i, size_t *rip, int *reg)
{
    uint8_t m = code[i];
    int mod = m >> 6, rm = m & 7, n = 1;

    *reg = (m >> 3) & 7;
    if (mod == 3)
        return 1;
    if (rm == 4) {
        uint8_t sib = code[i + 1];
        n++;
        if (mod == 0 && (sib & 7) == 5)
            return n + 4;
    } else if (mod == 0 && rm == 5) {
        *rip = i + 1;
        return 5;
    }
    return n + (mod == 1 ? 1 : mod == 2 ? 4 : 0);
}

static int decode(const uint8_t *code, struct insn *in)
{
    size_t i = 0, rip = 0;
    bool op16 = false, rexw = false;
    int reg = 0, imm = 0, ml;
    uint8_t op;

    memset(in, 0, sizeof(*in));
    while (i < 3 && (code[i] == 0x66 || code[i] == 0xF2 || code[i] == 0xF3))
        op16 |= code[i++] == 0x66;
    if ((code[i] & 0xF0) == 0x40)
        rexw = code[i++] & 8;
    op = code[i++];
    int imm_z = (op16 && !rexw) ? 2 : 4;   /* Iz operand size */

    if (op == 0x0F) {
        uint8_t op2 = code[i++];
        if (op2 >= 0x80 && op2 <= 0x8F) {
            int32_t d;
            memcpy(&d, code + i, 4);
            in->kind = INSN_JCC_REL;
            in->cond = op2 & 0xF;
            in->rel = d;
            in->len = i + 4;
            return 0;
        }
        if (op2 == 0x1E || op2 == 0x1F || (op2 >= 0x40 && op2 <= 0x4F) || op2 == 0xAF ||
            op2 == 0xB6 || op2 == 0xB7 || op2 == 0xBE || op2 == 0xBF)
            goto with_modrm;
        return -ENOTSUP;
    }
    if (op < 0x40 && (op & 7) < 4)
        goto with_modrm;                          /* ALU r/m, r and r, r/m */
    if (op < 0x40 && (op & 7) == 4) {
        in->len = i + 1;                          /* ALU al, imm8 */
        return 0;
    }
    if (op < 0x40 && (op & 7) == 5) {
        in->len = i + (size_t)imm_z;              /* ALU eAX, imm */
        return 0;
    }
    if (op >= 0x50 && op <= 0x5F) {              /* push/pop reg */
        in->len = i;
        return 0;
    }
    switch (op) {
    case 0x63: case 0x84: case 0x85: case 0x86: case 0x87:
    case 0x88: case 0x89: case 0x8A: case 0x8B: case 0x8D:
        goto with_modrm;
    case 0x68: in->len = i + (size_t)imm_z; return 0;
    case 0x6A: in->len = i + 1; return 0;
    case 0x69: case 0x81: case 0xC7: imm = imm_z; goto with_modrm;
    case 0x6B: case 0x80: case 0x83: case 0xC6: imm = 1; goto with_modrm;
    case 0x90: in->len = i; return 0;
    case 0xC3: in->len = i; in->kind = INSN_END; return 0;
    case 0xE8: case 0xE9: {
        int32_t d;
        memcpy(&d, code + i, 4);
        in->kind = op == 0xE8 ? INSN_CALL_REL : INSN_JMP_REL;
        in->rel = d;
        in->len = i + 4;
        return 0;
    }
    case 0xEB:
        in->kind = INSN_JMP_REL;
        in->rel = (int8_t)code[i];
        in->len = i + 1;
        return 0;
    case 0xF6: case 0xF7: case 0xFF:
        goto with_modrm;
    default:
        break;
    }
    if (op >= 0x70 && op <= 0x7F) {
        in->kind = INSN_JCC_REL;
        in->cond = op & 0xF;
        in->rel = (int8_t)code[i];
        in->len = i + 1;
        return 0;
    }
    if (op >= 0xB0 && op <= 0xBF) {              /* mov reg, imm (movabs) */
        in->len = i + (op < 0xB8 ? 1 : rexw ? 8 : (size_t)imm_z);
        return 0;
    }
    return -ENOTSUP;

with_modrm:
    ml = modrm_len(code, i, &rip, &reg);
    if (op == 0xF6 || op == 0xF7) {
        if (reg == 0 || reg == 1)
            imm = op == 0xF6 ? 1 : imm_z;        /* test r/m, imm */
    } else if (op == 0xFF) {
        if (reg == 3 || reg == 5 || reg == 7)
            return -ENOTSUP;                      /* far call/jmp, undefined */
        if (reg == 4)
            in->kind = INSN_END;                  /* jmp r/m */
    } else if ((op == 0xC6 || op == 0xC7) && reg != 0) {
        return -ENOTSUP;
    }
    in->len = i + (size_t)ml + (size_t)imm;
    in->rip_disp = rip;
    return 0;
}

static bool fits_rel32(int64_t d)
{
    return d >= INT32_MIN && d <= INT32_MAX;
}

struct emitter {
    uint8_t *p, *end;
};

static int emit(struct emitter *e, const void *bytes, size_t n)
{
    if ((size_t)(e->end - e->p) < n)
        return -ENOSPC;
    memcpy(e->p, bytes, n);
    e->p += n;
    return 0;
}

/* op rel32 to target, as executed at e->p. */
static int emit_rel32(struct emitter *e, const uint8_t *op, size_t oplen, uintptr_t target)
{
    uint8_t b[6];
    int32_t d = (int32_t)(int64_t)(target - ((uintptr_t)e->p + oplen + 4));

    memcpy(b, op, oplen);
    memcpy(b + oplen, &d, 4);
    return emit(e, b, oplen + 4);
}

/* jmp [rip+0]; .quad target (14 bytes, any distance). */
static int emit_abs_jmp(struct emitter *e, uintptr_t target)
{
    uint8_t b[14] = { 0xFF, 0x25, 0, 0, 0, 0 };

    memcpy(b + 6, &target, 8);
    return emit(e, b, sizeof(b));
}

static int emit_branch(struct emitter *e, const struct insn *in, uintptr_t target)
{
    bool near = fits_rel32((int64_t)(target - ((uintptr_t)e->p + 6)));

    switch (in->kind) {
    case INSN_JMP_REL:
        if (near)
            return emit_rel32(e, (const uint8_t[]){ 0xE9 }, 1, target);
        return emit_abs_jmp(e, target);
    case INSN_CALL_REL: {
        if (near)
            return emit_rel32(e, (const uint8_t[]){ 0xE8 }, 1, target);
        /* call [rip+2]; jmp over the literal; .quad target */
        uint8_t b[16] = { 0xFF, 0x15, 2, 0, 0, 0, 0xEB, 8 };
        memcpy(b + 8, &target, 8);
        return emit(e, b, sizeof(b));
    }
    default: { /* INSN_JCC_REL */
        if (near)
            return emit_rel32(e, (const uint8_t[]){ 0x0F, (uint8_t)(0x80 | in->cond) }, 2, target);
        /* the inverse condition skips an absolute jump */
        uint8_t skip[2] = { (uint8_t)(0x70 | (in->cond ^ 1)), 14 };
        int rc = emit(e, skip, 2);
        return rc ? rc : emit_abs_jmp(e, target);
    }
    }
}

static int emit_plain(struct emitter *e, const uint8_t *src, const struct insn *in)
{
    uint8_t *at = e->p;
    int rc = emit(e, src, in->len);

    if (rc || !in->rip_disp)
        return rc;
    int32_t d;
    memcpy(&d, src + in->rip_disp, 4);
    uintptr_t target = (uintptr_t)src + in->len + (uintptr_t)(int64_t)d;
    int64_t nd = (int64_t)(target - ((uintptr_t)at + in->len));
    if (!fits_rel32(nd))
        return -ERANGE;
    int32_t nd32 = (int32_t)nd;
    memcpy(at + in->rip_disp, &nd32, 4);
    return 0;
}

int gdrx_insn_relocate(const uint8_t *src, size_t min_len, uint8_t *dst, size_t dst_cap,
                       struct gdrx_insn_reloc *out)
{
    struct emitter e = { dst, dst + dst_cap };
    uintptr_t lo = (uintptr_t)src, targets[16];
    size_t off = 0, ntargets = 0;
    bool ended = false;

    while (off < min_len && !ended) {
        struct insn in;
        int rc = decode(src + off, &in);

        if (rc)
            return rc;
        if (in.kind == INSN_PLAIN || in.kind == INSN_END) {
            rc = emit_plain(&e, src + off, &in);
        } else {
            uintptr_t target = (uintptr_t)src + off + in.len + (uintptr_t)in.rel;
            if (ntargets == sizeof(targets) / sizeof(targets[0]))
                return -ENOTSUP;
            targets[ntargets++] = target;
            rc = emit_branch(&e, &in, target);
        }
        if (rc)
            return rc;
        ended = in.kind == INSN_END || in.kind == INSN_JMP_REL;
        off += in.len;
    }
    /* A branch into the bytes about to be overwritten cannot be moved. */
    for (size_t i = 0; i < ntargets; i++)
        if (targets[i] >= lo && targets[i] < lo + off)
            return -ENOTSUP;
    out->src_len = off;
    out->dst_len = (size_t)(e.p - dst);
    out->ends_flow = ended;
    return 0;
}
