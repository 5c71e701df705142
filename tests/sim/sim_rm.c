/*
 * sim_rm.c - make the simulated libcuda talk to the NVIDIA resource manager
 * the way the real one does, when the RM-ioctl emulator (tests/nvrm/emu)
 * is loaded; otherwise every hook here does nothing.
 *
 * SPDX-License-Identifier: MIT
 *
 * What the real libcuda was seen doing (docs/nvrm.md), mirrored here with
 * ioctl() calls through this library's own ioctl import, so a backend that
 * watches libcuda's ioctls sees the same sequence:
 *   cuInit       open /dev/nvidiactl, version check, root client, one
 *                NV01_DEVICE_0 per GPU (found by PCI bus id), open and
 *                initialise /dev/nvidia-uvm;
 *   new object   RM_ALLOC NV01_MEMORY_LOCAL_USER (the NVOS64 form) under the
 *                device, then UVM_MAP_EXTERNAL_ALLOCATION of the object's
 *                whole VA range onto it;
 *   object gone  UVM_FREE, then RM_FREE;
 *   cuIpcGetMemHandle  RM_SHARE (RS_SHARE_TYPE_ALL) and the observed
 *                64-byte handle layout's RM words (sim_ipc.c the rest);
 *   cuMemGetHandleForAddressRange  NV_ESC_EXPORT_TO_DMABUF_FD on a
 *                /dev/nvidiaN fd naming (hClient, hMemory, offset).
 * The emulator is found through weak references to its control functions.
 */
#include "sim_rm.h"
#include "sim_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../../libgdr/src/nvrm/nvrm_abi.h"
#include "../nvrm/emu/emu_layout.h"
#include "../nvrm/emu/nvrm_emu.h"

/* Weak: NULL unless the emulator is preloaded. */
#pragma weak nvrm_emu_present
#pragma weak nvrm_emu_sim_gpus
#pragma weak nvrm_emu_bind_memory
#pragma weak nvrm_emu_kernel_version

/* Test helper, exported with the control API: export the RM object behind
 * p to a new ctl fd, as cuMemExportToShareableHandle(POSIX_FD) does. */
int simcu_rm_export_fd(CUdeviceptr p, int *fd_out);
/* Test helper too: from `at` (4 KiB aligned, inside an object, past its
 * first byte) on, the object's pages are a second RM object's, as if the
 * driver backed one VA range with two objects: libcuda maps the two
 * halves apart and names both in exports that cross `at`.  Once per
 * object.  0, -ENOENT (no object there), -EINVAL. */
int simcu_rm_split(CUdeviceptr at);

#define SIM_RM_DEVICE_HANDLE 0x5c000002u
#define SIM_RM_MEMORY_HANDLE 0x5c000100u

struct rm_obj {
    uint64_t id, va, size;
    int      device;
    uint32_t h_memory;
    /* Set by simcu_rm_split (a test's): from VA split on, the object's
     * pages are RM object h_split's (offset 0 at split), not h_memory's. */
    uint64_t split;
    uint32_t h_split;
};

static struct {
    pthread_mutex_t lock;
    int             active;
    int             ctl_fd, uvm_fd;
    uint32_t        h_client;
    uint32_t        h_device[SIMCU_MAX_DEVICES];
    uint32_t        gpu_id[SIMCU_MAX_DEVICES];
    int             minor[SIMCU_MAX_DEVICES]; /* of /dev/nvidiaN */
    struct rm_obj  *objs;
    size_t          nobjs, cap;
    uint32_t        next_handle;
} rm = { .lock = PTHREAD_MUTEX_INITIALIZER, .ctl_fd = -1, .uvm_fd = -1 };

static int rm_call(unsigned nr, void *arg, size_t size)
{
    unsigned long req = _IOC(_IOC_READ | _IOC_WRITE, NVRM_IOCTL_MAGIC, nr, size);
    return ioctl(rm.ctl_fd, req, arg) == 0 ? 0 : -errno;
}

static uint32_t rm_alloc64(uint32_t parent, uint32_t handle, uint32_t cls, void *params,
                           uint32_t size)
{
    struct nvrm_rm_alloc_rights a;
    memset(&a, 0, sizeof(a));
    a.h_root = rm.h_client;
    a.h_parent = parent;
    a.h_new = handle;
    a.h_class = cls;
    a.params = (uint64_t)(uintptr_t)params;
    a.params_size = size;
    if (rm_call(NVRM_ESC_RM_ALLOC, &a, sizeof(a)) != 0 || a.status != NVRM_OK)
        return 0;
    return a.h_new;
}

