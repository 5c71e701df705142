/*
 * sim_backing_memfd.c - default page provider: one memfd per object.
 *
 * SPDX-License-Identifier: MIT
 *
 * The memfd is named "simcu-obj-<id>" so tests can see, in /proc/self/fd
 * and /proc/self/maps, whether anyone still holds an object's pages.
 */
#include "sim_backing.h"

#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static int memfd_create_object(uint64_t id, int device, size_t size,
                               struct sim_backing_object *out)
{
    char name[64];
    (void)device;

    snprintf(name, sizeof(name), "simcu-obj-%llu", (unsigned long long)id);
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (ftruncate(fd, (off_t)size) != 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    void *cpu = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (cpu == MAP_FAILED) {
        int err = -errno;
        close(fd);
        return err;
    }
    out->fd = fd;
    out->offset = 0;
    out->cpu = cpu;
    out->size = size;
    out->priv = NULL;
    return 0;
}

static void memfd_destroy_object(struct sim_backing_object *obj)
{
    munmap(obj->cpu, obj->size);
    close(obj->fd);
    obj->cpu = NULL;
    obj->fd = -1;
}

const struct sim_backing_ops sim_backing_memfd = {
    .name = "memfd",
    .create = memfd_create_object,
    .destroy = memfd_destroy_object,
};
