/*
 * nvrm_client.h - the backend's own RM client on /dev/nvidiactl and the
 * RM device of each CUDA GPU.
 *
 * SPDX-License-Identifier: MIT
 *
 * Opening checks the running driver: the version the RM itself reports
 * on /dev/nvidiactl (QUERY; /sys/module/nvidia/version only says whether
 * a driver is loaded) must have a row in the layout table (nvrm_layout.h:
 * a branch whose headers were checked); the client then registers under exactly that
 * version (STRICT), as libcuda does.  GPUs are set up on first use: the CUDA ordinal's PCI bus
 * id names both the /dev/nvidiaN file (/proc/driver/nvidia/gpus/<bus
 * id>/information, "Device Minor") and the RM gpuId (GPU_GET_PCI_INFO), so
 * CUDA_VISIBLE_DEVICES and any number of GPUs work.
 *
 * Not thread-safe: the backend serialises calls with its own lock.
 */
#ifndef GDRX_NVRM_CLIENT_H
#define GDRX_NVRM_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nvrm_abi.h"
#include "nvrm_layout.h"
#include "nvrm_cuda.h"
#include "cuda_loader.h"

struct nvrm_gpu {
    int           ready;       /* 1 once the handles below exist */
    int           minor;       /* /dev/nvidia<minor> */
    char          bus_id[16];  /* "0000:19:00.0" */
    uint32_t      gpu_id;
    uint32_t      device_instance;
    nvrm_handle_t h_device, h_subdevice;
};

struct nvrm_client {
    pid_t                   pid;        /* process that opened it */
    int                     ctl_fd;
    nvrm_handle_t           h_client;
    char                    version[NVRM_VERSION_STRING_LEN];
    uint64_t                version_code; /* major << 16 | minor */
    const struct nvrm_layout *layout;   /* the row of that version */
    const struct gdrx_cuda *cu;
    const struct nvrm_cuda *cx;
    int                     ngpus;      /* CUDA devices */
    struct nvrm_gpu        *gpus;       /* [ngpus], by CUDA ordinal */
    nvrm_handle_t           next_handle;
};

/* What can be told without CUDA or the driver: /sys/module/nvidia/version
 * names a known branch and /dev/nvidiactl is there, read-write for us
 * (not opened).  0, -ENODEV (no driver), -ENOTSUP (branch not known),
 * -errno. */
int nvrm_client_precheck(void);

/* Version check, root client.  0, -ENODEV (no driver), -ENOTSUP (driver
 * branch not known, or STRICT check refused), -errno. */
int nvrm_client_open(struct nvrm_client *c, const struct gdrx_cuda *cu,
                     const struct nvrm_cuda *cx);
/* Free the RM client (and with it every object under it), close the fd. */
void nvrm_client_close(struct nvrm_client *c);
/* Forget a client inherited over fork without touching the RM: the
 * objects belong to the parent.  Only our copy of the fd is closed. */
void nvrm_client_abandon(struct nvrm_client *c);

/* The GPU of a CUDA ordinal, set up on first use.  0 or -errno. */
int nvrm_client_gpu(struct nvrm_client *c, int ordinal, struct nvrm_gpu **out);

/* A handle not yet used in our client. */
nvrm_handle_t nvrm_client_handle(struct nvrm_client *c);

/* 1 if the layout table has a row for `version` (nvrm_layout.h). */
int nvrm_version_known(const char *version);

/* Read a small file into buf (NUL-terminated); bytes read or -errno. */
ssize_t nvrm_read_file(const char *path, char *buf, size_t size);

#endif /* GDRX_NVRM_CLIENT_H */