static int rm_control(uint32_t cmd, void *params, uint32_t size)
{
    struct nvrm_rm_control c;
    memset(&c, 0, sizeof(c));
    c.h_client = rm.h_client;
    c.h_object = rm.h_client;
    c.cmd = cmd;
    c.params = (uint64_t)(uintptr_t)params;
    c.params_size = size;
    return rm_call(NVRM_ESC_RM_CONTROL, &c, sizeof(c)) == 0 && c.status == NVRM_OK ? 0 : -EIO;
}

static void rm_free(uint32_t parent, uint32_t object)
{
    struct nvrm_rm_free f = { .h_root = rm.h_client, .h_parent = parent, .h_object = object };
    rm_call(NVRM_ESC_RM_FREE, &f, sizeof(f));
}

/* The RM's gpuId of the GPU on PCI bus `bus`, or NVRM_INVALID_GPU_ID. */
static uint32_t gpu_on_bus(int bus)
{
    struct nvrm_ctrl_attached_ids ids;
    memset(&ids, 0, sizeof(ids));
    if (rm_control(NVRM_CTRL_GPU_GET_ATTACHED_IDS, &ids, sizeof(ids)) != 0)
        return NVRM_INVALID_GPU_ID;
    for (int i = 0; i < NVRM_MAX_ATTACHED_GPUS && ids.gpu_ids[i] != NVRM_INVALID_GPU_ID; i++) {
        struct nvrm_ctrl_pci_info pci = { .gpu_id = ids.gpu_ids[i] };
        if (rm_control(NVRM_CTRL_GPU_GET_PCI_INFO, &pci, sizeof(pci)) == 0 && pci.bus == bus)
            return ids.gpu_ids[i];
    }
    return NVRM_INVALID_GPU_ID;
}

/* The /dev/nvidiaN minor of the GPU on bus_id, as libcuda finds it
 * (open + read: the emulator interposes open, not stdio's internal one). */
static int minor_of(const char *bus_id)
{
    char path[96], text[512];
    snprintf(path, sizeof(path), "/proc/driver/nvidia/gpus/%s/information", bus_id);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    text[n > 0 ? n : 0] = '\0';
    const char *m = strstr(text, "Device Minor:");
    int minor = -1;
    if (m && sscanf(m, "Device Minor: %d", &minor) != 1)
        minor = -1;
    return minor;
}

/* The emulated kernel's version into ver (NVRM_VERSION_STRING_LEN
 * bytes): what the requests are laid out for (emu_layout.h). */
static const char *kernel_version(char *ver)
{
    ver[0] = '\0';
    if (nvrm_emu_kernel_version)
        nvrm_emu_kernel_version(ver, NVRM_VERSION_STRING_LEN);
    return ver;
}

static int open_client(int device_count)
{
    struct nvrm_version_check v;

    rm.ctl_fd = open("/dev/nvidiactl", O_RDWR | O_CLOEXEC);
    if (rm.ctl_fd < 0)
        return -1;
    /* A matched libcuda/kernel pair: take the kernel's string, then check. */
    memset(&v, 0, sizeof(v));
    v.cmd = NVRM_VERSION_CMD_QUERY;
    if (rm_call(NVRM_ESC_CHECK_VERSION, &v, sizeof(v)) != 0)
        return -1;
    v.cmd = NVRM_VERSION_CMD_STRICT;
    if (rm_call(NVRM_ESC_CHECK_VERSION, &v, sizeof(v)) != 0)
        return -1;
    rm.h_client = 0;
    rm.h_client = rm_alloc64(0, 0, NVRM_CLASS_ROOT_CLIENT, NULL, 0);
    if (!rm.h_client)
        return -1;
    for (int i = 0; i < device_count; i++) {
        int bus = 0;
        if (cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, i) != CUDA_SUCCESS)
            return -1;
        rm.gpu_id[i] = gpu_on_bus(bus);
        char bus_id[16];
        if (cuDeviceGetPCIBusId(bus_id, (int)sizeof(bus_id), i) != CUDA_SUCCESS)
            return -1;
        rm.minor[i] = minor_of(bus_id);
        struct nvrm_ctrl_id_info info = { .gpu_id = rm.gpu_id[i] };
        if (rm_control(NVRM_CTRL_GPU_GET_ID_INFO_V2, &info, sizeof(info)) != 0)
            return -1;
        struct nvrm_device_alloc dev;
        memset(&dev, 0, sizeof(dev));
        dev.device_id = info.device_instance;
        dev.h_client_share = rm.h_client;
        rm.h_device[i] = rm_alloc64(rm.h_client, SIM_RM_DEVICE_HANDLE + (uint32_t)i,
                                    NVRM_CLASS_DEVICE, &dev, sizeof(dev));
        if (!rm.h_device[i])
            return -1;
    }
    rm.uvm_fd = open("/dev/nvidia-uvm", O_RDWR | O_CLOEXEC);
    if (rm.uvm_fd < 0)
        return -1;
    struct nvrm_uvm_initialize init = { 0 };
    return ioctl(rm.uvm_fd, NVRM_UVM_INITIALIZE, &init) == 0 ? 0 : -1;
}

