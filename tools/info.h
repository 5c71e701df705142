/*
 * info.h - gdrx-info's parts: a report (facts and problems, printed as text
 * or JSON by info_report.c) filled by one module per concern.
 *
 * SPDX-License-Identifier: MIT
 *
 * Modules only add to the report; nothing but info_report.c prints, so the
 * text and the JSON output always say the same thing.
 */
#ifndef GDRX_INFO_H
#define GDRX_INFO_H

#include <stddef.h>
#include <stdio.h>

/* Exit statuses (documented in gdrx-info(1)). */
enum {
    INFO_EXIT_OK         = 0, /* at least one backend opens */
    INFO_EXIT_NO_BACKEND = 1, /* no backend opens: the problems say why */
    INFO_EXIT_USAGE      = 2, /* bad command line */
};

struct info_report;

/* A fact: `key` names it in JSON, `label` in the text (NULL: JSON only).
 * index < 0 puts it in the section's object; index >= 0 in element `index`
 * of the section's array (GPUs, backends). */
void info_add(struct info_report *r, const char *section, int index, const char *key,
              const char *label, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* The same, shown in the text only with -v. */
void info_add_v(struct info_report *r, const char *section, int index, const char *key,
                const char *label, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Something that keeps a part from working, and the command or change
 * that fixes it. */
void info_problem(struct info_report *r, const char *part, const char *fix, const char *fmt,
                  ...) __attribute__((format(printf, 4, 5)));

struct info_report *info_report_new(void);
void info_report_free(struct info_report *r);
void info_print_text(const struct info_report *r, FILE *f, int verbose);
void info_print_json(const struct info_report *r, FILE *f, int exit_status);

/* What the probes learn about the host that later diagnoses use. */
struct info_host {
    char driver[64];    /* NVIDIA driver version, "" if no driver is loaded */
    int  secure_boot;   /* 1 on, 0 off, -1 unknown */
    int  simulated;     /* libcuda.so.1 is tests/sim's test double */
    /* The GPU with the most processes that have a compute context on it
     * (NVML; -1: unknown) and how many (info_gpus.c), for info_driver.c's
     * MPS diagnosis. */
    int  busiest_gpu;
    int  busiest_procs;
};

/* Host files: `path` under $GDRX_INFO_ROOT when set (the tests' fake
 * /proc, /sys and /lib/modules).  Read with open/read, not stdio, so the
 * nvrm test emulator (which serves the NVIDIA sysfs files) sees them.
 * info_read: bytes read (NUL-terminated), or -errno. */
const char *info_path(const char *path, char *buf, size_t len);
long info_read(const char *path, char *buf, size_t len);
/* The first line of a file, trimmed; 0, or -errno. */
int info_read_line(const char *path, char *buf, size_t len);

/* Whether the nvrm backend was validated against the branch (major
 * number) of a driver version such as "580.95.05"; the branches, listed. */
int info_branch_known(const char *version);
void info_branch_list(char *buf, size_t len);

/* info_driver.c: driver version and flavour, Secure Boot, MPS (and a GPU
 * shared by several processes without it: after info_gpus). */
void info_driver(struct info_report *r, struct info_host *h);
/* info_gpus.c: every GPU, its PCI address and BAR1 size and use. */
void info_gpus(struct info_report *r, struct info_host *h);
/* info_backends.c: open each backend, say why those that fail do; the
 * number that open. */
int info_backends(struct info_report *r, const struct info_host *h);
/* info_hooks.c: which of libcuda's entry points libgdrx's memory hooks
 * patched (after info_backends, whose probes install them). */
void info_hooks(struct info_report *r);
/* info_gdrapi.c: the libgdrapi.so.2 a gdrcopy program would load, gdrx's
 * or NVIDIA's. */
void info_gdrapi(struct info_report *r);
/* info_ucx.c: the UCX found and whether the gdrx transport loads in it. */
void info_ucx(struct info_report *r);

#endif /* GDRX_INFO_H */
