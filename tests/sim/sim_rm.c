/*
 * sim_rm.c - mirror of simulated objects into a fake NVIDIA RM.
 *
 * SPDX-License-Identifier: MIT
 *
 * Placeholder: the RM mirror (objects exposed through emulated RM ioctls,
 * and cuIpcGetMemHandle and friends) goes here.  Until then the hooks do
 * nothing.
 */
#include "sim_rm.h"

void simcu_rm_init(int device_count)
{
    (void)device_count;
}

void simcu_rm_object_created(const struct simcu_alloc_info *obj)
{
    (void)obj;
}

void simcu_rm_object_destroyed(uint64_t object_id)
{
    (void)object_id;
}