void simcu_rm_init(int device_count)
{
    if (!nvrm_emu_present || !nvrm_emu_present())
        return;
    const char *ids[SIMCU_MAX_DEVICES];
    char bufs[SIMCU_MAX_DEVICES][16];
    for (int i = 0; i < device_count && i < SIMCU_MAX_DEVICES; i++) {
        if (cuDeviceGetPCIBusId(bufs[i], (int)sizeof(bufs[i]), i) != CUDA_SUCCESS)
            return;
        ids[i] = bufs[i];
    }
    nvrm_emu_sim_gpus(device_count, ids);

    pthread_mutex_lock(&rm.lock);
    rm.next_handle = SIM_RM_MEMORY_HANDLE;
    if (open_client(device_count) == 0) {
        rm.active = 1;
    } else {
        fprintf(stderr, "sim_rm: cannot set up the emulated RM client (errno %d)\n", errno);
        if (rm.ctl_fd >= 0)
            close(rm.ctl_fd);
        rm.ctl_fd = -1;
    }
    pthread_mutex_unlock(&rm.lock);
}

/* A new RM video-memory object of `size` bytes on `device`, backed by
 * [memfd_offset, +size) of memfd (rm.lock held); its handle, or 0. */
static uint32_t rm_memory_locked(int device, int memfd, off_t memfd_offset, uint64_t size)
{
    struct nvrm_memory_alloc p;
    memset(&p, 0, sizeof(p));
    p.owner = rm.h_client;
    p.size = size;
    p.alignment = (uint64_t)2 << 20;
    /* 535's parameters end before numaNode (120 bytes) */
    char ver[NVRM_VERSION_STRING_LEN];
    uint32_t h = rm_alloc64(rm.h_device[device], rm.next_handle++, NVRM_CLASS_MEMORY_LOCAL, &p,
                            (uint32_t)emu_driver_layout(kernel_version(ver))->memory_alloc_size);
    if (h && nvrm_emu_bind_memory(rm.h_client, h, memfd, memfd_offset, size) != 0) {
        rm_free(rm.h_device[device], h);
        h = 0;
    }
    return h;
}

/* UVM_MAP_EXTERNAL_ALLOCATION of [va, +length) onto RM object h from its
 * offset 0, as libcuda maps an object's VA (rm.lock held). */
static void uvm_map_locked(uint64_t va, uint64_t length, uint32_t h)
{
    char ver[NVRM_VERSION_STRING_LEN];
    /* as the driver's branch lays it out (32 or 256 GPUs), and no larger:
     * a reader expecting another branch's tail reads past it */
    const struct nvrm_uvm_map_shape *ms = emu_uvm_map_shape(kernel_version(ver));
    struct nvrm_uvm_map_external *m = calloc(1, ms->size);
    if (!m)
        return;
    m->base = va;
    m->length = length;
    m->offset = 0;
    nvrm_wire_put64(m, ms->count_off, 1);
    nvrm_wire_put32(m, ms->fd_off, (uint32_t)rm.ctl_fd);
    nvrm_wire_put32(m, ms->h_client_off, rm.h_client);
    nvrm_wire_put32(m, ms->h_memory_off, h);
    ioctl(rm.uvm_fd, NVRM_UVM_MAP_EXTERNAL_ALLOCATION, m);
    free(m);
}

