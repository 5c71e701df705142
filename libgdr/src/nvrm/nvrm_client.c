/*
 * nvrm_client.c - driver version policy, our RM client, and the per-GPU
 * RM devices found by PCI bus id.
 *
 * SPDX-License-Identifier: MIT
 */
#include "nvrm_client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "nvrm_layout.h"
#include "nvrm_rm.h"

/* Our object handles: recognisable in traces, never 0. */
#define NVRM_HANDLE_BASE 0x67640001u

ssize_t nvrm_read_file(const char *path, char *buf, size_t size)
{
    /* open/read, not stdio: callers (and the test emulator) see plain
     * system calls. */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t got = 0;
    while (got + 1 < size) {
        ssize_t n = read(fd, buf + got, size - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

static unsigned branch_of(const char *version)
{
    char *end = NULL;
    unsigned long major = strtoul(version, &end, 10);
    return (end != version && (*end == '.' || *end == '\0') && major < 100000) ? (unsigned)major : 0;
}

int nvrm_version_known(const char *version)
{
    return nvrm_layout_for(version) != NULL;
}

static uint64_t version_code(const char *version)
{
    unsigned long major = 0, minor = 0;
    if (sscanf(version, "%lu.%lu", &major, &minor) < 1)
        return 0;
    return ((uint64_t)major << 16) | (minor & 0xffff);
}

/* The loaded driver's version from sysfs into sys: 0, or -ENODEV (none). */
static int sysfs_driver_version(char *sys, size_t len)
{
    ssize_t n = nvrm_read_file("/sys/module/nvidia/version", sys, len);
    if (n < 0) {
        gdrx_info("nvrm: no NVIDIA kernel driver (/sys/module/nvidia/version: %s)",
                  strerror((int)-n));
        return -ENODEV;
    }
    sys[strcspn(sys, " \t\r\n")] = '\0';
    return 0;
}

int nvrm_client_precheck(void)
{
    char sys[NVRM_VERSION_STRING_LEN + 8];

    if (sysfs_driver_version(sys, sizeof(sys)) != 0)
        return -ENODEV;
    if (!nvrm_version_known(sys)) {
        gdrx_info("nvrm: NVIDIA driver %s (branch %u) is not a known branch", sys,
                  branch_of(sys));
        return -ENOTSUP;
    }
    /* present and read-write for us; not opened (the driver sees nothing) */
    if (access("/dev/nvidiactl", R_OK | W_OK) != 0) {
        int e = errno;
        gdrx_info("nvrm: /dev/nvidiactl: %s", strerror(e));
        return e == ENOENT ? -ENODEV : -e;
    }
    return 0;
}

int nvrm_client_open(struct nvrm_client *c, const struct gdrx_cuda *cu,
                     const struct nvrm_cuda *cx)
{
    char sys[NVRM_VERSION_STRING_LEN + 8];

    memset(c, 0, sizeof(*c));
    c->ctl_fd = -1;
    c->cu = cu;
    c->cx = cx;
    c->pid = getpid();
    c->next_handle = NVRM_HANDLE_BASE;

    /* sysfs only tells whether a driver is loaded at all (before opening
     * any device); the version that decides is the RM's own answer. */
    if (sysfs_driver_version(sys, sizeof(sys)) != 0)
        return -ENODEV;

    c->ctl_fd = open("/dev/nvidiactl", O_RDWR | O_CLOEXEC);
    if (c->ctl_fd < 0) {
        int e = errno;
        gdrx_err("nvrm: cannot open /dev/nvidiactl: %s", strerror(e));
        return e == ENOENT ? -ENODEV : -e;
    }
    /* The ioctl layouts we send are those of the RM answering on this fd:
     * its version (QUERY) must be one the layout table (nvrm_layout.c)
     * has a row for; that row is what the trace and the object code read. */
    char kernel[NVRM_VERSION_STRING_LEN] = "";
    int rc = nvrm_check_version(c->ctl_fd, NVRM_VERSION_CMD_QUERY, NULL, kernel, sizeof(kernel));
    if (rc == 0 && (!kernel[0] || strlen(kernel) >= sizeof(c->version)))
        rc = -EPROTO;
    const struct nvrm_layout *layout = rc == 0 ? nvrm_layout_for(kernel) : NULL;
    if (rc == 0 && !layout) {
        gdrx_err("nvrm: NVIDIA driver %s (branch %u) is not a known branch for the RM ioctl "
                 "ABI (known: 535, 545, 550, 555, 560, 565, 570, 575, 580; docs/nvrm.md, "
                 "\"Driver branches\"); refusing to use the nvrm backend",
                 kernel, branch_of(kernel));
        rc = -ENOTSUP;
    } else if (rc == 0) {
        /* Register as a client of exactly that version, as libcuda does:
         * the kernel compares the whole string and refuses any other. */
        rc = nvrm_check_version(c->ctl_fd, NVRM_VERSION_CMD_STRICT, kernel, NULL, 0);
        if (rc)
            gdrx_err("nvrm: the kernel refused its own version \"%s\" (sysfs: \"%s\"): %s",
                     kernel, sys, strerror(-rc));
    } else {
        gdrx_err("nvrm: the kernel did not report its version (sysfs: \"%s\"): %s", sys,
                 strerror(-rc));
    }
    if (rc) {
        close(c->ctl_fd);
        c->ctl_fd = -1;
        return -ENOTSUP;
    }
    memcpy(c->version, kernel, strlen(kernel) + 1);
    c->layout = layout;
    c->version_code = version_code(kernel);
    rc = nvrm_rm_alloc(c->ctl_fd, 0, 0, &c->h_client, NVRM_CLASS_ROOT_CLIENT, NULL, 0);
    if (rc) {
        gdrx_err("nvrm: cannot allocate an RM client: %s (%s)", strerror(-rc),
                 nvrm_status_name(nvrm_last_status()));
        close(c->ctl_fd);
        c->ctl_fd = -1;
        return rc;
    }
    int count = 0;
    CUresult res = cu->DeviceGetCount(&count);
    if (res != CUDA_SUCCESS || count <= 0 || !(c->gpus = calloc((size_t)count, sizeof(*c->gpus)))) {
        nvrm_client_close(c);
        return res != CUDA_SUCCESS ? gdrx_cuda_errno(res) : count <= 0 ? -ENODEV : -ENOMEM;
    }
    c->ngpus = count;
    gdrx_info("nvrm: RM client 0x%x on driver %s, %d CUDA device(s)", c->h_client, c->version,
              count);
    return 0;
}

void nvrm_client_close(struct nvrm_client *c)
{
    if (c->ctl_fd >= 0) {
        /* Freeing the client frees its devices and every duplicate. */
        if (c->h_client)
            nvrm_rm_free(c->ctl_fd, c->h_client, 0, c->h_client);
        close(c->ctl_fd);
    }
    free(c->gpus);
    memset(c, 0, sizeof(*c));
    c->ctl_fd = -1;
}

void nvrm_client_abandon(struct nvrm_client *c)
{
    if (c->ctl_fd >= 0)
        close(c->ctl_fd);
    free(c->gpus);
    memset(c, 0, sizeof(*c));
    c->ctl_fd = -1;
}

nvrm_handle_t nvrm_client_handle(struct nvrm_client *c)
{
    nvrm_handle_t h = c->next_handle++;
    if (c->next_handle == 0 || c->next_handle == c->h_client)
        c->next_handle = NVRM_HANDLE_BASE;
    return h;
}

/* "Device Minor:  N" of /proc/driver/nvidia/gpus/<bus>/information. */
static int minor_of(const char *bus_id)
{
    char path[96], text[2048];
    snprintf(path, sizeof(path), "/proc/driver/nvidia/gpus/%s/information", bus_id);
    ssize_t n = nvrm_read_file(path, text, sizeof(text));
    if (n < 0) {
        gdrx_err("nvrm: %s: %s", path, strerror((int)-n));
        return (int)n;
    }
    const char *p = strstr(text, "Device Minor:");
    int minor = -1;
    if (!p || sscanf(p + strlen("Device Minor:"), "%d", &minor) != 1 || minor < 0) {
        gdrx_err("nvrm: %s has no \"Device Minor\" line", path);
        return -EIO;
    }
    return minor;
}

/* The RM gpuId at PCI domain:bus:slot (among the attached GPUs). */
static int gpu_id_at(struct nvrm_client *c, unsigned dom, unsigned bus, unsigned slot,
                     uint32_t *gpu_id)
{
    struct nvrm_ctrl_attached_ids ids;
    int rc = nvrm_rm_control(c->ctl_fd, c->h_client, c->h_client,
                             NVRM_CTRL_GPU_GET_ATTACHED_IDS, &ids, sizeof(ids));
    if (rc)
        return rc;
    int attached = 0, answered = 0;
    for (int i = 0; i < NVRM_MAX_ATTACHED_GPUS && ids.gpu_ids[i] != NVRM_INVALID_GPU_ID; i++) {
        struct nvrm_ctrl_pci_info pci = { .gpu_id = ids.gpu_ids[i] };
        attached++;
        rc = nvrm_rm_control(c->ctl_fd, c->h_client, c->h_client, NVRM_CTRL_GPU_GET_PCI_INFO,
                             &pci, sizeof(pci));
        if (rc)
            continue;
        answered++;
        if (pci.domain == dom && pci.bus == bus && pci.slot == slot) {
            *gpu_id = ids.gpu_ids[i];
            return 0;
        }
    }
    /* If the RM gives no PCI information, a lone GPU is unambiguous. */
    if (attached == 1 && answered == 0) {
        gdrx_warn("nvrm: the RM reports no PCI location; using its only GPU");
        *gpu_id = ids.gpu_ids[0];
        return 0;
    }
    return -ENODEV;
}

static int setup_gpu(struct nvrm_client *c, int ordinal, struct nvrm_gpu *g)
{
    char raw[64];
    unsigned dom, bus, slot, fn;
    CUdevice dev;

    CUresult res = c->cu->DeviceGet(&dev, ordinal);
    if (res == CUDA_SUCCESS)
        res = c->cx->DeviceGetPCIBusId(raw, (int)sizeof(raw), dev);
    if (res != CUDA_SUCCESS)
        return gdrx_cuda_errno(res);
    if (sscanf(raw, "%x:%x:%x.%x", &dom, &bus, &slot, &fn) != 4) {
        gdrx_err("nvrm: unexpected PCI bus id \"%s\" for device %d", raw, ordinal);
        return -EIO;
    }
    snprintf(g->bus_id, sizeof(g->bus_id), "%04x:%02x:%02x.%x", dom & 0xffffu, bus & 0xffu,
             slot & 0x1fu, fn & 7u);
    int minor = minor_of(g->bus_id);
    if (minor < 0)
        return minor;
    int rc = gpu_id_at(c, dom, bus, slot, &g->gpu_id);
    if (rc) {
        gdrx_err("nvrm: the RM has no attached GPU at %s (device %d): %s", g->bus_id, ordinal,
                 strerror(-rc));
        return rc;
    }
    struct nvrm_ctrl_id_info info = { .gpu_id = g->gpu_id };
    rc = nvrm_rm_control(c->ctl_fd, c->h_client, c->h_client, NVRM_CTRL_GPU_GET_ID_INFO_V2,
                         &info, sizeof(info));
    if (rc)
        return rc;
    struct nvrm_device_alloc dp;
    memset(&dp, 0, sizeof(dp));
    dp.device_id = info.device_instance;
    dp.h_client_share = c->h_client;
    nvrm_handle_t h_dev = nvrm_client_handle(c);
    rc = nvrm_rm_alloc(c->ctl_fd, c->h_client, c->h_client, &h_dev, NVRM_CLASS_DEVICE, &dp,
                       sizeof(dp));
    if (rc) {
        gdrx_err("nvrm: cannot allocate the RM device of %s: %s (%s)", g->bus_id,
                 strerror(-rc), nvrm_status_name(nvrm_last_status()));
        return rc;
    }
    struct nvrm_subdevice_alloc sp = { .subdevice_id = info.subdevice_instance };
    nvrm_handle_t h_sub = nvrm_client_handle(c);
    rc = nvrm_rm_alloc(c->ctl_fd, c->h_client, h_dev, &h_sub, NVRM_CLASS_SUBDEVICE, &sp,
                       sizeof(sp));
    if (rc) {
        nvrm_rm_free(c->ctl_fd, c->h_client, c->h_client, h_dev);
        return rc;
    }
    g->minor = minor;
    g->device_instance = info.device_instance;
    g->h_device = h_dev;
    g->h_subdevice = h_sub;
    g->ready = 1;
    gdrx_info("nvrm: CUDA device %d = %s = /dev/nvidia%d (gpuId 0x%x, instance %u)", ordinal,
              g->bus_id, minor, g->gpu_id, info.device_instance);
    return 0;
}

int nvrm_client_gpu(struct nvrm_client *c, int ordinal, struct nvrm_gpu **out)
{
    if (ordinal < 0 || ordinal >= c->ngpus)
        return -EINVAL;
    struct nvrm_gpu *g = &c->gpus[ordinal];
    if (!g->ready) {
        int rc = setup_gpu(c, ordinal, g);
        if (rc)
            return rc;
    }
    *out = g;
    return 0;
}
