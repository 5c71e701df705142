/*
 * sim_backing_mocknv.c - page provider for the qemu kernel tests
 * (SIMCU_BACKING=mocknv): the simulated GPU's memory is the ivshmem BAR of
 * the mock NVIDIA P2P provider (tests/kmod/mock), so gdrdrv.ko pins and
 * maps exactly the pages the sim's device pointers name.
 *
 * SPDX-License-Identifier: MIT
 *
 * Each object is a BAR range the mock carves (MOCK_IOC_CARVE) and the sim
 * reaches through its own write-combined view of the BAR (sysfs
 * resource2_wc: the same memory type gdrdrv maps with, so PAT sees no
 * conflict).  The mock must also know the object's device VA, which
 * nvidia_p2p_get_pages() looks up; a backing learns that VA only after
 * create(), so the backing watches object creation through the sim's
 * observer and binds the VA then (MOCK_IOC_BIND), before the allocation is
 * returned to the caller.  An observer a test installs is kept and called
 * after ours (ours is put back in front of it at the next object).
 * destroy() frees the range through the mock, which runs gdrdrv's free
 * callbacks as cudaFree does; a process that dies frees its ranges when
 * the mock's file is closed.  Both simulated GPUs share the one BAR.
 */
#include "sim_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mock_nvp2p_ioctl.h"

#define MNV_VENDOR 0x1af4 /* qemu ivshmem-plain, BAR2 = shared memory */
#define MNV_DEVICE 0x1110

static struct {
    pthread_mutex_t  lock;   /* opening the files */
    int              state;  /* 0 unopened, 1 open, < 0 errno of the failure */
    int              mock_fd, bar_fd;
    simcu_observer_t chained; /* the test's observer (under sim.lock) */
} mnv = { .lock = PTHREAD_MUTEX_INITIALIZER };

static unsigned read_hex(const char *dir, const char *file)
{
    char path[512], buf[32] = "";
    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    if (!fgets(buf, sizeof(buf), f))
        buf[0] = '\0';
    fclose(f);
    return (unsigned)strtoul(buf, NULL, 0);
}

/* The write-combined view of the ivshmem BAR, or -errno. */
static int open_bar(void)
{
    DIR *d = opendir("/sys/bus/pci/devices");
    struct dirent *e;
    int fd = -ENODEV;

    if (!d)
        return -errno;
    while (fd == -ENODEV && (e = readdir(d))) {
        if (e->d_name[0] == '.' || read_hex(e->d_name, "vendor") != MNV_VENDOR ||
            read_hex(e->d_name, "device") != MNV_DEVICE)
            continue;
        char path[512];
        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource2_wc", e->d_name);
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            fd = -errno;
    }
    closedir(d);
    return fd;
}

static int mnv_open(void)
{
    pthread_mutex_lock(&mnv.lock);
    if (mnv.state == 0) {
        mnv.mock_fd = open("/dev/mock_nvp2p", O_RDWR | O_CLOEXEC);
        if (mnv.mock_fd < 0) {
            mnv.state = -errno;
        } else if ((mnv.bar_fd = open_bar()) < 0) {
            mnv.state = mnv.bar_fd;
            close(mnv.mock_fd);
        } else {
            mnv.state = 1;
        }
        if (mnv.state < 0)
            fprintf(stderr, "simcu: SIMCU_BACKING=mocknv: no mock NVIDIA P2P provider (%s)\n",
                    strerror(-mnv.state));
    }
    int rc = mnv.state < 0 ? mnv.state : 0;
    pthread_mutex_unlock(&mnv.lock);
    return rc;
}

static simcu_observer_t chained(void)
{
    sim_lock();
    simcu_observer_t o = mnv.chained;
    sim_unlock();
    return o;
}

static void mnv_object_created(const struct simcu_alloc_info *obj, void *arg)
{
    struct mock_bar_args b = { .bar_off = (uint64_t)obj->memfd_offset, .va = obj->object_va };

    /* Cannot fail the allocation from here: a pin of it will fail instead. */
    if (ioctl(mnv.mock_fd, MOCK_IOC_BIND, &b) != 0)
        fprintf(stderr, "simcu: mocknv: binding object %llu at VA %#llx failed (%s)\n",
                (unsigned long long)obj->object_id, (unsigned long long)obj->object_va,
                strerror(errno));
    simcu_observer_t o = chained();
    if (o.object_created)
        o.object_created(obj, o.arg);
    (void)arg;
}

static void fwd_object_destroyed(uint64_t object_id, void *arg)
{
    simcu_observer_t o = chained();
    if (o.object_destroyed)
        o.object_destroyed(object_id, o.arg);
    (void)arg;
}

static void fwd_alloc_created(const struct simcu_alloc_info *a, void *arg)
{
    simcu_observer_t o = chained();
    if (o.alloc_created)
        o.alloc_created(a, o.arg);
    (void)arg;
}

static void fwd_alloc_freed(const struct simcu_alloc_info *a, void *arg)
{
    simcu_observer_t o = chained();
    if (o.alloc_freed)
        o.alloc_freed(a, o.arg);
    (void)arg;
}

/* Put our observer in front of whatever the test installed since. */
static void watch_objects(void)
{
    sim_lock();
    if (sim.observer.object_created != mnv_object_created) {
        mnv.chained = sim.observer;
        sim.observer = (simcu_observer_t){
            .object_created = mnv_object_created,
            .object_destroyed = fwd_object_destroyed,
            .alloc_created = fwd_alloc_created,
            .alloc_freed = fwd_alloc_freed,
        };
    }
    sim_unlock();
}

static int mnv_create_object(uint64_t id, int device, size_t size, struct sim_backing_object *out)
{
    (void)id;
    (void)device;
    int rc = mnv_open();
    if (rc)
        return rc;
    watch_objects();

    struct mock_carve_args c = { .va = 0, .size = size };
    if (ioctl(mnv.mock_fd, MOCK_IOC_CARVE, &c) != 0)
        return errno == ENOSPC ? -ENOMEM : -errno;
    void *cpu = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mnv.bar_fd, (off_t)c.bar_off);
    if (cpu == MAP_FAILED) {
        int err = -errno;
        struct mock_bar_args b = { .bar_off = c.bar_off };
        ioctl(mnv.mock_fd, MOCK_IOC_FREE_BAR, &b);
        return err;
    }
    /* BAR ranges are reused: what the last owner wrote is still there. */
    memset(cpu, 0, size);
    out->fd = mnv.bar_fd;
    out->offset = (off_t)c.bar_off;
    out->cpu = cpu;
    out->size = size;
    out->priv = NULL;
    return 0;
}

static void mnv_destroy_object(struct sim_backing_object *obj)
{
    struct mock_bar_args b = { .bar_off = (uint64_t)obj->offset };

    /* cudaFree: gdrdrv's free callbacks run now; persistent pins keep the
     * range.  Fails only in a forked child, which owns no range. */
    ioctl(mnv.mock_fd, MOCK_IOC_FREE_BAR, &b);
    munmap(obj->cpu, obj->size);
    obj->cpu = NULL;
    obj->fd = -1; /* shared by every object: stays open */
}

const struct sim_backing_ops sim_backing_mocknv = {
    .name = "mocknv",
    .create = mnv_create_object,
    .destroy = mnv_destroy_object,
};
