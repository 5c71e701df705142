/*
 * info_report.c - gdrx-info's report: facts in sections, problems with
 * their fixes, printed as aligned text or as one JSON object.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "info.h"

#define INFO_MAX_ITEMS    256
#define INFO_MAX_PROBLEMS 32

struct info_item {
    const char *section;
    char        key[24];
    char        label[32];      /* "" when JSON only */
    int         index, verbose;
    char        value[512];
};

struct info_prob {
    const char *part;
    char        what[512], fix[512];
};

struct info_report {
    struct info_item items[INFO_MAX_ITEMS];
    struct info_prob probs[INFO_MAX_PROBLEMS];
    int              nitems, nprobs;
};

/* Text headings of the sections (JSON uses the key). */
static const char *const titles[][2] = {
    { "library", "libgdrx" }, { "driver", "NVIDIA driver" }, { "gpus", "GPUs" },
    { "backends", "backends" }, { "hooks", "CUDA hooks" }, { "copy", "copy" }, { "gdrapi", "libgdrapi" },
    { "ucx", "UCX" },
    { "environment", "environment" },
};

static const char *title_of(const char *section)
{
    for (size_t i = 0; i < sizeof(titles) / sizeof(titles[0]); i++)
        if (strcmp(titles[i][0], section) == 0)
            return titles[i][1];
    return section;
}

struct info_report *info_report_new(void)
{
    return calloc(1, sizeof(struct info_report));
}

void info_report_free(struct info_report *r)
{
    free(r);
}

static void add(struct info_report *r, int verbose, const char *section, int index,
                const char *key, const char *label, const char *fmt, va_list ap)
{
    if (r->nitems == INFO_MAX_ITEMS)
        return; /* a fixed report: more items than this is a bug, not input */
    struct info_item *it = &r->items[r->nitems++];
    it->section = section;
    it->index = index;
    snprintf(it->key, sizeof(it->key), "%s", key);
    snprintf(it->label, sizeof(it->label), "%s", label ? label : "");
    it->verbose = verbose;
    vsnprintf(it->value, sizeof(it->value), fmt, ap);
}

void info_add(struct info_report *r, const char *section, int index, const char *key,
              const char *label, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add(r, 0, section, index, key, label, fmt, ap);
    va_end(ap);
}

void info_add_v(struct info_report *r, const char *section, int index, const char *key,
                const char *label, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add(r, 1, section, index, key, label, fmt, ap);
    va_end(ap);
}

void info_problem(struct info_report *r, const char *part, const char *fix, const char *fmt, ...)
{
    va_list ap;

    if (r->nprobs == INFO_MAX_PROBLEMS)
        return;
    struct info_prob *p = &r->probs[r->nprobs++];
    p->part = part;
    snprintf(p->fix, sizeof(p->fix), "%s", fix);
    va_start(ap, fmt);
    vsnprintf(p->what, sizeof(p->what), fmt, ap);
    va_end(ap);
}

/* Index of the first item of `section`, or -1. */
static int first_of(const struct info_report *r, const char *section)
{
    for (int i = 0; i < r->nitems; i++)
        if (strcmp(r->items[i].section, section) == 0)
            return i;
    return -1;
}

/* The sections present, in the order of `titles`, then any others in the
 * order of first use; the number of them. */
static int ordered_sections(const struct info_report *r, int *first, int max)
{
    int n = 0;

    for (size_t t = 0; t < sizeof(titles) / sizeof(titles[0]) && n < max; t++) {
        int i = first_of(r, titles[t][0]);
        if (i >= 0)
            first[n++] = i;
    }
    for (int i = 0; i < r->nitems && n < max; i++) {
        if (first_of(r, r->items[i].section) != i)
            continue;
        int known = 0;
        for (int k = 0; k < n; k++)
            known |= strcmp(r->items[first[k]].section, r->items[i].section) == 0;
        if (!known)
            first[n++] = i;
    }
    return n;
}

