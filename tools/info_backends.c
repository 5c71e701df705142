/*
 * info_backends.c - which backends work, and for each that does not, why
 * and what fixes it.
 *
 * SPDX-License-Identifier: MIT
 *
 * A backend "works" when gdrx_open on it succeeds and a 64 KiB cuMemAlloc
 * buffer pins, maps and round-trips 8 bytes through the mapping: dmabuf, for
 * one, opens on drivers that later refuse to mmap.  The library's own
 * reasons are captured from its log (GDRX_LOG_LEVEL raised to info for the
 * probe, stderr redirected to a file around each call), so the user does
 * not need to set anything; gdrx-info's diagnosis of the host comes on top.
 */
#ifndef _GNU_SOURCE
#define _XOPEN_SOURCE 700 /* nftw */
#endif
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "config.h"
#include "gdrx.h"
#include "info.h"
#include "tool_cuda.h"

#define LOG_BYTES 4096 /* of library messages kept per probe */

struct capture {
    FILE *file;
    int   saved;
};

static void capture_begin(struct capture *c)
{
    fflush(stderr);
    c->saved = -1;
    c->file = tmpfile();
    if (!c->file)
        return; /* the probe still runs; its messages then go to stderr */
    c->saved = dup(STDERR_FILENO);
    if (c->saved < 0 || dup2(fileno(c->file), STDERR_FILENO) < 0) {
        if (c->saved >= 0)
            close(c->saved);
        fclose(c->file);
        c->file = NULL;
    }
}

/* Keep the library's messages, without the "gdrx[pid] " prefix and without
 * the per-backend summaries that the report states itself. */
static void capture_end(struct capture *c, char *out, size_t len)
{
    char line[600];
    size_t used = strlen(out);

    if (!c->file)
        return;
    fflush(stderr);
    dup2(c->saved, STDERR_FILENO);
    close(c->saved);
    rewind(c->file);
    while (fgets(line, sizeof(line), c->file)) {
        char *msg = strncmp(line, "gdrx[", 5) == 0 ? strstr(line, "] ") : NULL;
        msg = msg ? msg + 2 : line;
        if (strstr(msg, "open_one: backend ") || strstr(msg, ": no backend works"))
            continue;
        int n = snprintf(out + used, len - used, "%s", msg);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
    fclose(c->file);
}

/* The last "error:" line of a log, else its last line ("" if empty). */
static void last_reason(const char *log, char *out, size_t len)
{
    const char *best = NULL, *p = log;

    out[0] = '\0';
    while (*p) {
        if (!best || strncmp(p, "error: ", 7) == 0 || strncmp(best, "error: ", 7) != 0)
            best = p;
        p += strcspn(p, "\n");
        p += *p == '\n';
    }
    if (best)
        snprintf(out, len, "%.*s", (int)strcspn(best, "\n"), best);
}

/* The library's lines about backend `name` (and every error or warning)
 * explain a failure; the rest, and everything when it works, only -v shows. */
/* A log line without its "level: function: " tag, for the problem text. */
static const char *untagged(const char *line)
{
    static const char *const levels[] = { "error: ", "warn: ", "info: ", "debug: " };

    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
        if (strncmp(line, levels[i], strlen(levels[i])) == 0) {
            const char *fn = strstr(line + strlen(levels[i]), ": ");
            return fn ? fn + 2 : line + strlen(levels[i]);
        }
    }
    return line;
}

static void add_log(struct info_report *r, int index, const char *log, const char *name,
                    int failed)
{
    char tag[32];
    const char *p = log;

    snprintf(tag, sizeof(tag), "%s: ", name);
    /* at most 16 lines a backend: with GDRX_LOG_LEVEL=4 the library says
     * far more, and the report (fixed size) must keep its other sections */
    for (int n = 0; *p && n < 16; n++) {
        size_t l = strcspn(p, "\n");
        char key[16], line[600];
        snprintf(key, sizeof(key), "log%d", n);
        snprintf(line, sizeof(line), "%.*s", (int)l, p);
        int why = strncmp(line, "error: ", 7) == 0 || strncmp(line, "warn: ", 6) == 0 ||
                  strstr(line, tag) != NULL;
        if (failed && why)
            info_add(r, "backends", index, key, "library", "%s", line);
        else
            info_add_v(r, "backends", index, key, "library", "%s", line);
        p += l + (p[l] == '\n');
    }
}

/* The mapping a working copy went through and the copies it ran: cached
 * (a coherent GPU, memcpy) or write-combined (the PCIe BAR, streaming). */
