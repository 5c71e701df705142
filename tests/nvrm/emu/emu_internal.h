/*
 * emu_internal.h - state shared by the RM-ioctl emulator's files.
 *
 * SPDX-License-Identifier: MIT
 *
 * One mutex (emu.lock) protects everything; it is taken by every
 * interposed call that touches an emulated fd and by the control API, and
 * held across fork (pthread_atfork) so a child never inherits it locked.
 * Code under the lock calls only the real libc functions (emu.real).
 */
#ifndef NVRM_EMU_INTERNAL_H
#define NVRM_EMU_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "emu_layout.h"
#include "nvrm_abi.h"
#include "nvrm_emu.h"

#define EMU_MAX_FD 4096

enum emu_fd_kind { EMU_FD_NONE = 0, EMU_FD_CTL, EMU_FD_DEV, EMU_FD_UVM };

/* Pages of one RM memory object; shared by its dups and imports. */
struct emu_mem {
    int      refs;
    int      memfd;       /* -1 until bound; then a private dup */
    off_t    memfd_off;
    uint64_t size;
    int      gpu;         /* index in emu.gpus */
};

/* What an EXPORT_OBJECTS_TO_FD ctl fd carries. */
struct emu_export {
    int             gpu;
    uint16_t        max_objects;
    uint16_t        count;
    uint8_t         metadata[NVRM_EXPORT_METADATA_SIZE];
    struct emu_mem *mems[8];
};

struct emu_fd {
    enum emu_fd_kind kind;
    int              gpu;          /* EMU_FD_DEV: index in emu.gpus */
    int              version_ok;   /* EMU_FD_CTL: STRICT check passed */
    int              has_ctx;      /* EMU_FD_DEV: RM_MAP_MEMORY made a context */
    struct emu_mem  *ctx_mem;
    uint64_t         ctx_offset, ctx_length;
    struct emu_export *export;     /* EMU_FD_CTL used as an export fd */
};

struct emu_obj {
    struct emu_obj *next;
    uint32_t        client, handle, parent, cls;
    int             gpu;           /* device, subdevice, memory */
    int             owner_fd;      /* client: the ctl fd that made it */
    pid_t           pid;           /* client: the process that made it */
    int             shared_all;    /* memory: RM_SHARE type ALL */
    struct emu_mem *mem;           /* memory */
};

struct emu_rmmap {
    struct emu_rmmap *next;
    uint32_t          client, memory;
    uint64_t          linear, length;
};

/* One piece of a CPU mapping of /dev/nvidiaN; a mapping partly replaced
 * or unmapped leaves pieces that share its id. */
struct emu_cpumap {
    struct emu_cpumap *next;
    long               id;
    uintptr_t          addr;
    size_t             len;
};

struct emu_uvm {
    struct emu_uvm *next;
    uint64_t        base, length;
};

struct emu_gpu {
    char     bus_id[16];          /* "0000:06:00.0" */
    unsigned domain, bus, slot;
    int      minor;
    uint32_t gpu_id;
};

struct emu_rule {
    char op[96];
    long value;
    int  count;
};

struct emu_real {
    int   (*open)(const char *, int, ...);
    int   (*openat)(int, const char *, int, ...);
    int   (*close)(int);
    int   (*ioctl)(int, unsigned long, ...);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    int   (*munmap)(void *, size_t);
    ssize_t (*readlink)(const char *, char *, size_t);
    int   (*access)(const char *, int);
};

struct emu_state {
    pthread_mutex_t   lock;
    struct emu_real   real;
    int               trace;
    char              kernel_version[NVRM_VERSION_STRING_LEN];
    char              sysfs_version[NVRM_VERSION_STRING_LEN];
    struct emu_gpu    gpus[NVRM_EMU_MAX_GPUS];
    int               ngpus;
    int               gpus_explicit;  /* set by env or nvrm_emu_set_gpus */
    struct emu_fd     fds[EMU_MAX_FD];
    struct emu_obj   *objs;
    struct emu_rmmap *rmmaps;
    struct emu_cpumap *cpumaps;
    struct emu_uvm   *uvms;
    uint32_t          next_client, next_handle;
    uint64_t          next_linear;
    uint64_t          bar1_size;      /* 0 = unlimited */
    struct emu_rule   rules[32];
    struct nvrm_emu_stats stats;
};

extern struct emu_state emu;

/* emu_libc.c */
void emu_init(void);
void emu_lock(void);
void emu_unlock(void);
void emu_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* emu_config.c (callers hold the lock) */
int  emu_parse_gpus_locked(const char *spec);
void emu_default_gpus_locked(void);
const struct emu_gpu *emu_gpu_by_minor(int minor);
/* The injected result for op, or 0 (no rule).  Consumes one use. */
long emu_injected_locked(const char *op);
void emu_rules_from_env_locked(const char *spec);

/* emu_rm.c (callers hold the lock) */
int  emu_rm_ioctl_locked(int fd, unsigned nr, void *arg, size_t size);
struct emu_obj *emu_find_obj(uint32_t client, uint32_t handle);
int  emu_client_check(int fd, uint32_t client); /* NV_STATUS */
struct emu_obj *emu_new_memory_locked(uint32_t client, uint32_t handle,
                                      uint32_t parent, struct emu_mem *mem);
void emu_mem_put_locked(struct emu_mem *mem);
void emu_fd_closed_locked(int fd);

/* emu_ctrl.c (callers hold the lock) */
nvrm_status_t emu_control_locked(int fd, struct nvrm_rm_control *c);

/* emu_uvm.c (callers hold the lock) */
int  emu_uvm_ioctl_locked(int fd, unsigned long req, void *arg);

#endif /* NVRM_EMU_INTERNAL_H */
