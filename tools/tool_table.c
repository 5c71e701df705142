/*
 * tool_table.c - the aligned human table (tool_table.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tool_table.h"

/* Split s at '|' into up to max strdup'ed parts; returns how many. */
static int split(const char *s, char **out, int max)
{
    int n = 0;
    while (n < max) {
        size_t len = strcspn(s, "|");
        out[n] = strndup(s, len);
        if (!out[n])
            break;
        n++;
        if (!s[len])
            break;
        s += len + 1;
    }
    return n;
}

void tool_table_init(struct tool_table *t, const char *title, int nleft, const char *heads)
{
    memset(t, 0, sizeof(*t));
    snprintf(t->title, sizeof(t->title), "%s", title);
    t->nleft = nleft;
    t->ncols = split(heads, t->heads, TOOL_TABLE_MAX_COLS);
}

int tool_table_row(struct tool_table *t, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (t->nrows == t->cap) {
        int cap = t->cap ? t->cap * 2 : 16;
        char **c = realloc(t->cells, (size_t)cap * (size_t)t->ncols * sizeof(*c));
        if (!c)
            return -1;
        t->cells = c;
        t->cap = cap;
    }
    char **row = t->cells + (size_t)t->nrows * (size_t)t->ncols;
    int n = split(line, row, t->ncols);
    for (int i = n; i < t->ncols; i++)
        row[i] = strdup("");
    t->nrows++;
    return 0;
}

void tool_table_print(struct tool_table *t, FILE *f)
{
    int w[TOOL_TABLE_MAX_COLS];

    if (t->nrows == 0) {
        tool_table_free(t);
        return;
    }
    for (int c = 0; c < t->ncols; c++) {
        w[c] = (int)strlen(t->heads[c]);
        for (int r = 0; r < t->nrows; r++) {
            const char *cell = t->cells[(size_t)r * (size_t)t->ncols + (size_t)c];
            int len = cell ? (int)strlen(cell) : 0;
            w[c] = len > w[c] ? len : w[c];
        }
    }
    fprintf(f, "\n%s\n", t->title);
    for (int r = -1; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *cell = r < 0 ? t->heads[c] : t->cells[(size_t)r * (size_t)t->ncols + (size_t)c];
            int left = c < t->nleft;
            fprintf(f, "%s%*s", c ? "  " : "", left ? -w[c] : w[c], cell ? cell : "");
        }
        fputc('\n', f);
    }
    fflush(f);
    tool_table_free(t);
}

void tool_table_free(struct tool_table *t)
{
    for (size_t i = 0; i < (size_t)t->nrows * (size_t)t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    for (int c = 0; c < t->ncols; c++)
        free(t->heads[c]);
    t->cells = NULL;
    t->nrows = t->cap = t->ncols = 0;
}

void tool_table_finish(struct tool_table *t, FILE *f)
{
    if (f)
        tool_table_print(t, f);
    else
        tool_table_free(t);
}