static void describe_mapping(gdrx_t g, gdrx_pin_t pin, char *buf, size_t len)
{
    struct gdrx_pin_info info;
    gdrx_copy_variant_t to, from;

    if (gdrx_pin_query(g, pin, &info) == 0 && gdrx_pin_copy_variants(g, pin, &to, &from) == 0)
        snprintf(buf, len, "%s (%s), copies %s to the GPU, %s from it",
                 gdrx_mapping_type_name(info.mapping_type),
                 info.mapping_type == GDRX_MAPPING_CACHING ? "coherent" : "through the PCIe BAR",
                 gdrx_copy_variant_name(to), gdrx_copy_variant_name(from));
}

/* Pin, map and round-trip 8 bytes of a fresh 64 KiB buffer on GPU 0; what
 * the mapping is into mapping. */
static int try_copy(gdrx_t g, char *why, size_t len, char *mapping, size_t mlen)
{
    struct tool_cuda cu;
    CUdevice dev;
    CUdeviceptr d = 0;
    gdrx_pin_t pin;
    void *map;
    uint64_t out = 0x5a5a5a5a12345678ull, back = 0;
    int rc;

    if (tool_cuda_load(&cu, why, len) != 0 || tool_cuda_open_device(&cu, 0, &dev, why, len) != 0)
        return -1;
    if (cu.MemAlloc(&d, 65536) != CUDA_SUCCESS) {
        snprintf(why, len, "cuMemAlloc(64 KiB) failed");
        return -1;
    }
    if ((rc = gdrx_pin(g, d, 65536, 0, &pin)) != 0) {
        snprintf(why, len, "gdrx_pin: %s", gdrx_strerror(rc));
    } else {
        if ((rc = gdrx_map(g, pin, &map)) != 0) {
            snprintf(why, len, "gdrx_map: %s", gdrx_strerror(rc));
        } else {
            describe_mapping(g, pin, mapping, mlen);
            gdrx_copy_to_mapping(pin, map, &out, sizeof(out));
            gdrx_copy_from_mapping(pin, &back, map, sizeof(back));
            if (back != out) {
                snprintf(why, len, "8 bytes written through the mapping read back differently");
                rc = -EIO;
            }
            gdrx_unmap(g, pin);
        }
        gdrx_unpin(g, pin);
    }
    cu.MemFree(d);
    cu.DevicePrimaryCtxRelease(dev);
    return rc ? -1 : 0;
}

static const char *gdrdrv_node(void)
{
    const char *node = getenv("GDRX_GDRDRV_PATH");
    return node && *node ? node : "/dev/gdrdrv";
}

static char module_found[512];

static int find_module(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    const char *base = path + ftw->base;
    if (type == FTW_F && strncmp(base, "gdrdrv.ko", 9) == 0) {
        snprintf(module_found, sizeof(module_found), "%s", path);
        return 1;
    }
    return 0;
}

/* Whether /lib/modules/RELEASE holds a gdrdrv.ko* (its path: module_found). */
static int module_installed(const char *release)
{
    char dir[300], path[512];

    module_found[0] = '\0';
    snprintf(dir, sizeof(dir), "/lib/modules/%s", release);
    nftw(info_path(dir, path, sizeof(path)), find_module, 16, FTW_PHYS);
    return module_found[0] != '\0';
}

/* A kernel other than `running` that has gdrdrv.ko installed, into buf. */
static int module_for_other_kernel(const char *running, char *buf, size_t len)
{
    char path[512];
    DIR *d = opendir(info_path("/lib/modules", path, sizeof(path)));
    struct dirent *e;
    int found = 0;

    while (d && !found && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, running) == 0)
            continue;
        if (module_installed(e->d_name)) {
            snprintf(buf, len, "%s", e->d_name);
            found = 1;
        }
    }
    if (d)
        closedir(d);
    return found;
}

static const char *const no_module_alt =
    "; or use the nvrm backend, which needs no module (GDRX_BACKEND=nvrm)";

/* /dev/gdrdrv exists but this user may not open it read-write: name the
 * node's owner and group, and the group to join (or the rule to install
 * when the node is root's alone, i.e. udev did not apply ours). */