void simcu_rm_object_created(const struct simcu_alloc_info *obj)
{
    pthread_mutex_lock(&rm.lock);
    if (!rm.active || obj->device < 0 || obj->device >= SIMCU_MAX_DEVICES) {
        pthread_mutex_unlock(&rm.lock);
        return;
    }
    if (rm.nobjs == rm.cap) {
        size_t cap = rm.cap ? rm.cap * 2 : 16;
        struct rm_obj *n = realloc(rm.objs, cap * sizeof(*n));
        if (!n) {
            pthread_mutex_unlock(&rm.lock);
            return;
        }
        rm.objs = n;
        rm.cap = cap;
    }
    uint32_t h = rm_memory_locked(obj->device, obj->memfd, obj->memfd_offset, obj->object_size);
    if (h) {
        uvm_map_locked(obj->object_va, obj->object_size, h);
        rm.objs[rm.nobjs++] = (struct rm_obj){ .id = obj->object_id, .va = obj->object_va,
                                               .size = obj->object_size,
                                               .device = obj->device, .h_memory = h };
    }
    pthread_mutex_unlock(&rm.lock);
}

void simcu_rm_object_destroyed(uint64_t object_id)
{
    pthread_mutex_lock(&rm.lock);
    for (size_t i = 0; rm.active && i < rm.nobjs; i++) {
        struct rm_obj *o = &rm.objs[i];
        if (o->id != object_id)
            continue;
        struct nvrm_uvm_free f = { .base = o->va, .length = o->size };
        ioctl(rm.uvm_fd, NVRM_UVM_FREE, &f);
        rm_free(rm.h_device[o->device], o->h_memory);
        if (o->h_split)
            rm_free(rm.h_device[o->device], o->h_split);
        rm.objs[i] = rm.objs[--rm.nobjs];
        break;
    }
    pthread_mutex_unlock(&rm.lock);
}

/* The RM object holding p and p's offset in it (rm.lock held). */
static struct rm_obj *find_locked(CUdeviceptr p, struct simcu_alloc_info *info)
{
    if (simcu_lookup(p, info) != 0)
        return NULL;
    close(info->memfd);
    for (size_t i = 0; i < rm.nobjs; i++)
        if (rm.objs[i].id == info->object_id)
            return &rm.objs[i];
    return NULL;
}

CUresult simcu_rm_ipc_handle(CUdeviceptr dptr, uint32_t w[16])
{
    CUresult rc = CUDA_SUCCESS;
    struct simcu_alloc_info info;

    pthread_mutex_lock(&rm.lock);
    struct rm_obj *o = rm.active ? find_locked(dptr, &info) : NULL;
    if (!rm.active) {
        rc = CUDA_ERROR_NOT_SUPPORTED;
    } else if (!o || info.alloc_base != dptr) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else {
        struct nvrm_rm_share s;
        memset(&s, 0, sizeof(s));
        s.h_client = rm.h_client;
        s.h_object = o->h_memory;
        s.policy.type = NVRM_SHARE_TYPE_ALL;
        if (rm_call(NVRM_ESC_RM_SHARE, &s, sizeof(s)) != 0 || s.status != NVRM_OK) {
            rc = CUDA_ERROR_OPERATING_SYSTEM;
        } else {
            uint64_t host = (uint64_t)(uintptr_t)&rm;
            w[0] = (uint32_t)host;
            w[1] = (uint32_t)(host >> 32);
            w[6] = 0x200;
            w[8] = rm.gpu_id[o->device];
            w[9] = 0xff00;
            w[10] = 0x33;
            w[NVRM_IPC_WORD_HCLIENT] = rm.h_client;
            w[NVRM_IPC_WORD_HMEMORY] = o->h_memory;
        }
    }
    pthread_mutex_unlock(&rm.lock);
    return rc;
}

int simcu_rm_export_fd(CUdeviceptr p, int *fd_out)
{
    struct simcu_alloc_info info;
    int rc = -ENODEV;

    if (!fd_out)
        return -EINVAL;
    pthread_mutex_lock(&rm.lock);
    struct rm_obj *o = rm.active ? find_locked(p, &info) : NULL;
    if (rm.active && !o)
        rc = -ENOENT;
    if (o) {
        int fd = open("/dev/nvidiactl", O_RDWR | O_CLOEXEC);
        struct nvrm_ctrl_export_objects *e = calloc(1, sizeof(*e));
        rc = fd < 0 ? -errno : -ENOMEM;
        if (fd >= 0 && e) {
            e->fd = fd;
            e->h_device = rm.h_device[o->device];
            e->max_objects = 1;
            e->metadata[0] = 4; /* what CUDA puts there */
            e->objects[0] = o->h_memory;
            e->num_objects = 1;
            rc = rm_control(NVRM_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD, e, sizeof(*e));
        }
        free(e);
        if (rc == 0)
            *fd_out = fd;
        else if (fd >= 0)
            close(fd);
    }
    pthread_mutex_unlock(&rm.lock);
    return rc;
}

