/*
 * emu_libc.c - the libc functions the RM-ioctl emulator interposes, the
 * emulated fd table and the fake /sys and /proc files.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "emu_internal.h"

struct emu_state emu = { .lock = PTHREAD_MUTEX_INITIALIZER };
static pthread_once_t emu_once = PTHREAD_ONCE_INIT;
static long next_cpumap_id = 1;

void emu_lock(void) { pthread_mutex_lock(&emu.lock); }
void emu_unlock(void) { pthread_mutex_unlock(&emu.lock); }

void emu_log(const char *fmt, ...)
{
    if (!emu.trace)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(buf) - 2)
        n = (int)sizeof(buf) - 2;
    buf[n++] = '\n';
    ssize_t w = write(2, buf, (size_t)n);
    (void)w;
}

/* getenv, or the variable from /proc/self/environ when libc cannot answer
 * yet: under a sanitizer the first interposed call (and so init_once) can
 * come from the runtime's own start-up, before environ is set up.  The
 * value is used before the next call (one static buffer). */
static const char *emu_getenv(const char *name)
{
    static char env[16384];
    const char *v = getenv(name);
    size_t len = strlen(name), got = 0;

    if (v)
        return v;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/environ", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    ssize_t n;
    while (got + 1 < sizeof(env) &&
           (n = (ssize_t)syscall(SYS_read, fd, env + got, sizeof(env) - 1 - got)) > 0)
        got += (size_t)n;
    syscall(SYS_close, fd);
    env[got] = '\0';
    for (size_t i = 0; i < got; i += strlen(env + i) + 1)
        if (strncmp(env + i, name, len) == 0 && env[i + len] == '=')
            return env + i + len + 1;
    return NULL;
}

static void copy_version(char *dst, const char *src)
{
    snprintf(dst, NVRM_VERSION_STRING_LEN, "%s", src);
}

static void init_once(void)
{
    emu.real.open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    emu.real.openat = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
    emu.real.close = (int (*)(int))dlsym(RTLD_NEXT, "close");
    emu.real.ioctl = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
    emu.real.mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
    emu.real.munmap = (int (*)(void *, size_t))dlsym(RTLD_NEXT, "munmap");
    emu.real.readlink = (ssize_t (*)(const char *, char *, size_t))dlsym(RTLD_NEXT, "readlink");
    emu.real.access = (int (*)(const char *, int))dlsym(RTLD_NEXT, "access");

    const char *v = emu_getenv("NVRM_EMU_TRACE");
    emu.trace = v && *v && strcmp(v, "0") != 0;
    v = emu_getenv("NVRM_EMU_VERSION");
    copy_version(emu.kernel_version, v && *v ? v : "580.159.04");
    v = emu_getenv("NVRM_EMU_SYSFS_VERSION");
    copy_version(emu.sysfs_version, v && *v ? v : emu.kernel_version);
    emu.next_client = 0xc1d00001u;
    emu.next_handle = 0xcaf00001u;
    emu.next_linear = 0x100040000000ull;

    emu_lock();
    v = emu_getenv("NVRM_EMU_BAR1");
    if (v)
        emu.bar1_size = strtoull(v, NULL, 0);
    v = emu_getenv("NVRM_EMU_GPUS");
    if (v && *v && emu_parse_gpus_locked(v) == 0)
        emu.gpus_explicit = 1;
    v = emu_getenv("NVRM_EMU_FAIL");
    if (v && *v)
        emu_rules_from_env_locked(v);
    emu_unlock();
    pthread_atfork(emu_lock, emu_unlock, emu_unlock);
}

void emu_init(void)
{
    pthread_once(&emu_once, init_once);
}

/* Set up at load rather than at the first interposed call, so that the
 * fork handler above is registered before libgdrx's.  Prepare handlers run
 * last-registered first: libgdrx's then take their locks before emu.lock,
 * the same order as libgdrx calling mmap while holding them.  Registered
 * lazily from inside such a call, the emulator's handler ran first and the
 * two orders crossed (TSan: lock-order inversion in test_child_starts_over,
 * whose parent reaches the emulator first through gdrx's hook install). */
__attribute__((constructor)) static void emu_load(void)
{
    emu_init();
}