static void diag_permission(struct info_report *r, const char *node, const struct stat *st)
{
    const struct passwd *pw;
    const struct group *grp = getgrgid(st->st_gid);
    char fix[512], user[64], owner[64];

    /* getpwuid's result is static: copy each name before the next call */
    pw = getpwuid(st->st_uid);
    snprintf(owner, sizeof(owner), "%s", pw ? pw->pw_name : "?");
    pw = getpwuid(getuid());
    snprintf(user, sizeof(user), "%s", pw ? pw->pw_name : "USER");
    if (st->st_gid == 0)
        snprintf(fix, sizeof(fix), "the node is root's alone, so gdrx's udev rule was not "
                 "applied: install config/99-gdrdrv.rules (mode 0660, group video; make "
                 "install does) in /etc/udev/rules.d, run udevadm control --reload && udevadm "
                 "trigger --subsystem-match=misc --sysname-match=gdrdrv, then usermod -aG video "
                 "%s and log in again (docs/gdrdrv.md, \"Device node and permissions\")", user);
    else
        snprintf(fix, sizeof(fix), "usermod -aG %s %s, then log in again; or widen the udev "
                 "rule (docs/gdrdrv.md, \"Device node and permissions\")",
                 grp ? grp->gr_name : "GROUP", user);
    info_problem(r, "gdrdrv", fix, "permission denied: %s is mode %04o, owner %s, group %s; "
                 "user %s (uid %u) cannot open it for reading and writing", node,
                 (unsigned)(st->st_mode & 07777), owner,
                 grp ? grp->gr_name : "?", user, (unsigned)getuid());
}

static void diag_gdrdrv(struct info_report *r, const struct info_host *h, int rc,
                        const char *reason)
{
    const char *node = gdrdrv_node();
    struct stat st;
    char path[512], fix[768];
    struct utsname u = { .release = "" };

    if (stat(node, &st) == 0) {
        if (!S_ISCHR(st.st_mode))
            info_problem(r, "gdrdrv", "remove it and reload the module (modprobe -r gdrdrv; "
                         "modprobe gdrdrv), or correct GDRX_GDRDRV_PATH",
                         "%s is not a character device", node);
        else if (rc == -EACCES || rc == -EPERM || access(node, R_OK | W_OK) != 0)
            diag_permission(r, node, &st);
        else
            info_problem(r, "gdrdrv", "check `dmesg` for gdrdrv's messages and that the module "
                         "is a gdrdrv 2.x (docs/gdrdrv.md); GDRX_LOG_LEVEL=4 gdrx-info -v "
                         "shows every step", "%s opens but the backend fails: %s", node,
                         reason[0] ? untagged(reason) : gdrx_strerror(rc));
        return;
    }
    if (stat(info_path("/sys/module/gdrdrv", path, sizeof(path)), &st) == 0) {
        info_problem(r, "gdrdrv", "install the udev rule (make install puts config/99-gdrdrv.rules "
                     "in the udev rules directory), then: udevadm control --reload && udevadm "
                     "trigger --subsystem-match=misc --sysname-match=gdrdrv",
                     "the gdrdrv module is loaded but %s does not exist", node);
        return;
    }
    char other[256];
    int installed = uname(&u) == 0 && module_installed(u.release);
    const char *sb = h->secure_boot == 1 ? "; Secure Boot is on: the kernel loads only modules "
                     "signed with an enrolled key, so first sign gdrdrv.ko with a Machine Owner "
                     "Key (docs/install.md, \"gdrdrv, the kernel module\")" : "";
    if (installed) {
        snprintf(fix, sizeof(fix), "modprobe gdrdrv (as root)%s%s", sb, no_module_alt);
        info_problem(r, "gdrdrv", fix, "the gdrdrv module is installed (%s) but not loaded",
                     module_found);
    } else if (module_for_other_kernel(u.release, other, sizeof(other))) {
        /* built against the wrong kernel headers, or before a kernel update */
        snprintf(fix, sizeof(fix), "build it for the running kernel: apt-get install "
                 "linux-headers-%s, then dkms install gdrdrv/VERSION -k %s (or configure "
                 "--with-kernel-headers=/usr/src/linux-headers-%s && make), then modprobe "
                 "gdrdrv%s%s", u.release, u.release, u.release, sb, no_module_alt);
        info_problem(r, "gdrdrv", fix, "gdrdrv.ko is installed for kernel %s (%s), not for the "
                     "running kernel %s", other, module_found, u.release);
    } else {
        snprintf(fix, sizeof(fix), "build and install it: make install-dkms && dkms install "
                 "gdrdrv/VERSION && modprobe gdrdrv (docs/gdrdrv.md, \"Installing\")%s%s", sb,
                 no_module_alt);
        info_problem(r, "gdrdrv", fix, "the gdrdrv module is not loaded and not installed for "
                     "this kernel (no %s, no gdrdrv.ko under /lib/modules/%s)", node,
                     u.release);
    }
}

