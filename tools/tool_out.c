/*
 * tool_out.c - CSV and JSON results, files written whole or not at all
 * (tool_out.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool_out.h"

#define CSV_COLS "tool,test,op,dir,variant,size_B,batch,samples,p0_ns,p50_ns,p99_ns," \
    "ref,ref_p50_ns,ratio,gpu,gpu_bus,driver,cuda,cpu,cpu_core,numa_node,backend," \
    "mapping,clock,simulated\n"
#define RAW_COLS "tool,test,op,dir,variant,size_B,batch,sample,ns_per_op\n"

void tool_out_sanitize(char *s)
{
    for (; *s; s++)
        if (*s == ',' || *s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
            *s = *s == ',' ? ';' : ' ';
}

/* A file in the same directory as path, to rename over it at the end. */
static FILE *open_tmp(const char *tool, const char *path, char *tmp, size_t len)
{
    snprintf(tmp, len, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        fprintf(stderr, "%s: cannot write %s: %s\n", tool, path, strerror(errno));
    return f;
}

static void json_meta(FILE *f, const struct tool_meta *m)
{
    fprintf(f, "{\"tool\":\"%s\",\"meta\":{\"gpu\":\"%s\",\"gpu_bus\":\"%s\","
            "\"driver\":\"%s\",\"cuda\":\"%s\",\"cpu\":\"%s\",\"cpu_core\":%d,"
            "\"numa_node\":%d,\"backend\":\"%s\",\"mapping\":\"%s\",\"clock\":\"%s\","
            "\"simulated\":%s},\n\"results\":[",
            m->tool, m->gpu, m->gpu_bus, m->driver, m->cuda, m->cpu, m->cpu_core,
            m->numa_node, m->backend, m->mapping, m->clock, m->simulated ? "true" : "false");
}

int tool_out_open(struct tool_out *o, const struct tool_common *opts,
                  const struct tool_meta *meta)
{
    memset(o, 0, sizeof(*o));
    o->opts = opts;
    o->meta = *meta;
    o->first_rec = 1;
    if (opts->machine) {
        o->f = opts->out_path ? open_tmp(opts->tool, opts->out_path, o->tmp, sizeof(o->tmp))
                              : stdout;
        if (!o->f)
            return -1;
        if (opts->format == TOOL_FMT_JSON)
            json_meta(o->f, meta);
        else
            fputs(CSV_COLS, o->f);
    }
    if (opts->raw_path) {
        o->raw = open_tmp(opts->tool, opts->raw_path, o->rawtmp, sizeof(o->rawtmp));
        if (!o->raw) {
            tool_out_close(o, 0);
            return -1;
        }
        fputs(RAW_COLS, o->raw);
    }
    return 0;
}

static void csv_rec(struct tool_out *o, const struct tool_rec *r)
{
    const struct tool_meta *m = &o->meta;
    fprintf(o->f, "%s,%s,%s,%s,%s,%zu,%u,%u,%.2f,%.2f,%.2f,", m->tool, r->test, r->op,
            r->dir, r->variant, r->size, r->st.batch, r->st.samples, r->st.p0, r->st.p50,
            r->st.p99);
    if (r->ref && r->ref_p50 > 0)
        fprintf(o->f, "%s,%.2f,%.3f,", r->ref, r->ref_p50, r->st.p50 / r->ref_p50);
    else
        fputs(",,,", o->f);
    fprintf(o->f, "%s,%s,%s,%s,%s,%d,%d,%s,%s,%s,%d\n", m->gpu, m->gpu_bus, m->driver,
            m->cuda, m->cpu, m->cpu_core, m->numa_node, m->backend, m->mapping, m->clock,
            m->simulated);
}

static void json_rec(struct tool_out *o, const struct tool_rec *r)
{
    fprintf(o->f, "%s\n {\"test\":\"%s\",\"op\":\"%s\",\"dir\":\"%s\",\"variant\":\"%s\","
            "\"size_B\":%zu,\"batch\":%u,\"samples\":%u,\"p0_ns\":%.2f,\"p50_ns\":%.2f,"
            "\"p99_ns\":%.2f", o->first_rec ? "" : ",", r->test, r->op, r->dir, r->variant,
            r->size, r->st.batch, r->st.samples, r->st.p0, r->st.p50, r->st.p99);
    if (r->ref && r->ref_p50 > 0)
        fprintf(o->f, ",\"ref\":\"%s\",\"ref_p50_ns\":%.2f,\"ratio\":%.3f", r->ref,
                r->ref_p50, r->st.p50 / r->ref_p50);
    fputc('}', o->f);
    o->first_rec = 0;
}

void tool_out_rec(struct tool_out *o, const struct tool_rec *r)
{
    o->nrec++;
    if (o->f)
        (o->opts->format == TOOL_FMT_JSON ? json_rec : csv_rec)(o, r);
    if (o->raw && r->raw) {
        for (unsigned i = 0; i < r->st.samples; i++)
            fprintf(o->raw, "%s,%s,%s,%s,%s,%zu,%u,%u,%.2f\n", o->meta.tool, r->test, r->op,
                    r->dir, r->variant, r->size, r->st.batch, i, r->raw[i]);
    }
}

/* Close f; rename tmp to path if ok, else remove it.  Returns ok && written. */
static int finish(const char *tool, FILE *f, const char *tmp, const char *path, int ok)
{
    int err = ferror(f);
    if (fclose(f) != 0 || err) {
        if (ok)
            fprintf(stderr, "%s: writing %s failed\n", tool, path);
        ok = 0;
    }
    if (ok && rename(tmp, path) != 0) {
        fprintf(stderr, "%s: rename %s to %s: %s\n", tool, tmp, path, strerror(errno));
        ok = 0;
    }
    if (!ok) {
        unlink(tmp);
        fprintf(stderr, "%s: %s not written (the run failed)\n", tool, path);
    }
    return ok;
}

int tool_out_close(struct tool_out *o, int ok)
{
    int result = ok;

    if (o->f && o->opts->format == TOOL_FMT_JSON)
        fprintf(o->f, "\n],\"ok\":%s}\n", ok ? "true" : "false");
    if (o->f && o->f != stdout)
        result = finish(o->opts->tool, o->f, o->tmp, o->opts->out_path, ok) && result;
    else if (o->f)
        fflush(o->f);
    if (o->raw)
        result = finish(o->opts->tool, o->raw, o->rawtmp, o->opts->raw_path, ok) && result;
    o->f = o->raw = NULL;
    return result;
}