/* ------------------------------------------------------------- paths */

static int memfd_with(const char *name, const char *content, int flags)
{
    int fd = memfd_create(name, (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
    if (fd < 0)
        return -1;
    size_t n = strlen(content);
    if (write(fd, content, n) != (ssize_t)n || lseek(fd, 0, SEEK_SET) != 0) {
        int e = errno;
        emu.real.close(fd);
        errno = e ? e : EIO;
        return -1;
    }
    return fd;
}

static int new_emu_fd(enum emu_fd_kind kind, int gpu, const char *name, int flags)
{
    int fd = memfd_create(name, (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
    if (fd < 0)
        return -1;
    if (fd >= EMU_MAX_FD) {
        emu.real.close(fd);
        errno = EMFILE;
        return -1;
    }
    memset(&emu.fds[fd], 0, sizeof(emu.fds[fd]));
    emu.fds[fd].kind = kind;
    emu.fds[fd].gpu = gpu;
    return fd;
}

/* 1 and *fd set if path is one of ours (fd may be -1 with errno), else 0. */
static int open_emulated(const char *path, int flags, int *fd)
{
    char op[80];
    const char *gpus_dir = "/proc/driver/nvidia/gpus/";

    if (!path || (strncmp(path, "/dev/nvidia", 11) != 0 &&
                  strcmp(path, "/sys/module/nvidia/version") != 0 &&
                  strncmp(path, gpus_dir, strlen(gpus_dir)) != 0))
        return 0;

    emu_lock();
    if (!emu.ngpus)
        emu_default_gpus_locked();
    snprintf(op, sizeof(op), "open:%s", path);
    long inj = emu_injected_locked(op);
    *fd = -1;
    if (inj < 0) {
        errno = (int)-inj;
    } else if (strcmp(path, "/dev/nvidiactl") == 0) {
        *fd = new_emu_fd(EMU_FD_CTL, -1, "nvidiactl", flags);
        emu.stats.ctl_opens += *fd >= 0;
    } else if (strcmp(path, "/dev/nvidia-uvm") == 0) {
        *fd = new_emu_fd(EMU_FD_UVM, -1, "nvidia-uvm", flags);
    } else if (strcmp(path, "/sys/module/nvidia/version") == 0) {
        char buf[NVRM_VERSION_STRING_LEN + 2];
        snprintf(buf, sizeof(buf), "%s\n", emu.sysfs_version);
        *fd = memfd_with("nvidia-version", buf, flags);
    } else if (strncmp(path, gpus_dir, strlen(gpus_dir)) == 0) {
        const char *bus = path + strlen(gpus_dir);
        const struct emu_gpu *g = NULL;
        for (int i = 0; i < emu.ngpus; i++) {
            size_t n = strlen(emu.gpus[i].bus_id);
            if (strncmp(bus, emu.gpus[i].bus_id, n) == 0 && strcmp(bus + n, "/information") == 0)
                g = &emu.gpus[i];
        }
        if (g) {
            char buf[512];
            snprintf(buf, sizeof(buf),
                     "Model: \t\t NVIDIA H200 (emulated)\n"
                     "IRQ:   \t\t 42\n"
                     "GPU UUID: \t GPU-00000000-0000-0000-0000-%012x\n"
                     "Video BIOS: \t ??.??.??.??.??\n"
                     "Bus Type: \t PCIe\n"
                     "DMA Size: \t 52 bits\n"
                     "DMA Mask: \t 0xfffffffffffff\n"
                     "Bus Location: \t %s\n"
                     "Device Minor: \t %d\n"
                     "GPU Firmware: \t %s\n"
                     "GPU Excluded:\t No\n",
                     g->gpu_id, g->bus_id, g->minor, emu.kernel_version);
            *fd = memfd_with("nvidia-gpu-information", buf, flags);
        } else {
            errno = ENOENT;
        }
    } else {
        char *end = NULL;
        long minor = strtol(path + 11, &end, 10);
        if (path[11] >= '0' && path[11] <= '9' && end && *end == '\0' &&
            emu_gpu_by_minor((int)minor)) {
            const struct emu_gpu *g = emu_gpu_by_minor((int)minor);
            *fd = new_emu_fd(EMU_FD_DEV, (int)(g - emu.gpus), "nvidia-dev", flags);
            if (*fd >= 0 && minor < NVRM_EMU_MAX_GPUS)
                emu.stats.dev_opens[minor]++;
        } else {
            errno = ENOENT;
        }
    }
    emu_log("emu: open(%s) = %d", path, *fd);
    emu_unlock();
    return 1;
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    emu_init();
    int fd;
    if (open_emulated(path, flags, &fd))
        return fd;
    return emu.real.open(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return open(path, flags, mode);
}

int __open_2(const char *path, int flags);
int __open_2(const char *path, int flags) { return open(path, flags); }
int __open64_2(const char *path, int flags);
int __open64_2(const char *path, int flags) { return open(path, flags); }

int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    emu_init();
    int fd;
    if ((dirfd == AT_FDCWD || path[0] == '/') && open_emulated(path, flags, &fd))
        return fd;
    return emu.real.openat(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return openat(dirfd, path, flags, mode);
}

int __openat_2(int dirfd, const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags) { return openat(dirfd, path, flags); }
int __openat64_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags) { return openat(dirfd, path, flags); }

/* The emulated device nodes exist (/dev/nvidiactl, /dev/nvidia-uvm, one
 * /dev/nvidiaN per GPU) and are read-write; "access:<path>" rules fail
 * the call. */
int access(const char *path, int mode)
{
    char op[80], *end = NULL;
    int rc = 0;

    emu_init();
    if (strncmp(path, "/dev/nvidia", 11) != 0)
        return emu.real.access(path, mode);
    emu_lock();
    if (!emu.ngpus)
        emu_default_gpus_locked();
    snprintf(op, sizeof(op), "access:%s", path);
    long inj = emu_injected_locked(op);
    long minor = strtol(path + 11, &end, 10);
    if (inj < 0) {
        errno = (int)-inj;
        rc = -1;
    } else if (strcmp(path, "/dev/nvidiactl") != 0 && strcmp(path, "/dev/nvidia-uvm") != 0 &&
               !(path[11] >= '0' && path[11] <= '9' && end && *end == '\0' &&
                 emu_gpu_by_minor((int)minor))) {
        errno = ENOENT;
        rc = -1;
    }
    emu_log("emu: access(%s) = %d", path, rc);
    emu_unlock();
    return rc;
}

static enum emu_fd_kind kind_of(int fd)
{
    return (fd >= 0 && fd < EMU_MAX_FD) ? emu.fds[fd].kind : EMU_FD_NONE;
}

int close(int fd)
{
    emu_init();
    if (kind_of(fd) != EMU_FD_NONE) {
        emu_lock();
        emu_fd_closed_locked(fd);
        emu_unlock();
    }
    return emu.real.close(fd);
}

int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    emu_init();

    enum emu_fd_kind kind = kind_of(fd);
    if (kind == EMU_FD_NONE)
        return emu.real.ioctl(fd, req, arg);

    int rc;
    emu_lock();
    if (kind == EMU_FD_UVM)
        rc = emu_uvm_ioctl_locked(fd, req, arg);
    else if (_IOC_TYPE(req) != NVRM_IOCTL_MAGIC)
        rc = -ENOTTY;
    else
        rc = emu_rm_ioctl_locked(fd, _IOC_NR(req), arg, _IOC_SIZE(req));
    emu_unlock();
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    return 0;
}

/* Forget [addr, addr+len) in the CPU-mapping records (munmap, or a
 * MAP_FIXED mapping placed over it); pieces left on either side stay. */
static void forget_range_locked(uintptr_t addr, size_t len)
{
    uintptr_t end = addr + len;
    for (struct emu_cpumap **pp = &emu.cpumaps; *pp;) {
        struct emu_cpumap *m = *pp;
        uintptr_t mend = m->addr + m->len;
        if (mend <= addr || m->addr >= end) {
            pp = &m->next;
            continue;
        }
        if (m->addr < addr && mend > end) { /* split */
            struct emu_cpumap *tail = malloc(sizeof(*tail));
            if (tail) {
                tail->id = m->id;
                tail->addr = end;
                tail->len = mend - end;
                tail->next = m->next;
                m->next = tail;
            }
            m->len = addr - m->addr;
            pp = &m->next;
        } else if (m->addr < addr) {
            m->len = addr - m->addr;
            pp = &m->next;
        } else if (mend > end) {
            m->len = mend - end;
            m->addr = end;
            pp = &m->next;
        } else {
            *pp = m->next;
            free(m);
        }
    }
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    emu_init();
    enum emu_fd_kind kind = kind_of(fd);
    if (kind == EMU_FD_NONE || (flags & MAP_ANONYMOUS)) {
        void *p = emu.real.mmap(addr, len, prot, flags, fd, off);
        if (p != MAP_FAILED && (flags & MAP_FIXED) && emu.cpumaps) {
            emu_lock();
            forget_range_locked((uintptr_t)p, len);
            emu_unlock();
        }
        return p;
    }

    void *p = MAP_FAILED;
    int err = ENODEV;
    emu_lock();
    struct emu_fd *f = &emu.fds[fd];
    long inj = emu_injected_locked("mmap");
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    if (inj < 0) {
        err = (int)-inj;
    } else if (kind != EMU_FD_DEV || !f->has_ctx || !f->ctx_mem || f->ctx_mem->memfd < 0) {
        err = EINVAL;
    } else if (off != 0 || ((len + pg - 1) & ~(pg - 1)) != f->ctx_length ||
               !(flags & MAP_SHARED)) {
        /* nvidia_mmap_helper: pgoff 0 and exactly the validated range */
        err = EINVAL;
    } else {
        p = emu.real.mmap(addr, len, prot, flags, f->ctx_mem->memfd,
                          f->ctx_mem->memfd_off + (off_t)f->ctx_offset);
        err = errno;
        struct emu_cpumap *m = p != MAP_FAILED ? malloc(sizeof(*m)) : NULL;
        if (m) {
            if (flags & MAP_FIXED)
                forget_range_locked((uintptr_t)p, len);
            m->id = next_cpumap_id++;
            m->addr = (uintptr_t)p;
            m->len = len;
            m->next = emu.cpumaps;
            emu.cpumaps = m;
        }
    }
    emu_log("emu: mmap(fd %d, len 0x%zx) = %p", fd, len, p);
    emu_unlock();
    if (p == MAP_FAILED)
        errno = err;
    return p;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mmap(addr, len, prot, flags, fd, off);
}

int munmap(void *addr, size_t len)
{
    emu_init();
    int rc = emu.real.munmap(addr, len);
    if (rc == 0 && emu.cpumaps) {
        emu_lock();
        forget_range_locked((uintptr_t)addr, len);
        emu_unlock();
    }
    return rc;
}

ssize_t readlink(const char *path, char *buf, size_t size)
{
    emu_init();
    int fd = -1;
    char tail;
    if ((sscanf(path, "/proc/self/fd/%d%c", &fd, &tail) == 1) &&
        kind_of(fd) != EMU_FD_NONE) {
        char name[32];
        emu_lock();
        enum emu_fd_kind kind = kind_of(fd);
        if (kind == EMU_FD_CTL)
            snprintf(name, sizeof(name), "/dev/nvidiactl");
        else if (kind == EMU_FD_UVM)
            snprintf(name, sizeof(name), "/dev/nvidia-uvm");
        else
            snprintf(name, sizeof(name), "/dev/nvidia%d", emu.gpus[emu.fds[fd].gpu].minor);
        emu_unlock();
        size_t n = strlen(name);
        if (n > size)
            n = size;
        memcpy(buf, name, n);
        return (ssize_t)n;
    }
    return emu.real.readlink(path, buf, size);
}

int nvrm_emu_present(void)
{
    return 1;
}

int nvrm_emu_get_stats(struct nvrm_emu_stats *out)
{
    if (!out)
        return -EINVAL;
    emu_init();
    emu_lock();
    *out = emu.stats;
    long live = 0;
    for (struct emu_cpumap *m = emu.cpumaps; m; m = m->next) {
        int first = 1;
        for (struct emu_cpumap *o = emu.cpumaps; o != m; o = o->next)
            if (o->id == m->id)
                first = 0;
        live += first;
    }
    out->cpu_maps_live = live;
    emu_unlock();
    return 0;
}
