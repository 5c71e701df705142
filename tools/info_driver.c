/*
 * info_driver.c - the host around the GPU: NVIDIA driver version and
 * flavour, Secure Boot, MPS; and the file access the other parts share.
 *
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "info.h"
#include "nvrm_layout.h"

const char *info_path(const char *path, char *buf, size_t len)
{
    const char *root = getenv("GDRX_INFO_ROOT");

    snprintf(buf, len, "%s%s", root ? root : "", path);
    return buf;
}

long info_read(const char *path, char *buf, size_t len)
{
    char full[512];
    size_t got = 0;
    int fd = open(info_path(path, full, sizeof(full)), O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -errno;
    while (got + 1 < len) {
        ssize_t n = read(fd, buf + got, len - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    return (long)got;
}

int info_read_line(const char *path, char *buf, size_t len)
{
    long n = info_read(path, buf, len);

    if (n < 0)
        return (int)n;
    buf[strcspn(buf, "\n")] = '\0';
    size_t end = strlen(buf);
    while (end && isspace((unsigned char)buf[end - 1]))
        buf[--end] = '\0';
    return 0;
}

/* The version in "NVRM version: NVIDIA UNIX ... Kernel Module  580.95.05  ...":
 * the first token of digits and dots that has a dot. */
static void version_from_proc(const char *line, char *out, size_t len)
{
    for (const char *p = line; *p; p++) {
        size_t n = strspn(p, "0123456789.");
        if (n > 2 && isdigit((unsigned char)*p) && memchr(p, '.', n) &&
            (p == line || p[-1] == ' ')) {
            snprintf(out, len, "%.*s", (int)n, p);
            return;
        }
        if (n)
            p += n - 1;
    }
}

int info_branch_known(const char *version)
{
    return nvrm_layout_for(version) != NULL;
}

/* The branches of the nvrm backend's layout table, each once. */
void info_branch_list(char *buf, size_t len)
{
    size_t used = 0;
    unsigned last = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < nvrm_layout_count() && used < len; i++) {
        const struct nvrm_layout *l = nvrm_layout_at(i);
        if (l->branch != last)
            used += (size_t)snprintf(buf + used, len - used, "%s%u", last ? ", " : "", l->branch);
        last = l->branch;
    }
}

/* "branch 535: checked (headers 535.43.02 to 535.288.01) ...": what the
 * nvrm backend knows of this driver's branch. */
static void nvrm_abi_row(struct info_report *r, const char *driver)
{
    const struct nvrm_layout *l = nvrm_layout_for(driver);

    if (!l) {
        info_add(r, "driver", -1, "nvrm_abi", "nvrm ABI", "branch NOT known to the nvrm backend");
        return;
    }
    info_add(r, "driver", -1, "nvrm_abi", "nvrm ABI", "branch %u %s (headers %s to %s)%s",
             l->branch, nvrm_branch_status_name(l->status), l->first_checked, l->last_checked,
             l->status == NVRM_BRANCH_VALIDATED
                 ? ", run on hardware"
                 : ", not run on hardware here: served after the open self-test");
    info_add(r, "driver", -1, "nvrm_abi_differs", "differs", "%s", l->differs);
}

static void driver_version(struct info_report *r, struct info_host *h)
{
    char proc[512] = "", taint[32] = "";
    int have_proc = info_read_line("/proc/driver/nvidia/version", proc, sizeof(proc)) == 0;

    /* sysfs first: it is what the nvrm backend checks before anything else */
    if (info_read_line("/sys/module/nvidia/version", h->driver, sizeof(h->driver)) != 0)
        h->driver[0] = '\0';
    if (!h->driver[0] && have_proc)
        version_from_proc(proc, h->driver, sizeof(h->driver));
    if (!h->driver[0]) {
        info_add(r, "driver", -1, "version", "version", "not loaded (no "
                 "/sys/module/nvidia/version)%s", h->simulated ?
                 "; the simulated GPU needs none" : "");
        return;
    }
    info_add(r, "driver", -1, "version", "version", "%s", h->driver);

    /* The open modules say so in their banner; the proprietary ones taint
     * the kernel with P (see the kernel's Documentation/admin-guide/tainted-kernels). */
    const char *flavour = "unknown (no /proc/driver/nvidia/version or module taint)";
    if (have_proc)
        flavour = strstr(proc, "Open Kernel Module") ? "open (\"Open Kernel Module\")"
                                                     : "proprietary";
    else if (info_read_line("/sys/module/nvidia/taint", taint, sizeof(taint)) == 0)
        flavour = strchr(taint, 'P') ? "proprietary (module taint P)" : "open (module not tainting P)";
    info_add(r, "driver", -1, "flavour", "flavour", "%s", flavour);
    if (have_proc)
        info_add_v(r, "driver", -1, "banner", "banner", "%s", proc);
    nvrm_abi_row(r, h->driver);
}

