/*
 * fence_flow.c - follow every path through a routine's machine code and
 * check where its fences are (see fence_flow.h).  The code is read with
 * binutils objdump (symbols with -t, instructions with -d) from the file
 * the routine was loaded from, so what is checked is what runs.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fence_flow.h"

#include <dlfcn.h>
#include <link.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef GDRX_TEST_OBJDUMP
#define GDRX_TEST_OBJDUMP "objdump"
#endif

enum kind { K_OTHER, K_RET, K_JMP, K_JCC, K_CALL, K_STOP, K_SFENCE, K_LFENCE, K_MFENCE };

struct insn {
    uint64_t      addr;
    uint64_t      target;   /* direct branch target, else 0 */
    unsigned char kind;
    unsigned char range;    /* 0: the routine, 1: its .cold part */
    unsigned char store;    /* a store that a later SFENCE must follow */
    unsigned char vload;    /* a vector load through a pointer */
    unsigned char noreturn; /* a call that does not come back */
    char          text[96];
};

struct code {
    struct insn *v;
    size_t       n, cap;
    int          frame_rbp; /* %rbp is the frame pointer (mov %rsp,%rbp) */
};

static void say(struct fence_flow *out, const char *fmt, ...)
{
    va_list ap;

    if (out->problem[0])
        return; /* keep the first */
    va_start(ap, fmt);
    vsnprintf(out->problem, sizeof(out->problem), fmt, ap);
    va_end(ap);
}

/* ---- reading objdump's output ---- */

static FILE *objdump(const char *args, const char *path)
{
    char cmd[8192];

    if (strchr(path, '\''))
        return NULL;
    snprintf(cmd, sizeof(cmd), "%s %s '%s' 2>/dev/null", GDRX_TEST_OBJDUMP, args, path);
    return popen(cmd, "r");
}

/* The function symbol at addr, and its .cold part if it has one:
 * "<addr> <flags> F <section>\t<size> [.hidden] <name>". */
