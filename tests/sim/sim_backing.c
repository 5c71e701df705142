/*
 * sim_backing.c - choose the page provider named by $SIMCU_BACKING.
 *
 * SPDX-License-Identifier: MIT
 */
#include "sim_backing.h"

#include <stdlib.h>
#include <string.h>

/* sim_backing_mocknv.c: the mock NVIDIA P2P provider's BAR (qemu guest). */
extern const struct sim_backing_ops sim_backing_mocknv;

static const struct sim_backing_ops *const backings[] = {
    &sim_backing_memfd,
    &sim_backing_mocknv,
};

const struct sim_backing_ops *sim_backing_select(void)
{
    const char *want = getenv("SIMCU_BACKING");

    if (!want || !*want)
        return backings[0];
    for (size_t i = 0; i < sizeof(backings) / sizeof(backings[0]); i++)
        if (strcmp(backings[i]->name, want) == 0)
            return backings[i];
    return NULL;
}