/* The EFI SecureBoot variable: 4 bytes of attributes, then the value. */
static void secure_boot(struct info_report *r, struct info_host *h)
{
    char buf[16], full[256];
    struct stat st;
    long n = info_read("/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
                       buf, sizeof(buf));

    if (n >= 5) {
        h->secure_boot = buf[4] == 1;
        info_add(r, "driver", -1, "secure_boot", "Secure Boot", "%s (EFI variable SecureBoot)",
                 h->secure_boot ? "enabled: unsigned kernel modules are refused"
                                : "disabled");
    } else if (stat(info_path("/sys/firmware/efi", full, sizeof(full)), &st) != 0) {
        h->secure_boot = 0;
        info_add(r, "driver", -1, "secure_boot", "Secure Boot", "off (not booted through EFI)");
    } else {
        h->secure_boot = -1;
        info_add(r, "driver", -1, "secure_boot", "Secure Boot",
                 "unknown (EFI variable SecureBoot unreadable; `mokutil --sb-state` tells)");
    }
}

/* Whether a process of this name runs (comm is cut at 15 characters). */
static int process_running(const char *name)
{
    char dir[256], path[300], comm[64];
    DIR *d = opendir(info_path("/proc", dir, sizeof(dir)));
    struct dirent *e;
    int found = 0;

    if (!d)
        return 0;
    while (!found && (e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
        found = info_read_line(path, comm, sizeof(comm)) == 0 && strncmp(comm, name, 15) == 0;
    }
    closedir(d);
    return found;
}

/* MPS: its control daemon listens on a FIFO in the pipe directory.  A GPU
 * that several processes use without it makes them take turns: each
 * copy-engine transfer (UCX's cuda_copy and cuda_ipc, gdrx's own from
 * UCX_GDRX_DMA_THRESH) waits for a time slice, ~150 us on an H100/H200
 * (docs/ucx-flavours.md). */
static void mps(struct info_report *r, const struct info_host *h)
{
    const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
    char pipe[512];
    struct stat st;

    if (!dir || !*dir)
        dir = "/tmp/nvidia-mps";
    snprintf(pipe, sizeof(pipe), "%s/control", dir);
    int has_pipe = stat(pipe, &st) == 0 && S_ISFIFO(st.st_mode);
    int has_proc = process_running("nvidia-cuda-mps-control");
    if (has_pipe)
        info_add(r, "driver", -1, "mps", "MPS", "on: control pipe %s%s; CUDA programs run as "
                 "MPS clients (gdrx's copies use no GPU context, MPS does not change them)",
                 pipe, has_proc ? ", nvidia-cuda-mps-control running" : "");
    else if (has_proc)
        info_add(r, "driver", -1, "mps", "MPS", "nvidia-cuda-mps-control runs, but not with "
                 "pipe directory %s (set CUDA_MPS_PIPE_DIRECTORY to its directory)", dir);
    else
        info_add(r, "driver", -1, "mps", "MPS", "off (no %s)", pipe);
    if (!has_pipe && h->busiest_procs >= 2)
        info_problem(r, "performance",
                     "start MPS before the job (`nvidia-cuda-mps-control -d`, as the job's "
                     "user), or keep the device sizes off the copy engine: "
                     "UCX_TLS=^cuda_ipc UCX_RNDV_THRESH=32k (docs/ucx-flavours.md)",
                     "GPU %d is shared by %d processes without MPS: each copy-engine transfer "
                     "waits ~150 us for a time slice", h->busiest_gpu, h->busiest_procs);
}

void info_driver(struct info_report *r, struct info_host *h)
{
    driver_version(r, h);
    secure_boot(r, h);
    mps(r, h);
}
