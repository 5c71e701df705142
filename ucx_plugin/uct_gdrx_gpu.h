/*
 * uct_gdrx_gpu.h - what the transport tells UCX about the GPUs before its
 * first use, found without loading or initialising CUDA: UCP lists the
 * resources of every component, also of those UCX_TLS leaves out.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_GPU_H
#define UCT_GDRX_GPU_H

#include <gdrx.h>
#include <ucs/sys/topo/base/topo.h>


/* 1 if this process may have a GPU to reach (CUDA's own count where the
 * program initialised it, else libcuda loaded by the program, else an
 * NVIDIA GPU device node) and a backend that backend allows (AUTO: any,
 * or GDRX_BACKEND's) has what it needs, as far as that shows without
 * CUDA (libgdrx's GDRX_PROBE_FLAG_NO_CUDA). */
int uct_gdrx_gpu_reachable(gdrx_backend_t backend);

/* The interface's system device: the GPU of the current CUDA context (as
 * UCX's CUDA transports name it), else the system's only NVIDIA GPU, else
 * UCS_SYS_DEVICE_ID_UNKNOWN. */
ucs_sys_device_t uct_gdrx_gpu_sys_dev(void);

#endif
