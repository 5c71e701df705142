/*
 * pplat.h - what the parts of gdrx-pplat share.
 *
 * SPDX-License-Identifier: MIT
 *
 * The ping-pong: one word `flag` the CPU writes with a new value (1, 2,
 * ...) and one word `answer` the GPU copies it into.  "write": flag in
 * device memory, written by the CPU through the gdrx mapping, answer in
 * host memory.  "poll": flag in host memory, answer in device memory, read
 * by the CPU through the mapping.  A round trip ends when the CPU sees its
 * value in the answer.
 */
#ifndef GDRX_PPLAT_H
#define GDRX_PPLAT_H

#include <stddef.h>
#include <stdint.h>

#include "tool_env.h"

#define PP_STOP   UINT64_MAX
#define PP_WRITE  0 /* the CPU writes the flag through the mapping */
#define PP_POLL   1 /* the CPU polls the answer through the mapping */

/* The echo side: a kernel on the GPU, or a thread on the simulated GPU. */
struct pp_gpu;
struct pp_sim;

struct pp {
    struct tool_env  *e;
    gdrx_pin_t        pin;
    uint8_t          *map;     /* CPU address of dev through the mapping */
    CUdeviceptr       dev;     /* device words: [0] flag (write), [8] answer (poll) */
    volatile uint64_t *host;   /* host words: [0] answer (write), [8] flag (poll) */
    CUdeviceptr       host_dev; /* the GPU's address of host */
    uint64_t          seq;     /* the last value sent */
    int               mode;    /* PP_WRITE / PP_POLL */
    unsigned          spin_yield; /* yield after this many spins (0: never) */
    double            timeout_ns;
    struct pp_gpu    *gpu;     /* one of the two is used */
    struct pp_sim    *sim;
};

/* The embedded fatbin (pplat_image.c); NULL, 0 when built without nvcc. */
const unsigned char *pplat_image(size_t *len);

/* The GPU side (pplat_gpu.c): load the kernel; start it echoing for a
 * mode; stop it.  0, or -1 with the reason printed. */
int pp_gpu_load(struct pp *p);
int pp_gpu_start(struct pp *p);
int pp_gpu_stop(struct pp *p);
void pp_gpu_unload(struct pp *p);
/* Host memory the GPU can reach (cuMemHostAlloc, device-mapped). */
int pp_gpu_host_alloc(struct pp *p);
void pp_gpu_host_free(struct pp *p);

/* The simulated GPU's echo (pplat_sim.c): a thread doing what the kernel
 * does, through the same mapping. */
int pp_sim_start(struct pp *p);
int pp_sim_stop(struct pp *p);

#endif /* GDRX_PPLAT_H */
