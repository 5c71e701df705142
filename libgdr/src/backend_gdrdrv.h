/*
 * backend_gdrdrv.h - the version rules of the gdrdrv backend, apart so that
 * tests can check them without a device.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_BACKEND_GDRDRV_H
#define GDRX_BACKEND_GDRDRV_H

#include <stdint.h>

/* The gdrdrv ABI level libgdrx speaks as a client (major<<16 | minor): we
 * use every ioctl up to 2.5 and fall back below it. */
#define GDRX_GDRDRV_CLIENT_VERSION ((2u << 16) | 5u)
/* The oldest driver we accept. */
#define GDRX_GDRDRV_MIN_DRIVER     ((2u << 16) | 0u)

/* The GET_VERSION handshake, both ways: 0 if a driver reporting these
 * versions can be used, -EPROTO if it is too old or wants a newer client. */
int gdrx_gdrdrv_check_version(uint32_t driver_version, uint32_t min_lib_version);

#endif /* GDRX_BACKEND_GDRDRV_H */
