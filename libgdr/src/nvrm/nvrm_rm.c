/*
 * nvrm_rm.c - one function per RM escape the backend uses.
 *
 * SPDX-License-Identifier: MIT
 */
#include "nvrm_rm.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include "log.h"

static _Thread_local nvrm_status_t last_status;

nvrm_status_t nvrm_last_status(void)
{
    return last_status;
}

static const struct {
    nvrm_status_t status;
    int           err;
    const char   *name;
} status_table[] = {
    { NVRM_OK,                          0,           "NV_OK" },
    { NVRM_ERR_GPU_IS_LOST,             -ENODEV,     "NV_ERR_GPU_IS_LOST" },
    { NVRM_ERR_ILLEGAL_ACTION,          -EPERM,      "NV_ERR_ILLEGAL_ACTION" },
    { NVRM_ERR_IN_USE,                  -EBUSY,      "NV_ERR_IN_USE" },
    /* BAR1 space and mapping slots are the resources that run out here. */
    { NVRM_ERR_INSUFFICIENT_RESOURCES,  -ENOSPC,     "NV_ERR_INSUFFICIENT_RESOURCES" },
    { NVRM_ERR_INSUFFICIENT_PERMISSIONS, -EPERM,     "NV_ERR_INSUFFICIENT_PERMISSIONS" },
    { NVRM_ERR_INVALID_ADDRESS,         -EFAULT,     "NV_ERR_INVALID_ADDRESS" },
    { NVRM_ERR_INVALID_ARGUMENT,        -EINVAL,     "NV_ERR_INVALID_ARGUMENT" },
    { NVRM_ERR_INVALID_CLASS,           -EOPNOTSUPP, "NV_ERR_INVALID_CLASS" },
    /* Our client exists; the RM says this when it belongs to another
     * process (after fork). */
    { NVRM_ERR_INVALID_CLIENT,          -EPERM,      "NV_ERR_INVALID_CLIENT" },
    { NVRM_ERR_INVALID_COMMAND,         -EOPNOTSUPP, "NV_ERR_INVALID_COMMAND" },
    { NVRM_ERR_INVALID_DEVICE,          -ENODEV,     "NV_ERR_INVALID_DEVICE" },
    { NVRM_ERR_INVALID_LIMIT,           -EINVAL,     "NV_ERR_INVALID_LIMIT" },
    { NVRM_ERR_INVALID_OBJECT,          -ENOENT,     "NV_ERR_INVALID_OBJECT" },
    { NVRM_ERR_INVALID_OBJECT_HANDLE,   -ENOENT,     "NV_ERR_INVALID_OBJECT_HANDLE" },
    { NVRM_ERR_INVALID_OBJECT_NEW,      -EEXIST,     "NV_ERR_INVALID_OBJECT_NEW" },
    { NVRM_ERR_INVALID_OBJECT_PARENT,   -ENOENT,     "NV_ERR_INVALID_OBJECT_PARENT" },
    { NVRM_ERR_INVALID_OFFSET,          -EINVAL,     "NV_ERR_INVALID_OFFSET" },
    { NVRM_ERR_INVALID_PARAM_STRUCT,    -EINVAL,     "NV_ERR_INVALID_PARAM_STRUCT" },
    { NVRM_ERR_INVALID_STATE,           -EIO,        "NV_ERR_INVALID_STATE" },
    { NVRM_ERR_NO_MEMORY,               -ENOMEM,     "NV_ERR_NO_MEMORY" },
    { NVRM_ERR_NOT_READY,               -EAGAIN,     "NV_ERR_NOT_READY" },
    { NVRM_ERR_NOT_SUPPORTED,           -EOPNOTSUPP, "NV_ERR_NOT_SUPPORTED" },
    { NVRM_ERR_OBJECT_NOT_FOUND,        -ENOENT,     "NV_ERR_OBJECT_NOT_FOUND" },
    { NVRM_ERR_OPERATING_SYSTEM,        -EIO,        "NV_ERR_OPERATING_SYSTEM" },
    { NVRM_ERR_STATE_IN_USE,            -EBUSY,      "NV_ERR_STATE_IN_USE" },
    { NVRM_ERR_GENERIC,                 -EIO,        "NV_ERR_GENERIC" },
};

int nvrm_status_errno(nvrm_status_t status)
{
    for (size_t i = 0; i < sizeof(status_table) / sizeof(status_table[0]); i++)
        if (status_table[i].status == status)
            return status_table[i].err;
    return -EIO;
}

const char *nvrm_status_name(nvrm_status_t status)
{
    for (size_t i = 0; i < sizeof(status_table) / sizeof(status_table[0]); i++)
        if (status_table[i].status == status)
            return status_table[i].name;
    return "NV_ERR_(unknown)";
}

int nvrm_ioctl(int fd, unsigned nr, void *arg, size_t size)
{
    unsigned long req = _IOC(_IOC_READ | _IOC_WRITE, NVRM_IOCTL_MAGIC, nr, size);
    int rc;

    do {
        rc = ioctl(fd, req, arg);
    } while (rc < 0 && errno == EINTR);
    return rc < 0 ? -errno : 0;
}

/* Common tail: an ioctl error wins, then the RM status. */
static int finish(const char *what, int rc, nvrm_status_t status)
{
    if (rc < 0) {
        last_status = 0;
        gdrx_dbg("%s: ioctl failed: %s", what, strerror(-rc));
        return rc;
    }
    if (status != NVRM_OK) {
        last_status = status;
        gdrx_dbg("%s: RM status 0x%x (%s)", what, status, nvrm_status_name(status));
        return nvrm_status_errno(status);
    }
    return 0;
}

