/*
 * nvrm_emu.h - control API of the RM-ioctl emulator (tests/nvrm/emu), a
 * test double of nvidia.ko / nvidia-uvm.ko for machines without a GPU.
 *
 * SPDX-License-Identifier: MIT
 *
 * libnvrm_emu.so is LD_PRELOADed.  It interposes open/openat/close/ioctl/
 * mmap/munmap/readlink and serves, entirely in this process:
 *   /dev/nvidiactl, /dev/nvidiaN, /dev/nvidia-uvm   (RM and UVM ioctls)
 *   /sys/module/nvidia/version                        (a memfd)
 *   /proc/driver/nvidia/gpus/<bus id>/information     (a memfd)
 * Everything else goes to the real libc.  RM memory objects are backed by
 * the memfd of the simulated GPU's object (tests/sim/sim_rm.c binds them),
 * so RM_MAP_MEMORY + mmap of /dev/nvidiaN maps the very pages that the
 * simulated device pointer names.
 *
 * Behaviour kept from the real driver (580): one mmap context per
 * /dev/nvidiaN fd, mmap at offset 0 of exactly the mapped length, clients
 * owned by the ctl fd and by the process that made them (a forked child
 * gets NV_ERR_INVALID_CLIENT), dup allowed within the process or for
 * objects shared with RS_SHARE_TYPE_ALL, STRICT version check that fails
 * the ioctl with EINVAL.  The emulator additionally insists that a ctl fd
 * passes the version check before it may allocate a client.
 *
 * Users outside the emulator declare these functions weak and test them
 * for NULL: that is how the simulated libcuda notices the emulator.
 *
 * Environment (read once): NVRM_EMU_VERSION (kernel's version, default
 * 580.159.04), NVRM_EMU_SYSFS_VERSION (content of /sys/module/nvidia/
 * version, default the same), NVRM_EMU_GPUS ("busid=minor,..."; default:
 * the simulated GPUs, minors in reverse order), NVRM_EMU_FAIL
 * ("op=value[*count];...", see nvrm_emu_fail), NVRM_EMU_BAR1 (bytes of BAR1
 * space: RM_MAP_MEMORY beyond it fails with NV_ERR_INSUFFICIENT_RESOURCES;
 * default unlimited), NVRM_EMU_TRACE=1 (log every request on stderr).
 * The layouts spoken are those of the reported version's branch
 * (emu_layout.h); NVRM_EMU_UVM_LAYOUT=<version> (read at each request)
 * lays UVM_MAP_EXTERNAL_ALLOCATION out as that version's branch would.
 */
#ifndef NVRM_EMU_H
#define NVRM_EMU_H

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NVRM_EMU_MAX_GPUS 16

/* 1: the emulator is loaded. */
int nvrm_emu_present(void);

/* Versions the fake kernel and the fake sysfs file report (NULL = keep). */
int nvrm_emu_set_versions(const char *kernel, const char *sysfs);

/* Replace the GPU table: "0000:06:00.0=1,0000:07:00.0=0" (bus id = minor).
 * GPU i of the table is deviceInstance i for the RM. */
int nvrm_emu_set_gpus(const char *spec);

/* The simulated libcuda announces its GPUs' bus ids at cuInit; unless a
 * table was set explicitly they become the table, minors reversed. */
int nvrm_emu_sim_gpus(int count, const char *const *bus_ids);

/* The version the emulated kernel reports now, into buf (len bytes):
 * the simulated libcuda lays its requests out as that branch does, also
 * after a test changed the version mid-process (nvrm_emu_set_versions). */
void nvrm_emu_kernel_version(char *buf, size_t len);

/* Back RM memory object (h_client, h_memory) with [memfd_offset,
 * +size) of memfd (dup'ed; the caller keeps its fd). */
int nvrm_emu_bind_memory(uint32_t h_client, uint32_t h_memory, int memfd,
                         off_t memfd_offset, uint64_t size);

/*
 * Make the next `count` requests named `op` fail (count <= 0 removes the
 * rule).  op: "version", "alloc:0x41", "alloc" (any class), "free", "dup",
 * "share", "map", "unmap", "export" (dma-buf), "control:0x205", "control",
 * "uvm_map", "open:/dev/nvidia0", "access:/dev/nvidiactl", "mmap".  value > 0
 * is an NV_STATUS written to the request's status field (the ioctl itself
 * succeeds, as with the real driver); value < 0 makes the call fail with
 * errno -value.
 */
int nvrm_emu_fail(const char *op, long value, int count);
void nvrm_emu_fail_clear(void);

/* BAR1 space for RM_MAP_MEMORY, in bytes (0 = unlimited). */
int nvrm_emu_set_bar1(uint64_t bytes);

struct nvrm_emu_stats {
    long clients;          /* live root clients */
    long memory_objects;   /* live memory handles (allocated, dup'ed, imported) */
    long dups;             /* RM_DUP_OBJECT calls that succeeded */
    long rm_maps;          /* RM_MAP_MEMORY calls that succeeded */
    long rm_maps_live;     /* ... not yet undone by RM_UNMAP_MEMORY */
    long rm_mapped_bytes;  /* BAR1 bytes those live RM mappings use */
    long cpu_maps_live;    /* mmaps of /dev/nvidiaN not yet unmapped/replaced */
    long dev_opens[NVRM_EMU_MAX_GPUS]; /* opens of /dev/nvidiaN by minor */
    long ctl_opens;        /* opens of /dev/nvidiactl */
    long version_checks;   /* STRICT checks that passed */
    long uvm_records;      /* live UVM external mappings */
    long dmabuf_exports;   /* NV_ESC_EXPORT_TO_DMABUF_FD requests that succeeded */
    long shares_all;       /* RM_SHARE with RS_SHARE_TYPE_ALL (node-wide) that succeeded */
};
int nvrm_emu_get_stats(struct nvrm_emu_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* NVRM_EMU_H */