static int find_symbols(const char *path, uint64_t addr, char *name, size_t name_size,
                        uint64_t range[2][2])
{
    char line[1024], cold[160] = "";
    int found = 0;

    for (int pass = 0; pass < 2 && (pass == 0 || found); pass++) {
        FILE *fp = objdump("-t", path);
        if (!fp)
            return -1;
        while (fgets(line, sizeof(line), fp)) {
            char *tab = strchr(line, '\t'), *end;
            if (!tab || !strstr(line, " F "))
                continue;
            uint64_t value = strtoull(line, &end, 16);
            uint64_t size = strtoull(tab + 1, NULL, 16);
            line[strcspn(line, "\n")] = '\0';
            const char *sym = strrchr(line, ' ') + 1;
            if (pass == 0 && value == addr && size && !found) {
                snprintf(name, name_size, "%s", sym);
                snprintf(cold, sizeof(cold), "%s.cold", sym);
                range[0][0] = value, range[0][1] = value + size;
                found = 1;
            } else if (pass == 1 && strcmp(sym, cold) == 0 && size) {
                range[1][0] = value, range[1][1] = value + size;
            }
        }
        pclose(fp);
    }
    return found ? 0 : -1;
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Split AT&T operands at the commas outside parentheses. */
static int split_operands(char *ops, char *opv[4])
{
    int n = 0, depth = 0;

    if (!*ops)
        return 0;
    opv[n++] = ops;
    for (char *p = ops; *p; p++) {
        if (*p == '(')
            depth++;
        else if (*p == ')')
            depth--;
        else if (*p == ',' && depth == 0 && n < 4) {
            *p = '\0';
            opv[n++] = p + 1;
        }
    }
    return n;
}

/* A memory operand other than the stack, static data (%rip), thread
 * data (%fs/%gs) and ASan's shadow memory (displacement 0x7fff8000). */
static int pointer_memory(const struct code *c, const char *op)
{
    const char *paren = strchr(op, '(');

    if (!paren)
        return 0;
    if (starts(op, "%fs:") || starts(op, "%gs:"))
        return 0;
    if (starts(paren, "(%rsp") || starts(paren, "(%rip") || starts(paren, "(%esp") ||
        (c->frame_rbp && starts(paren, "(%rbp")))
        return 0;
    unsigned long long disp = strtoull(op, NULL, 16);
    return !(disp >= 0x7fff8000ull && disp < 0x7fff9000ull);
}

static int is_vector_reg(const char *op)
{
    return starts(op, "%xmm") || starts(op, "%ymm") || starts(op, "%zmm");
}

/* Instructions whose memory operand is only read, though it comes last. */
static int reads_last_operand(const char *mn)
{
    static const char *const readers[] = {
        "cmp", "test", "bt", "ucomi", "comi", "vucomi", "vcomi", "ptest", "vptest",
        "prefetch", "nop", "clflush", "clwb", "lea", "push",
    };
    for (size_t i = 0; i < sizeof(readers) / sizeof(readers[0]); i++)
        if (starts(mn, readers[i]))
            return 1;
    return 0;
}

static int noreturn_callee(const char *text)
{
    const char *sym = strchr(text, '<');

    if (!sym)
        return 0;
    if (strstr(sym, "__asan_report") && !strstr(sym, "noabort"))
        return 1;
    return strstr(sym, "_abort") || strstr(sym, "<abort") || strstr(sym, "__stack_chk_fail") ||
           strstr(sym, "<exit") || strstr(sym, "<_exit") || strstr(sym, "__assert_fail") ||
           strstr(sym, "builtin_unreachable") || strstr(sym, "_Unwind_Resume");
}

static void classify(struct code *c, struct insn *in, const char *text)
{
    static const char *const prefixes[] = { "notrack", "bnd", "rep", "repz", "repnz", "repe",
                                            "repne", "lock", "data16", "addr32", "cs", "ds" };
    char buf[256], *p = buf, *opv[4];

    snprintf(in->text, sizeof(in->text), "%.*s", (int)strcspn(text, "\n"), text);
    snprintf(buf, sizeof(buf), "%s", text);
    buf[strcspn(buf, "#<\n")] = '\0'; /* comment, symbolic target */
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        size_t len = strcspn(p, " \t");
        int prefix = 0;
        for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
            if (strlen(prefixes[i]) == len && strncmp(p, prefixes[i], len) == 0 && p[len])
                prefix = 1;
        if (!prefix)
            break;
        p += len;
    }
    char *mn = p;
    p += strcspn(p, " \t");
    if (*p)
        *p++ = '\0';
    while (*p == ' ' || *p == '\t')
        p++;
    p[strcspn(p, " \t")] = '\0'; /* AT&T operands hold no blanks */
    if (strcmp(mn, "mov") == 0 && strcmp(p, "%rsp,%rbp") == 0)
        c->frame_rbp = 1;

    if (starts(mn, "ret")) {
        in->kind = K_RET;
    } else if (starts(mn, "jmp")) {
        in->kind = K_JMP;
        in->target = *p == '*' ? 0 : strtoull(p, NULL, 16);
    } else if (mn[0] == 'j' || starts(mn, "loop")) {
        in->kind = K_JCC;
        in->target = strtoull(p, NULL, 16);
    } else if (starts(mn, "call")) {
        /* A callee may store: memcpy for LIBC, the steps of an unoptimised
         * build (there the steps' loads are not seen; the inlined line
         * copy's loads still are). */
        in->kind = K_CALL;
        in->noreturn = (unsigned char)noreturn_callee(text);
        in->store = 1;
    } else if (strcmp(mn, "ud2") == 0 || strcmp(mn, "hlt") == 0 || strcmp(mn, "int3") == 0) {
        in->kind = K_STOP;
    } else if (strcmp(mn, "sfence") == 0) {
        in->kind = K_SFENCE;
    } else if (strcmp(mn, "lfence") == 0) {
        in->kind = K_LFENCE;
    } else if (strcmp(mn, "mfence") == 0) {
        in->kind = K_MFENCE;
    } else {
        int n = split_operands(p, opv);
        int nt = (starts(mn, "movnt") || starts(mn, "vmovnt")) && !strstr(mn, "ntdqa");
        nt |= starts(mn, "movdir") || strstr(mn, "maskmov") != NULL;
        /* A copy stores data it loaded, never a constant: a store of an
         * immediate is the sanitizers' bookkeeping, not the copy's. */
        int plain = n >= 1 && pointer_memory(c, opv[n - 1]) && !reads_last_operand(mn) &&
                    !(n >= 2 && opv[0][0] == '$');
        in->store = (unsigned char)(nt || plain);
        for (int i = 0; n >= 2 && is_vector_reg(opv[n - 1]) && i < n - 1; i++)
            if (pointer_memory(c, opv[i]))
                in->vload = 1;
    }
}