int nvrm_rm_alloc(int ctl_fd, nvrm_handle_t h_root, nvrm_handle_t h_parent,
                  nvrm_handle_t *h_new, uint32_t h_class, void *params,
                  uint32_t params_size)
{
    struct nvrm_rm_alloc a;

    memset(&a, 0, sizeof(a));
    a.h_root = h_root;
    a.h_parent = h_parent;
    a.h_new = *h_new;
    a.h_class = h_class;
    a.params = (uint64_t)(uintptr_t)params;
    a.params_size = params_size;
    int rc = nvrm_ioctl(ctl_fd, NVRM_ESC_RM_ALLOC, &a, sizeof(a));
    rc = finish("RM_ALLOC", rc, a.status);
    if (rc == 0)
        *h_new = a.h_new;
    return rc;
}

int nvrm_rm_free(int ctl_fd, nvrm_handle_t h_client, nvrm_handle_t h_parent,
                 nvrm_handle_t h_object)
{
    struct nvrm_rm_free f;

    memset(&f, 0, sizeof(f));
    f.h_root = h_client;
    f.h_parent = h_parent;
    f.h_object = h_object;
    int rc = nvrm_ioctl(ctl_fd, NVRM_ESC_RM_FREE, &f, sizeof(f));
    return finish("RM_FREE", rc, f.status);
}

int nvrm_rm_control(int ctl_fd, nvrm_handle_t h_client, nvrm_handle_t h_object,
                    uint32_t cmd, void *params, uint32_t params_size)
{
    struct nvrm_rm_control c;

    memset(&c, 0, sizeof(c));
    c.h_client = h_client;
    c.h_object = h_object;
    c.cmd = cmd;
    c.params = (uint64_t)(uintptr_t)params;
    c.params_size = params_size;
    int rc = nvrm_ioctl(ctl_fd, NVRM_ESC_RM_CONTROL, &c, sizeof(c));
    return finish("RM_CONTROL", rc, c.status);
}

int nvrm_rm_dup(int ctl_fd, nvrm_handle_t h_client, nvrm_handle_t h_parent,
                nvrm_handle_t *h_object, nvrm_handle_t h_client_src,
                nvrm_handle_t h_object_src)
{
    struct nvrm_rm_dup d;

    memset(&d, 0, sizeof(d));
    d.h_client = h_client;
    d.h_parent = h_parent;
    d.h_object = *h_object;
    d.h_client_src = h_client_src;
    d.h_object_src = h_object_src;
    int rc = nvrm_ioctl(ctl_fd, NVRM_ESC_RM_DUP_OBJECT, &d, sizeof(d));
    rc = finish("RM_DUP_OBJECT", rc, d.status);
    if (rc == 0)
        *h_object = d.h_object;
    return rc;
}

int nvrm_rm_map(int ctl_fd, nvrm_handle_t h_client, nvrm_handle_t h_device,
                nvrm_handle_t h_memory, uint64_t offset, uint64_t length,
                int dev_fd, uint64_t *linear_addr)
{
    struct nvrm_rm_map m;

    memset(&m, 0, sizeof(m));
    m.h_client = h_client;
    m.h_device = h_device;
    m.h_memory = h_memory;
    m.offset = offset;
    m.length = length;
    m.fd = dev_fd;
    int rc = nvrm_ioctl(ctl_fd, NVRM_ESC_RM_MAP_MEMORY, &m, sizeof(m));
    rc = finish("RM_MAP_MEMORY", rc, m.status);
    if (rc == 0)
        *linear_addr = m.linear_addr;
    return rc;
}

int nvrm_rm_unmap(int ctl_fd, nvrm_handle_t h_client, nvrm_handle_t h_device,
                  nvrm_handle_t h_memory, uint64_t linear_addr)
{
    struct nvrm_rm_unmap u;

    memset(&u, 0, sizeof(u));
    u.h_client = h_client;
    u.h_device = h_device;
    u.h_memory = h_memory;
    u.linear_addr = linear_addr;
    int rc = nvrm_ioctl(ctl_fd, NVRM_ESC_RM_UNMAP_MEMORY, &u, sizeof(u));
    return finish("RM_UNMAP_MEMORY", rc, u.status);
}

int nvrm_check_version(int ctl_fd, uint32_t cmd, const char *version,
                       char *out, size_t out_size)
{
    struct nvrm_version_check v;

    memset(&v, 0, sizeof(v));
    v.cmd = cmd;
    if (version) {
        size_t n = strlen(version);
        if (n >= sizeof(v.version))
            return -EINVAL;
        memcpy(v.version, version, n);
    }
    /* A mismatch under STRICT is reported as the ioctl failing with
     * EINVAL, not through a status field. */
    int rc = nvrm_ioctl(ctl_fd, NVRM_ESC_CHECK_VERSION, &v, sizeof(v));
    last_status = 0;
    if (rc < 0)
        return rc;
    if (v.reply != NVRM_VERSION_REPLY_RECOGNIZED)
        return -EPROTO;
    if (out && out_size) {
        size_t n = strnlen(v.version, sizeof(v.version));
        if (n >= out_size)
            n = out_size - 1;
        memcpy(out, v.version, n);
        out[n] = '\0';
    }
    return 0;
}
