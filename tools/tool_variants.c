/*
 * tool_variants.c - -v all: one child process per copy variant, their
 * outputs merged (tool_variants.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gdrx.h"
#include "tool_variants.h"

#define NVARIANTS (GDRX_COPY_LAST_OF_ARCH - GDRX_COPY_LIBC + 1)

int tool_variant_select(const struct tool_common *c)
{
    if (c->variant && setenv("GDRX_COPY_VARIANT", c->variant, 1) != 0) {
        fprintf(stderr, "%s: setenv: %s\n", c->tool, strerror(errno));
        return -1;
    }
    return 0;
}

int tool_variant_check(const struct tool_common *c, const char *to_name)
{
    if (!c->variant || strcmp(c->variant, to_name) == 0)
        return 0;
    fprintf(stderr, "%s: copy variant %s: not supported by this CPU/OS: NOT measured\n",
            c->tool, c->variant);
    return TOOL_EXIT_NOT_RUN;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t len = 0;

    if (!f)
        return NULL;
    FILE *m = open_memstream(&buf, &len);
    if (m) {
        char chunk[8192];
        size_t n;
        while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
            fwrite(chunk, 1, n, m);
        fclose(m);
    }
    fclose(f);
    return buf;
}

/* CSV: the first file whole, the others without their header line. */
static void merge_csv(FILE *out, char **parts, int n)
{
    int first = 1;
    for (int i = 0; i < n; i++) {
        if (!parts[i])
            continue;
        const char *body = parts[i];
        if (!first && (body = strchr(body, '\n')) != NULL)
            body++;
        fputs(body ? body : "", out);
        first = 0;
    }
}

/* JSON (tool_out.c's layout): the first file's head up to "results":[,
 * then every file's records, then the tail. */
static void merge_json(FILE *out, char **parts, int n)
{
    static const char open_tag[] = "\"results\":[", close_tag[] = "\n],\"ok\":";
    int first = 1;
    for (int i = 0; i < n; i++) {
        char *p = parts[i] ? strstr(parts[i], open_tag) : NULL;
        char *q = p ? strstr(p, close_tag) : NULL;
        if (!q)
            continue;
        p += sizeof(open_tag) - 1;
        if (first)
            fwrite(parts[i], 1, (size_t)(p - parts[i]), out);
        if (q > p)
            fprintf(out, "%s%.*s", first ? "" : ",", (int)(q - p), p);
        first = 0;
    }
    if (!first)
        fputs("\n],\"ok\":true}\n", out);
}

/* Write the merged parts to path (through a temporary name), or remove
 * the parts and write nothing when !ok. */
static int merge(const struct tool_common *c, const char *path, char **names, int n,
                 int json, int ok)
{
    char tmp[4200];
    char *parts[NVARIANTS] = { 0 };
    FILE *out = NULL;

    for (int i = 0; i < n; i++) {
        if (names[i]) {
            parts[i] = slurp(names[i]);
            unlink(names[i]);
        }
    }
    if (ok) {
        out = stdout;
        if (path) {
            snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
            out = fopen(tmp, "w");
        }
        if (!out) {
            fprintf(stderr, "%s: cannot write %s: %s\n", c->tool, path, strerror(errno));
            ok = 0;
        }
    }
    if (out) {
        (json ? merge_json : merge_csv)(out, parts, n);
        if (out != stdout && (fclose(out) != 0 || rename(tmp, path) != 0)) {
            unlink(tmp);
            ok = 0;
        }
    }
    if (!ok && path)
        fprintf(stderr, "%s: %s not written (the run failed)\n", c->tool, path);
    for (int i = 0; i < n; i++)
        free(parts[i]);
    return ok;
}

/* Run one child; returns its exit status (or TOOL_EXIT_SETUP). */
static int run_child(char **args)
{
    int status = 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execv("/proc/self/exe", args);
        _exit(TOOL_EXIT_SETUP);
    }
    if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
        return TOOL_EXIT_FAIL;
    return WEXITSTATUS(status);
}

int tool_run_variants(const struct tool_common *c, int argc, char **argv)
{
    char **args = calloc((size_t)argc + 12, sizeof(*args));
    char *outs[NVARIANTS] = { 0 }, *raws[NVARIANTS] = { 0 };
    /* The children's files: next to the output file, or in a private
     * directory when the merged result goes to stdout. */
    char tmpdir[] = "/tmp/gdrx-tool.XXXXXX", basebuf[sizeof(tmpdir) + 8];
    const char *base = c->out_path;
    if (!base && c->machine) {
        if (!mkdtemp(tmpdir)) {
            fprintf(stderr, "%s: mkdtemp: %s\n", c->tool, strerror(errno));
            free(args);
            return TOOL_EXIT_FAIL;
        }
        snprintf(basebuf, sizeof(basebuf), "%s/out", tmpdir);
        base = basebuf;
    }
    int failed = 0, ran = 0, nv = 0, stop = 0;

    if (!args)
        return TOOL_EXIT_FAIL;
    for (int v = GDRX_COPY_LIBC; v <= GDRX_COPY_LAST_OF_ARCH && !stop; v++, nv++) {
        const char *name = gdrx_copy_variant_name((gdrx_copy_variant_t)v);
        int n = 0, dashes = argc;
        /* the child's options go after the user's (later ones win) but
         * before a "--", after which they would be arguments */
        for (int i = 1; i < argc; i++)
            if (strcmp(argv[i], "--") == 0) {
                dashes = i;
                break;
            }
        for (int i = 0; i < dashes; i++)
            args[n++] = argv[i];
        args[n++] = "-v";
        args[n++] = (char *)name;
        args[n++] = "--child";
        if (!ran)
            args[n++] = "--print-header";
        if (c->machine) {
            if (asprintf(&outs[nv], "%s.%s.%d", base, name, (int)getpid()) < 0)
                outs[nv] = NULL;
            args[n++] = "-o";
            args[n++] = outs[nv];
            if (!c->out_path)
                args[n++] = "--no-table";
        }
        if (c->raw_path) {
            if (asprintf(&raws[nv], "%s.%s.%d", c->raw_path, name, (int)getpid()) < 0)
                raws[nv] = NULL;
            args[n++] = "--raw";
            args[n++] = raws[nv];
        }
        for (int i = dashes; i < argc; i++)
            args[n++] = argv[i];
        args[n] = NULL;
        switch (run_child(args)) {
        case 0: ran = 1; break;
        case TOOL_EXIT_NOT_RUN: break;
        case TOOL_EXIT_SETUP: failed = stop = 1; break;
        default: ran = 1; failed = 1; break;
        }
    }
    int ok = !failed && ran;
    if (c->machine && !merge(c, c->out_path, outs, nv, c->format == TOOL_FMT_JSON, ok))
        ok = 0;
    if (c->raw_path && !merge(c, c->raw_path, raws, nv, 0, ok))
        ok = 0;
    for (int i = 0; i < nv; i++) {
        free(outs[i]);
        free(raws[i]);
    }
    if (base == basebuf)
        rmdir(tmpdir);
    free(args);
    if (!ran && !failed) {
        fprintf(stderr, "%s: no copy variant could be measured: NOT RUN\n", c->tool);
        return TOOL_EXIT_NOT_RUN;
    }
    return ok ? TOOL_EXIT_OK : TOOL_EXIT_FAIL;
}