/* The highest element index of an array section; -1 for an object. */
static int max_index(const struct info_report *r, const char *sec)
{
    int max = -1;

    for (int i = 0; i < r->nitems; i++)
        if (strcmp(r->items[i].section, sec) == 0 && r->items[i].index > max)
            max = r->items[i].index;
    return max;
}

/* Print `text` wrapped at 80 columns, continuation lines indented. */
static void print_wrapped(FILE *f, const char *text, int col, int indent)
{
    const char *p = text + strspn(text, " ");
    int first = 1;

    while (*p) {
        size_t word = strcspn(p, " ");
        if (!first && col + 1 + (int)word > 80) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (!first) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", (int)word, p);
        col += (int)word;
        p += word;
        p += strspn(p, " ");
        first = 0;
    }
    fputc('\n', f);
}

void info_print_text(const struct info_report *r, FILE *f, int verbose)
{
    int first[INFO_MAX_ITEMS], nsec = ordered_sections(r, first, INFO_MAX_ITEMS);

    for (int k = 0; k < nsec; k++) {
        int s = first[k];
        const char *sec = r->items[s].section;
        fprintf(f, "%s\n", title_of(sec));
        for (int e = -1; e <= max_index(r, sec); e++) {
            int shown = 0;
            for (int i = s; i < r->nitems; i++) {
                const struct info_item *it = &r->items[i];
                if (strcmp(it->section, sec) != 0 || it->index != e || !it->label[0] ||
                    (it->verbose && !verbose))
                    continue;
                /* the first fact of an array element heads it; the rest indent */
                int indent = e >= 0 && shown++ ? 4 : 2;
                int col = fprintf(f, "%*s%-*s ", indent, "", 16 - indent, it->label);
                print_wrapped(f, it->value, col, 17);
            }
        }
    }
    if (r->nprobs == 0)
        return;
    fprintf(f, "problems and fixes\n");
    for (int i = 0; i < r->nprobs; i++) {
        int col = fprintf(f, "  %d. %s: ", i + 1, r->probs[i].part);
        print_wrapped(f, r->probs[i].what, col, 5);
        col = fprintf(f, "     fix: ");
        print_wrapped(f, r->probs[i].fix, col, 10);
    }
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* The members of one object: the items of `sec` with this index. */
static void json_members(const struct info_report *r, const char *sec, int index, FILE *f)
{
    int n = 0;

    fputc('{', f);
    for (int i = 0; i < r->nitems; i++) {
        const struct info_item *it = &r->items[i];
        if (strcmp(it->section, sec) != 0 || it->index != index)
            continue;
        fprintf(f, "%s", n++ ? ", " : "");
        json_str(f, it->key);
        fputs(": ", f);
        json_str(f, it->value);
    }
    fputc('}', f);
}

void info_print_json(const struct info_report *r, FILE *f, int exit_status)
{
    int first[INFO_MAX_ITEMS], nsec = ordered_sections(r, first, INFO_MAX_ITEMS);

    fputs("{\n", f);
    for (int k = 0; k < nsec; k++) {
        int s = first[k];
        const char *sec = r->items[s].section;
        int last = max_index(r, sec);
        fputs("  ", f);
        json_str(f, sec);
        fputs(": ", f);
        if (last < 0) {
            json_members(r, sec, -1, f);
        } else {
            fputc('[', f);
            for (int e = 0; e <= last; e++) {
                fputs(e ? ",\n    " : "\n    ", f);
                json_members(r, sec, e, f);
            }
            fputs("\n  ]", f);
        }
        fputs(",\n", f);
    }
    fputs("  \"problems\": [", f);
    for (int i = 0; i < r->nprobs; i++) {
        fputs(i ? ",\n    {\"part\": " : "\n    {\"part\": ", f);
        json_str(f, r->probs[i].part);
        fputs(", \"problem\": ", f);
        json_str(f, r->probs[i].what);
        fputs(", \"fix\": ", f);
        json_str(f, r->probs[i].fix);
        fputc('}', f);
    }
    fprintf(f, "%s],\n  \"exit_status\": %d\n}\n", r->nprobs ? "\n  " : "", exit_status);
}
