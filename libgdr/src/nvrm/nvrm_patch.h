/*
 * nvrm_patch.h - the import-slot patcher the trace is installed with.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_NVRM_PATCH_H
#define GDRX_NVRM_PATCH_H

#include "nvrm_trace.h"

/* An nvrm_patch_slot_fn (contract in nvrm_trace.h). */
int nvrm_patch_import_slot(const char *object, const char *symbol, void *replacement,
                           void **previous);

#endif /* GDRX_NVRM_PATCH_H */
