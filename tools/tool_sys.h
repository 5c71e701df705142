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

/* Parse a byte count: decimal with an optional K, M or G suffix (powers
 * of 1024).  0 on success, -1 if malformed. */
int tool_parse_size(const char *s, size_t *out);

#endif /* GDRX_TOOL_SYS_H */
