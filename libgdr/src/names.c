/*
 * names.c - printable names of enum values, and the library version.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stddef.h>

#include "gdrx.h"
#include "export.h"

GDRX_EXPORT const char *gdrx_backend_name(gdrx_backend_t backend)
{
    switch (backend) {
    case GDRX_BACKEND_AUTO:   return "auto";
    case GDRX_BACKEND_GDRDRV: return "gdrdrv";
    case GDRX_BACKEND_NVRM:   return "nvrm";
    case GDRX_BACKEND_DMABUF: return "dmabuf";
    }
    return "unknown";
}

GDRX_EXPORT const char *gdrx_mapping_type_name(gdrx_mapping_type_t type)
{
    switch (type) {
    case GDRX_MAPPING_NONE:    return "none";
    case GDRX_MAPPING_WC:      return "wc";
    case GDRX_MAPPING_CACHING: return "caching";
    case GDRX_MAPPING_DEVICE:  return "device";
    }
    return "unknown";
}

/* Reports the version of the library actually loaded, which may differ from
 * the GDRX_API_VERSION_* macros the caller was compiled with. */
GDRX_EXPORT void gdrx_get_version(int *major, int *minor, int *patch)
{
    if (major)
        *major = GDRX_API_VERSION_MAJOR;
    if (minor)
        *minor = GDRX_API_VERSION_MINOR;
    if (patch)
        *patch = GDRX_API_VERSION_PATCH;
}
