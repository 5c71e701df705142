/*
 * sim_rm.h - hooks where a real driver would do NVIDIA RM work.
 *
 * SPDX-License-Identifier: MIT
 *
 * The memory code calls these at the points the real driver talks to the
 * resource manager, with the sim's lock NOT held (they may call
 * simcu_lookup() and CUDA functions).  sim_rm.c implements them.
 */
#ifndef SIM_RM_H
#define SIM_RM_H

#include <stdint.h>

#include "simcu.h"

/* cuInit, once, after the devices exist. */
void simcu_rm_init(int device_count);
/* An object's pages exist, before any allocation in it is returned. */
void simcu_rm_object_created(const struct simcu_alloc_info *obj);
/* cuMemGetHandleForAddressRange succeeded for [dptr, +size) (one object):
 * the export the real libcuda sends the RM.  0, or -errno: CUDA fails. */
int simcu_rm_range_exported(CUdeviceptr dptr, size_t size);
/* cuIpcGetMemHandle of the allocation based at dptr: the RM share and the
 * words of the handle the real libcuda fills from it (the rest is
 * sim_ipc.c's).  CUDA_ERROR_NOT_SUPPORTED without the emulator. */
CUresult simcu_rm_ipc_handle(CUdeviceptr dptr, uint32_t w[16]);
/* An object is being destroyed, before its file is closed. */
void simcu_rm_object_destroyed(uint64_t object_id);

#endif /* SIM_RM_H */