static void diag_nvrm(struct info_report *r, const struct info_host *h, int rc,
                      const char *reason)
{
    char list[128];

    info_branch_list(list, sizeof(list));
    if (!h->driver[0]) {
        char fix[256];
        snprintf(fix, sizeof(fix), "install the NVIDIA driver (branch %s for this backend) and "
                 "load it: modprobe nvidia", list);
        info_problem(r, "nvrm", fix, "no NVIDIA kernel driver is loaded "
                     "(no /sys/module/nvidia/version)");
    } else if (!info_branch_known(h->driver) || strstr(reason, "not a known branch")) {
        char fix[320];
        snprintf(fix, sizeof(fix), "install a driver of branch %s, or use the gdrdrv backend "
                 "(a kernel module, any driver) or dmabuf", list);
        info_problem(r, "nvrm", fix, "driver %s is not of a branch whose RM ioctl ABI the nvrm "
                     "backend knows (%s)", h->driver, list);
    } else if (rc == -EACCES || rc == -EPERM) {
        info_problem(r, "nvrm", "the user needs read and write access to /dev/nvidiactl and "
                     "/dev/nvidia[0-9]*: NVIDIA's default is mode 0666; where the driver "
                     "is set up with group video and 0660 (NVreg_DeviceFileMode), add the "
                     "user to that group (docs/nvrm.md, \"Permissions\")",
                     "permission denied: %s", reason[0] ? untagged(reason) : gdrx_strerror(rc));
    } else {
        info_problem(r, "nvrm", "GDRX_LOG_LEVEL=4 gdrx-info -v shows every step; report it "
                     "with that output to " PACKAGE_BUGREPORT,
                     "the nvrm backend fails: %s", reason[0] ? untagged(reason) : gdrx_strerror(rc));
    }
}

static void diag_dmabuf(struct info_report *r, int rc, const char *reason)
{
    if (strstr(reason, "mmap"))
        info_problem(r, "dmabuf", "use the nvrm or gdrdrv backend", "the NVIDIA driver exports "
                     "GPU memory as dma-bufs but does not let the CPU mmap them (%s)",
                     untagged(reason));
    else if (strstr(reason, "cuMemGetHandleForAddressRange"))
        info_problem(r, "dmabuf", "update the NVIDIA driver (CUDA 11.7 or newer)", "%s",
                     untagged(reason));
    else
        info_problem(r, "dmabuf", "use the nvrm or gdrdrv backend; GDRX_LOG_LEVEL=4 gdrx-info "
                     "-v shows every step", "the dmabuf backend fails: %s",
                     reason[0] ? untagged(reason) : gdrx_strerror(rc));
}

/* The nvrm open self-test's line from the log, if one ran (a branch
 * checked only against headers; docs/nvrm.md, "Driver branches"):
 * "passed in N us" or "failed ... at step "S": what differed". */
static void selftest_row(struct info_report *r, int index, const char *log)
{
    const char *at = strstr(log, "open self-test ");
    if (!at)
        return;
    while (at > log && at[-1] != '\n' && strncmp(at, "failed the open", 15) != 0)
        at--; /* back to "failed the open self-test" where it failed */
    if (strncmp(at, "failed the open", 15) != 0)
        at = strstr(at, "open self-test ");
    size_t n = strcspn(at, "\n");
    info_add(r, "backends", index, "selftest", "self-test", "%.*s", (int)(n > 300 ? 300 : n), at);
}