/* Lay [dptr, +size) of o out as the export's pieces, the way libcuda names
 * the RM objects behind a range: one piece per object it crosses (two
 * where a test split o).  The number of pieces. */
static uint32_t export_pieces(const struct rm_obj *o, uint64_t dptr, uint64_t size,
                              struct nvrm_export_dmabuf *e, const struct nvrm_dmabuf_shape *d)
{
    uint64_t end = dptr + size;
    uint32_t n = 0;

    if (!o->h_split || dptr < o->split) {
        uint64_t stop = o->h_split && end > o->split ? o->split : end;
        nvrm_wire_put32(e, d->handles_off, o->h_memory);
        nvrm_wire_put64(e, d->offsets_off, dptr - o->va);
        nvrm_wire_put64(e, d->sizes_off, stop - dptr);
        n++;
    }
    if (o->h_split && end > o->split) {
        uint64_t start = dptr > o->split ? dptr : o->split;
        nvrm_wire_put32(e, d->handles_off + 4 * n, o->h_split);
        nvrm_wire_put64(e, d->offsets_off + 8 * n, start - o->split);
        nvrm_wire_put64(e, d->sizes_off + 8 * n, end - start);
        n++;
    }
    return n;
}

int simcu_rm_range_exported(CUdeviceptr dptr, size_t size)
{
    struct simcu_alloc_info info;
    int rc = 0;

    pthread_mutex_lock(&rm.lock);
    struct rm_obj *o = rm.active ? find_locked(dptr, &info) : NULL;
    if (rm.active && (!o || rm.minor[o->device] < 0))
        rc = -ENOENT;
    if (o && rc == 0) {
        char path[32];
        snprintf(path, sizeof(path), "/dev/nvidia%d", rm.minor[o->device]);
        int dev = open(path, O_RDWR | O_CLOEXEC);
        /* the branch's layout: 570 moved the arrays by 8 bytes */
        char ver[NVRM_VERSION_STRING_LEN];
        const struct nvrm_dmabuf_shape *d = emu_driver_layout(kernel_version(ver))->dmabuf;
        struct nvrm_export_dmabuf *e = calloc(1, sizeof(*e));
        rc = dev < 0 ? -errno : -ENOMEM;
        if (dev >= 0 && e) {
            e->fd = -1;
            e->h_client = rm.h_client;
            e->total_size = size;
            e->total_objects = e->num_objects = export_pieces(o, dptr, size, e, d);
            unsigned long req = _IOC(_IOC_READ | _IOC_WRITE, NVRM_IOCTL_MAGIC,
                                     NVRM_ESC_EXPORT_TO_DMABUF, d->size);
            rc = ioctl(dev, req, e) != 0                              ? -errno
                 : nvrm_wire_u32(e, d->status_off) != NVRM_OK ? -EIO
                                                                      : 0;
            if (rc == 0)
                close(e->fd); /* the sim hands out its own dma-buf file */
        }
        free(e);
        if (dev >= 0)
            close(dev);
    }
    pthread_mutex_unlock(&rm.lock);
    return rc;
}

int simcu_rm_split(CUdeviceptr at)
{
    struct simcu_alloc_info info;
    int rc = -ENOENT;

    if (simcu_lookup(at, &info) != 0)
        return -ENOENT;
    pthread_mutex_lock(&rm.lock);
    for (size_t i = 0; rm.active && i < rm.nobjs; i++) {
        struct rm_obj *o = &rm.objs[i];
        if (o->id != info.object_id)
            continue;
        if (o->h_split || (at & 0xfff) || at == o->va) {
            rc = -EINVAL;
            break;
        }
        uint64_t rest = o->va + o->size - at;
        uint32_t h = rm_memory_locked(o->device, info.memfd,
                                      info.memfd_offset + (off_t)(at - o->va), rest);
        if (!h) {
            rc = -ENOMEM;
            break;
        }
        /* the second mapping replaces the first's record; map the head again */
        uvm_map_locked(at, rest, h);
        uvm_map_locked(o->va, at - o->va, o->h_memory);
        o->split = at;
        o->h_split = h;
        rc = 0;
        break;
    }
    pthread_mutex_unlock(&rm.lock);
    close(info.memfd);
    return rc;
}
