/*
 * nvrm_rm.h - typed wrappers around the RM ioctls on /dev/nvidiactl.
 *
 * SPDX-License-Identifier: MIT
 *
 * Each wrapper issues one ioctl and folds the two ways it can fail (the
 * ioctl itself, e.g. EINVAL for a malformed request, and the NV_STATUS the
 * RM writes into the argument) into one negative errno.  The last RM status
 * of the calling thread is kept for diagnostics and tests.
 */
#ifndef GDRX_NVRM_RM_H
#define GDRX_NVRM_RM_H

#include <stddef.h>
#include <stdint.h>

#include "nvrm_abi.h"

/* Negative errno for an RM status (NVRM_OK -> 0). */
int nvrm_status_errno(nvrm_status_t status);
/* Short name of an RM status for log messages (never NULL). */
const char *nvrm_status_name(nvrm_status_t status);
/* RM status of the calling thread's last failed wrapper call (0 if the
 * failure was not an RM status). */
nvrm_status_t nvrm_last_status(void);

/* ioctl(fd, _IOWR('F', nr, size), arg), retried on EINTR: 0 or -errno. */
int nvrm_ioctl(int fd, unsigned nr, void *arg, size_t size);

int nvrm_rm_alloc(int ctl_fd, nvrm_handle_t h_root, nvrm_handle_t h_parent,
                  nvrm_handle_t *h_new, uint32_t h_class, void *params,
                  uint32_t params_size);
int nvrm_rm_free(int ctl_fd, nvrm_handle_t h_client, nvrm_handle_t h_parent,
                 nvrm_handle_t h_object);
int nvrm_rm_control(int ctl_fd, nvrm_handle_t h_client, nvrm_handle_t h_object,
                    uint32_t cmd, void *params, uint32_t params_size);
int nvrm_rm_dup(int ctl_fd, nvrm_handle_t h_client, nvrm_handle_t h_parent,
                nvrm_handle_t *h_object, nvrm_handle_t h_client_src,
                nvrm_handle_t h_object_src);
/* RM_MAP_MEMORY of [offset, offset+length) of h_memory; the mmap context
 * goes to dev_fd (a /dev/nvidiaN fd that holds no other context). */
int nvrm_rm_map(int ctl_fd, nvrm_handle_t h_client, nvrm_handle_t h_device,
                nvrm_handle_t h_memory, uint64_t offset, uint64_t length,
                int dev_fd, uint64_t *linear_addr);
int nvrm_rm_unmap(int ctl_fd, nvrm_handle_t h_client, nvrm_handle_t h_device,
                  nvrm_handle_t h_memory, uint64_t linear_addr);

/* The version-check escape: cmd STRICT or QUERY.  For QUERY, the kernel's
 * version is copied to out (out_size >= NVRM_VERSION_STRING_LEN). */
int nvrm_check_version(int ctl_fd, uint32_t cmd, const char *version,
                       char *out, size_t out_size);

#endif /* GDRX_NVRM_RM_H */
