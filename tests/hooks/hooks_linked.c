/*
 * hooks_linked.c - a library that links libgdrx (DT_NEEDED), as a UCX
 * transport would: loading it loads libgdrx with it.
 *
 * SPDX-License-Identifier: MIT
 */
#include "gdrx.h"

int hooks_linked_major(void);

int hooks_linked_major(void)
{
    int major = 0, minor, patch;

    gdrx_get_version(&major, &minor, &patch);
    return major;
}
