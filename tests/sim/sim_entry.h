/*
 * sim_entry.h - exported entry points with a fixed, plain prologue.
 *
 * SPDX-License-Identifier: MIT
 *
 * The functions libgdrx (and UCX) patch at their entry must start with
 * instructions both relocators know, whatever the compiler and flags make
 * of the C body: gcc -O2 starts them with `lea [rip]` or a tail `jmp`,
 * which UCX 1.13's relocator refuses.  SIM_ENTRY(name, impl) defines the
 * global function `name` as
 *     push %rbp; mov %rsp,%rbp; push %rbx; push %r12; push %r13; push %r14
 *     pop %r14; pop %r13; pop %r12; pop %rbx; pop %rbp; jmp impl
 * (55 48 89 e5 53 41 54 41 55 41 56 41 5e ...), so the first 5 and 12
 * bytes (UCX's near and far patches) end on instruction boundaries with
 * instructions of the kinds a real libcuda prologue has, and ours (one
 * byte) lands where 48 89 e5 53 points, as on the H200's libcuda;
 * `impl` is a static function of the same file that does the work
 * (declared SIM_IMPL so it keeps its name).
 */
#ifndef SIM_ENTRY_H
#define SIM_ENTRY_H

#define SIM_IMPL static __attribute__((used, noipa))

#if defined(__x86_64__)
#define SIM_ENTRY(name, impl)                                                   \
    __asm__(".text\n.globl " #name "\n.type " #name ", @function\n.p2align 4\n" \
            #name ":\n\tpush %rbp\n\tmov %rsp, %rbp\n\tpush %rbx\n\tpush %r12\n"   \
            "\tpush %r13\n\tpush %r14\n\tpop %r14\n\tpop %r13\n\tpop %r12\n"       \
            "\tpop %rbx\n\tpop %rbp\n\tjmp " #impl "\n"                             \
            ".size " #name ", .-" #name "\n")
#elif defined(__aarch64__)
/* Nothing patches entries on aarch64 (libgdr/src/hooks is x86-64 only):
 * a plain tail branch to the static implementation. */
#define SIM_ENTRY(name, impl)                                                   \
    __asm__(".text\n.globl " #name "\n.type " #name ", %function\n.p2align 4\n" \
            #name ":\n\tb " #impl "\n"                                            \
            ".size " #name ", .-" #name "\n")
#else
#error "tests/sim: SIM_ENTRY for x86-64 and aarch64 only"
#endif

#endif /* SIM_ENTRY_H */