/* Open backend `b` (AUTO: what an application gets), then try a copy. */
static int probe(struct info_report *r, const struct info_host *h, int index, gdrx_backend_t b)
{
    struct gdrx_open_params p;
    struct capture cap;
    gdrx_t g;
    uint64_t ver = 0, chosen = 0;
    char log[LOG_BYTES] = "", reason[600], why[256] = "", mapping[160] = "";
    const char *name = b == GDRX_BACKEND_AUTO ? "default" : gdrx_backend_name(b);

    gdrx_open_params_init(&p);
    p.backend = b;
    capture_begin(&cap);
    int rc = gdrx_open(&p, &g), copy = -1;
    if (rc == 0) {
        copy = try_copy(g, why, sizeof(why), mapping, sizeof(mapping));
        gdrx_get_attr(g, GDRX_ATTR_DRIVER_VERSION, &ver);
        gdrx_get_attr(g, GDRX_ATTR_BACKEND, &chosen);
        gdrx_close(g);
    }
    capture_end(&cap, log, sizeof(log));
    last_reason(log, reason, sizeof(reason));
    info_add(r, "backends", index, "name", NULL, "%s", name);
    info_add(r, "backends", index, "status", name, "%s",
             rc ? "does not open" : copy ? "opens, but copying fails" : "works");
    info_add(r, "backends", index, "works", NULL, "%s", rc == 0 && copy == 0 ? "yes" : "no");
    if (rc == 0 && b == GDRX_BACKEND_AUTO)
        info_add(r, "backends", index, "backend", "picks", "%s (what gdrx_open(NULL) uses here)",
                 gdrx_backend_name((gdrx_backend_t)chosen));
    if (rc == 0 && copy == 0 && mapping[0])
        info_add(r, "backends", index, "mapping", "mapping", "%s", mapping);
    if (rc == 0 && ver)
        info_add_v(r, "backends", index, "driver", "driver", "%u.%u", (unsigned)(ver >> 16),
                   (unsigned)(ver & 0xffff));
    if (b == GDRX_BACKEND_NVRM)
        selftest_row(r, index, log);
    if (rc)
        info_add(r, "backends", index, "error", "error", "%s", gdrx_strerror(rc));
    else if (copy)
        info_add(r, "backends", index, "error", "error", "%s", why);
    add_log(r, index, log, name, rc != 0 || copy != 0);
    /* a failed copy: the library's error says more than the failing call */
    if (rc == 0 && copy != 0 && strncmp(reason, "error: ", 7) != 0)
        snprintf(reason, sizeof(reason), "%s", why);
    if (rc == 0 && copy == 0)
        return 1;
    if (rc == -ELIBACC || strstr(reason, "cuda_load: "))
        return 0; /* CUDA itself fails: the CUDA problem says so, once */
    switch (b) {
    case GDRX_BACKEND_GDRDRV: diag_gdrdrv(r, h, rc, reason); break;
    case GDRX_BACKEND_NVRM:   diag_nvrm(r, h, rc, reason); break;
    case GDRX_BACKEND_DMABUF: diag_dmabuf(r, rc, reason); break;
    default: break;
    }
    return 0;
}

/* GDRX_BACKEND as gdrx_open reads it: unset, empty or a backend name. */
static int env_backend_valid(const char *v)
{
    static const char *const names[] = { "", "auto", "gdrdrv", "nvrm", "dmabuf" };

    for (size_t i = 0; v && i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(v, names[i]) == 0)
            return 1;
    return !v;
}

int info_backends(struct info_report *r, const struct info_host *h)
{
    /* nvrm first, shown second: it learns of CUDA memory only from its first
     * gdrx_open on, and CUDA may hand a later allocation out of a chunk it
     * mapped for an earlier probe's buffer, which nvrm would then refuse
     * (docs/nvrm.md); an application opens its context before allocating. */
    static const struct {
        gdrx_backend_t backend;
        int            shown_as;
    } order[] = {
        { GDRX_BACKEND_NVRM, 1 }, { GDRX_BACKEND_GDRDRV, 0 }, { GDRX_BACKEND_DMABUF, 2 },
    };
    const char *level = getenv("GDRX_LOG_LEVEL"), *env = getenv("GDRX_BACKEND");
    char *saved = level ? strdup(level) : NULL;
    int works = 0;

    /* the library reads the level once, at its first message: raise it
     * before the first gdrx_open, put it back for the programs run later */
    if (!level || atoi(level) < 3)
        setenv("GDRX_LOG_LEVEL", "3", 1);
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
        works += probe(r, h, order[i].shown_as, order[i].backend);
    if (!env_backend_valid(env))
        info_problem(r, "GDRX_BACKEND", "unset GDRX_BACKEND, or set it to gdrdrv, nvrm, dmabuf "
                     "or auto", "GDRX_BACKEND=%s is not a backend: gdrx_open fails with EINVAL "
                     "in every program that leaves the choice to the library", env);
    else if (works && probe(r, h, 3, GDRX_BACKEND_AUTO) == 0 && env && *env)
        info_problem(r, "GDRX_BACKEND", "unset GDRX_BACKEND, or name a backend that works",
                     "GDRX_BACKEND=%s names a backend that does not work here, so programs "
                     "that leave the choice to the library fail", env);
    if (saved)
        setenv("GDRX_LOG_LEVEL", saved, 1);
    else
        unsetenv("GDRX_LOG_LEVEL");
    free(saved);
    return works;
}
