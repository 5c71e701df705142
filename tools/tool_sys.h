/*
 * tool_sys.h - small host facts and helpers the tools share.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_TOOL_SYS_H
#define GDRX_TOOL_SYS_H

#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC_RAW in nanoseconds (not slewed by NTP). */
uint64_t tool_now_ns(void);

/* "model name" of /proc/cpuinfo, or "unknown CPU". */
void tool_cpu_name(char *buf, size_t len);

/* The NVIDIA kernel driver version (/sys/module/nvidia/version), or
 * "not loaded". */
void tool_nvidia_kmod_version(char *buf, size_t len);

/* The NUMA node of a PCI device ("0000:41:00.0", any case), or -1. */
int tool_pci_numa_node(const char *busid);

/*
 * Pin the calling thread: to `cpu` if >= 0; for TOOL_CPU_AUTO (-1) to an
 * allowed CPU of NUMA node `node` (the last of them: CPU 0 and the first
 * ones take the interrupts), or of any node when it has none; -2: leave
 * the affinity alone.  0 with the CPU in *chosen (-1 when not pinned), or
 * -1 with the reason in why.
 */
int tool_pin_cpu(int cpu, int node, int *chosen, char *why, size_t whylen);

/* The NUMA node of a CPU, or -1. */
int tool_cpu_node(int cpu);

#endif /* GDRX_TOOL_SYS_H */