static int disassemble(const char *path, const uint64_t r[2], unsigned char range,
                       struct code *c)
{
    char args[128], line[512];

    snprintf(args, sizeof(args), "-d -w --no-show-raw-insn --start-address=0x%llx "
             "--stop-address=0x%llx", (unsigned long long)r[0], (unsigned long long)r[1]);
    FILE *fp = objdump(args, path);
    if (!fp)
        return -1;
    while (fgets(line, sizeof(line), fp)) {
        char *end, *p = line + strspn(line, " ");
        uint64_t addr = strtoull(p, &end, 16);
        if (end == p || end[0] != ':' || end[1] != '\t' || addr < r[0] || addr >= r[1])
            continue;
        if (c->n == c->cap) {
            size_t cap = c->cap ? 2 * c->cap : 1024;
            struct insn *v = realloc(c->v, cap * sizeof(*v));
            if (!v)
                break;
            c->v = v, c->cap = cap;
        }
        struct insn *in = &c->v[c->n++];
        memset(in, 0, sizeof(*in));
        in->addr = addr;
        in->range = range;
        classify(c, in, end + 2);
    }
    return pclose(fp) == 0 ? 0 : -1;
}

/* ---- following the paths ---- */

#define S_FENCED 1u  /* an SFENCE ran after the last store */
#define L_FENCED 2u  /* an LFENCE ran */
#define REACHED  4u

