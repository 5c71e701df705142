/*
 * tool_table.h - the human table: cells collected row by row, printed
 * with every column as wide as its widest cell (so numbers never run
 * together), units in the column headers.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_TOOL_TABLE_H
#define GDRX_TOOL_TABLE_H

#include <stdio.h>

#define TOOL_TABLE_MAX_COLS 16

struct tool_table {
    char   title[160];
    int    ncols;
    int    nleft;                 /* the first nleft columns are text */
    char  *heads[TOOL_TABLE_MAX_COLS];
    char **cells;                 /* nrows * ncols */
    int    nrows, cap;
};

/* heads: "|"-separated column headers, e.g. "size|P50 (ns)|P99 (ns)". */
void tool_table_init(struct tool_table *t, const char *title, int nleft, const char *heads);

/* One row: printf-style, cells separated by '|'.  0, or -1 (no memory). */
int tool_table_row(struct tool_table *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Print (nothing if it has no rows), then tool_table_free. */
void tool_table_print(struct tool_table *t, FILE *f);
void tool_table_free(struct tool_table *t);

/* tool_table_print to f, or only free when f is NULL (no table wanted). */
void tool_table_finish(struct tool_table *t, FILE *f);

#endif /* GDRX_TOOL_TABLE_H */
