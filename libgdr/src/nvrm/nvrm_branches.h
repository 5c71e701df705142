/*
 * nvrm_branches.h - the NVIDIA driver branches (major versions) whose RM
 * ioctl ABI nvrm_abi.h was checked against.  The nvrm backend refuses any
 * other; gdrx-info and the README name the same list.
 *
 * SPDX-License-Identifier: MIT
 *
 * Adding a branch means re-checking every layout in nvrm_abi.h.
 */
#ifndef GDRX_NVRM_BRANCHES_H
#define GDRX_NVRM_BRANCHES_H

/* Initialiser list of unsigned branch numbers. */
#define NVRM_VALIDATED_BRANCHES 580

#endif /* GDRX_NVRM_BRANCHES_H */