static long index_of(const struct code *c, uint64_t addr)
{
    size_t lo = 0, hi = c->n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c->v[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->n && c->v[lo].addr == addr ? (long)lo : -1;
}

static unsigned transfer(const struct insn *in, unsigned st)
{
    if (in->kind == K_SFENCE || in->kind == K_MFENCE)
        st |= S_FENCED;
    if (in->kind == K_LFENCE || in->kind == K_MFENCE)
        st |= L_FENCED;
    if (in->store)
        st &= ~S_FENCED;
    return st;
}

/* The instructions control can reach next from i (-1: none); *leaves is
 * set when a branch of i leaves the routine. */
static int successors(const struct code *c, size_t i, long next[2], int *leaves)
{
    const struct insn *in = &c->v[i];
    int n = 0;
    int falls = i + 1 < c->n && c->v[i + 1].range == in->range;

    *leaves = 0;
    switch (in->kind) {
    case K_RET:
    case K_STOP:
        return 0;
    case K_CALL:
        if (!in->noreturn && falls)
            next[n++] = (long)i + 1;
        return n;
    case K_JMP:
    case K_JCC: {
        long t = in->target ? index_of(c, in->target) : -1;
        if (t >= 0)
            next[n++] = t;
        else
            *leaves = 1;
        if (in->kind == K_JCC && falls)
            next[n++] = (long)i + 1;
        return n;
    }
    default:
        if (falls)
            next[n++] = (long)i + 1;
        return n;
    }
}

/* Forward "on every path" analysis: a state bit holds at an instruction
 * only if it holds at the end of each of its reached predecessors. */
static void follow(const struct code *c, size_t entry, unsigned *state)
{
    size_t *work = malloc((c->n + 1) * sizeof(*work) * 2), top = 0;
    unsigned char *queued = calloc(c->n, 1);

    if (!work || !queued || !c->n)
        goto out;
    state[entry] = REACHED;
    work[top++] = entry;
    queued[entry] = 1;
    while (top) {
        size_t i = work[--top];
        queued[i] = 0;
        unsigned st = transfer(&c->v[i], state[i]);
        long next[2];
        int leaves;
        int n = successors(c, i, next, &leaves);
        for (int k = 0; k < n; k++) {
            size_t j = (size_t)next[k];
            unsigned meet = state[j] & REACHED ? (state[j] & st) : st;
            if (meet != state[j]) {
                state[j] = meet;
                if (!queued[j]) {
                    queued[j] = 1;
                    work[top++] = j;
                }
            }
        }
    }
out:
    free(work);
    free(queued);
}

static void judge(const struct code *c, const unsigned *state, int need_lfence,
                  struct fence_flow *out)
{
    for (size_t i = 0; i < c->n; i++) {
        const struct insn *in = &c->v[i];
        long next[2];
        int leaves;

        out->stores += in->store;
        out->vector_loads += in->vload;
        if (!(state[i] & REACHED))
            continue;
        successors(c, i, next, &leaves);
        if (in->kind == K_RET || leaves) {
            out->exits++;
            if (!(state[i] & S_FENCED))
                say(out, "%s: exit at %#llx (%s) is reachable with no SFENCE after the "
                    "last store", out->name, (unsigned long long)in->addr, in->text);
        }
        if (need_lfence && in->vload && !(state[i] & L_FENCED))
            say(out, "%s: load at %#llx (%s) is reachable before any LFENCE", out->name,
                (unsigned long long)in->addr, in->text);
    }
}

static int by_addr(const void *a, const void *b)
{
    const struct insn *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int fence_flow_check(const void *fn, int need_lfence, struct fence_flow *out)
{
    Dl_info info;
    struct link_map *lm = NULL;
    uint64_t range[2][2] = { { 0, 0 }, { 0, 0 } };
    struct code c = { 0 };
    int rc = -1;

    memset(out, 0, sizeof(*out));
    if (!dladdr1(fn, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm) {
        say(out, "%p is in no loaded object", fn);
        return -1;
    }
    /* The main program has no name in its link map; its path is read here
     * (objdump opening /proc/self/exe would open itself). */
    char exe[4096];
    const char *path = lm->l_name;
    if (!path || !path[0]) {
        ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (len <= 0) {
            say(out, "cannot read /proc/self/exe");
            return -1;
        }
        exe[len] = '\0';
        path = exe;
    }
    uint64_t addr = (uint64_t)(uintptr_t)fn - (uint64_t)lm->l_addr;
    if (find_symbols(path, addr, out->name, sizeof(out->name), range) != 0) {
        say(out, "no function symbol at %#llx in %s (is %s installed?)",
            (unsigned long long)addr, path, GDRX_TEST_OBJDUMP);
        return -1;
    }
    for (unsigned char r = 0; r < 2; r++) {
        if (range[r][1] > range[r][0] && disassemble(path, range[r], r, &c) != 0) {
            say(out, "%s -d failed on %s", GDRX_TEST_OBJDUMP, path);
            goto out;
        }
    }
    qsort(c.v, c.n, sizeof(*c.v), by_addr);
    out->insns = (unsigned)c.n;
    long entry = index_of(&c, range[0][0]);
    unsigned *state = calloc(c.n + 1, sizeof(*state));
    if (!state || entry < 0) {
        say(out, "%s: no instruction read at its start", out->name);
        free(state);
        goto out;
    }
    follow(&c, (size_t)entry, state);
    judge(&c, state, need_lfence, out);
    free(state);
    rc = out->problem[0] ? 1 : 0;
out:
    free(c.v);
    return rc;
}
