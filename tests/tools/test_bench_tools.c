/*
 * test_bench_tools.c - the benchmark tools (gdrx-copylat, gdrx-copybw,
 * gdrx-apiperf, gdrx-pplat) as a user meets them, on the simulated GPU:
 * exit statuses and messages of bad input, the banner, the table, CSV and
 * JSON, files written whole or not at all, CPU pinning, -v all.  Speed is
 * never asserted.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json_check.h"
#include "tt.h"

static const char *const tools[] = { "gdrx-copylat", "gdrx-copybw", "gdrx-apiperf",
                                     "gdrx-pplat" };
/* A short run of each tool (same order). */
static const char *const quick[] = { "-s 8 -n 5 -w 2", "-s 4K -n 3 -w 1",
                                     "-s 4K -n 3 -w 1", "-n 5 -w 5" };
#define NTOOLS 4

static void test_help(void)
{
    for (int i = 0; i < NTOOLS; i++) {
        const char *h[] = { "--help", "-h" };
        for (int j = 0; j < 2; j++) {
            CU_ASSERT_EQUAL(tt_run("|%s %s", tools[i], h[j]), 0);
            char want[64];
            snprintf(want, sizeof(want), "usage: %s", tools[i]);
            CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, want));
            CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "--csv"));
            CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "--json"));
            CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "--cpu"));
        }
    }
}

/* Each bad command line: exit 2, the message, and the pointer to --help. */
static void bad(const char *tool, const char *args, const char *msg)
{
    char hint[64];
    CU_ASSERT_EQUAL(tt_run("|%s %s", tool, args), 2);
    snprintf(hint, sizeof(hint), "Try '%s --help'.", tool);
    if (!strstr(tt_out, msg) || !strstr(tt_out, hint)) {
        fprintf(stderr, "%s %s printed:\n%s\n", tool, args, tt_out);
        CU_FAIL("message");
    }
}

static void test_bad_options(void)
{
    for (int i = 0; i < NTOOLS; i++) {
        bad(tools[i], "--bogus", "unknown option '--bogus'");
        bad(tools[i], "-Z", "unknown option '-Z'");
        bad(tools[i], "-n 0", "-n wants a number of samples");
        bad(tools[i], "-n 12x", "-n wants");
        bad(tools[i], "-w -1", "-w wants");
        bad(tools[i], "-c bogus", "-c wants a CPU number, auto or none");
        bad(tools[i], "-b bogus", "-b wants auto, gdrdrv, nvrm or dmabuf");
        bad(tools[i], "--csv --json", "--csv and --json exclude each other");
        bad(tools[i], "extra", "unexpected argument");
        bad(tools[i], "-d", "option '-d' wants a value");
    }
    bad("gdrx-copylat", "-t sideways", "-t wants to, from or both");
    bad("gdrx-copybw", "-v bogus", "-v wants libc, sse2");
    bad("gdrx-pplat", "-s 8", "takes no sizes");
}

/* 2^64-1 once overflowed the buffer size; empty items were skipped. */
static void test_bad_sizes(void)
{
    static const char *const lists[] = { "18446744073709551615", "5G", "4294967297", "0",
                                          "1,,2", "1,", ",1", "1K,x", "-1", "8Q", "" };
    for (int i = 0; i < 3; i++)
        for (size_t j = 0; j < sizeof(lists) / sizeof(lists[0]); j++) {
            char args[64];
            snprintf(args, sizeof(args), "-s '%s'", lists[j]);
            bad(tools[i], args, "-s wants up to 64 comma-separated sizes from 1 to 4G");
        }
}

static void test_sim_banner_first_line(void)
{
    for (int i = 0; i < NTOOLS; i++) {
        CU_ASSERT_EQUAL(tt_run("|%s %s", tools[i], quick[i]), 0);
        if (strncmp(tt_out, "SIMULATED GPU: ", 15) != 0) {
            fprintf(stderr, "%s printed first:\n%.300s\n", tools[i], tt_out);
            CU_FAIL("banner not on the first line");
        }
        CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "mean nothing about a GPU"));
    }
}

/* Split a table line at runs of two or more spaces. */
static int columns(const char *line, size_t len)
{
    int n = 0;
    for (size_t i = 0; i < len;) {
        while (i < len && line[i] == ' ')
            i++;
        if (i >= len)
            break;
        n++;
        while (i < len && !(line[i] == ' ' && i + 1 < len && line[i + 1] == ' '))
            i++;
    }
    return n;
}

/* Every row under a header has as many columns as the header; units are
 * in the headers; per-batch percentiles are said to be so. */
static void test_table(void)
{
    CU_ASSERT_EQUAL(tt_run("|gdrx-copylat -s 1,8,1M -n 5 -w 2"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "P0/P50/P99 over the batches"));
    /* The preamble says what one op is, the floor's instructions, where
     * the ops go and how batches are sized. */
    for (const char *const *l = (const char *const[]){ "\n  op:       host->GPU: one copy's "
             "stores, then one sfence", "\n  floor:    host->GPU: ", "\n  address:  each op",
             "\n  batch:    gdrx and floor of a row alike", "nothing subtracted", NULL }; *l; l++)
        if (!strstr(tt_out, *l)) {
            fprintf(stderr, "no '%s' in:\n%s\n", *l, tt_out);
            CU_FAIL("preamble line");
        }
    const char *h = strstr(tt_out, "\nsize (B)");
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    h++;
    CU_ASSERT_PTR_NOT_NULL(strstr(h, "gdrx P50 (ns)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(h, "ops/batch"));
    CU_ASSERT_PTR_NOT_NULL(strstr(h, "floor P50 (ns)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(h, "gdrx/floor"));
    int want = columns(h, strcspn(h, "\n")), rows = 0;
    CU_ASSERT_EQUAL(want, 11);
    for (const char *l = strchr(h, '\n') + 1; *l && *l != '\n'; l = strchr(l, '\n') + 1) {
        CU_ASSERT_EQUAL(columns(l, strcspn(l, "\n")), want);
        rows++;
    }
    CU_ASSERT_EQUAL(rows, 3);
}

/* Each line of a CSV has the header's number of cells. */
static int csv_rows(const char *csv, const char *must_have)
{
    char *head = strndup(csv, strcspn(csv, "\n"));
    int cells = head ? tt_count(head, ",") : -1, rows = 0;
    free(head);
    if (!strstr(csv, must_have))
        return -1;
    for (const char *l = csv; *l; l = strchr(l, '\n') + 1) {
        size_t len = strcspn(l, "\n");
        char *line = strndup(l, len);
        if (tt_count(line, ",") != cells)
            rows = -1000;
        free(line);
        rows++;
        if (!l[len])
            break;
    }
    return rows - 1;
}

/* The batch column of the CSV row of op, dir and size; -1 if none. */
static int csv_batch(const char *csv, const char *op, const char *dir, const char *size)
{
    for (const char *l = csv; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        char f[8][64];
        if (sscanf(l, "%63[^,],%63[^,],%63[^,],%63[^,],%63[^,],%63[^,],%63[^,]", f[0], f[1],
                   f[2], f[3], f[4], f[5], f[6]) == 7 && strcmp(f[2], op) == 0 &&
            strcmp(f[3], dir) == 0 && strcmp(f[5], size) == 0)
            return atoi(f[6]);
    }
    return -1;
}

static void test_csv(void)
{
    CU_ASSERT_EQUAL(tt_run("|gdrx-copylat -s 8,64 -n 5 -w 2 --csv 2>/dev/null"), 0);
    static const char head[] = "tool,test,op,dir,variant,size_B,batch,samples,p0_ns,"
        "p50_ns,p99_ns,ref,ref_p50_ns,ratio,gpu,gpu_bus,driver,cuda,cpu,cpu_core,numa_node,"
        "backend,mapping,clock,simulated\n";
    CU_ASSERT_EQUAL(strncmp(tt_out, head, sizeof(head) - 1), 0);
    /* 2 sizes x 2 directions x (gdrx, floor, gdrx-0B, cuMemcpy) */
    CU_ASSERT_EQUAL(csv_rows(tt_out, ",floor,H->D,"), 16);
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "gdrx-copylat,copy,gdrx-0B,H->D,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "gdrx-copylat,copy,gdrx,D->H,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "simcu"));  /* the GPU's name */
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, ",dmabuf,wc,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, ",1\n"));   /* simulated */
    CU_ASSERT_PTR_NULL(strstr(tt_out, "SIMULATED GPU"));   /* the banner went to stderr */
    /* gdrx and its floor: one ops/batch per row */
    for (int d = 0; d < 2; d++)
        for (int z = 0; z < 2; z++) {
            const char *dir = d ? "D->H" : "H->D", *size = z ? "64" : "8";
            int g = csv_batch(tt_out, "gdrx", dir, size);
            CU_ASSERT(g >= 1);
            CU_ASSERT_EQUAL(csv_batch(tt_out, "floor", dir, size), g);
        }
}

static void test_json(void)
{
    for (int i = 0; i < NTOOLS; i++) {
        CU_ASSERT_EQUAL(tt_run("|%s %s --json 2>/dev/null", tools[i], quick[i]), 0);
        if (!json_check(tt_out)) {
            fprintf(stderr, "%s --json printed:\n%s\n", tools[i], tt_out);
            CU_FAIL("not JSON");
        }
        CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "\"simulated\":true"));
        CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "\"ok\":true"));
        CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "\"p50_ns\":"));
    }
}

/* GDRX_BACKEND=bogus: named, and -o leaves no file behind. */
static void test_output_file_on_failure(void)
{
    char dir[64], path[128];
    tt_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/out.csv", dir);
    for (int i = 0; i < NTOOLS; i++) {
        CU_ASSERT_EQUAL(tt_run("GDRX_BACKEND=bogus|%s %s -o %s", tools[i], quick[i], path), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "GDRX_BACKEND=bogus is not a backend"));
        CU_ASSERT_EQUAL(access(path, F_OK), -1);
    }
    CU_ASSERT_EQUAL(tt_run("|gdrx-copylat -d 7 -s 8 -n 5 --json -o %s", path), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "cuDeviceGet(device 7)"));
    CU_ASSERT_EQUAL(access(path, F_OK), -1);
    CU_ASSERT_EQUAL(tt_run("|gdrx-copylat -s 8 -n 5 -o /nonexistent/dir/x.csv"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "cannot write /nonexistent/dir/x.csv"));
    /* Nothing (no temporary file either) was left in dir. */
    DIR *d = opendir(dir);
    struct dirent *ent;
    int entries = 0;
    while (d && (ent = readdir(d)) != NULL)
        entries += strcmp(ent->d_name, ".") != 0 && strcmp(ent->d_name, "..") != 0;
    if (d)
        closedir(d);
    CU_ASSERT_EQUAL(entries, 0);
    tt_rmdir(dir);
}

static void test_output_file(void)
{
    char dir[64], path[128], raw[128];
    tt_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/out.csv", dir);
    snprintf(raw, sizeof(raw), "%s/raw.csv", dir);
    CU_ASSERT_EQUAL(tt_run("|gdrx-copylat -s 8 -n 7 -w 2 -t to -o %s --raw %s", path, raw), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "size (B)"));   /* the table on stdout */
    CU_ASSERT_EQUAL(csv_rows(tt_slurp(path), "gdrx-copylat,copy,gdrx,H->D,"), 4);
    /* gdrx, floor, gdrx-0B, cuMemcpy: 7 samples each */
    CU_ASSERT_EQUAL(csv_rows(tt_slurp(raw), "tool,test,op,dir,variant,size_B,batch,sample,"
                             "ns_per_op\n"), 28);
    tt_rmdir(dir);
}

/* One failure, one message, however many variants -v all would run. */
static void test_variant_all(void)
{
    char dir[64], path[128];
    CU_ASSERT_EQUAL(tt_run("GDRX_BACKEND=bogus|gdrx-copylat -v all -s 8 -n 5"), 1);
    CU_ASSERT_EQUAL(tt_count(tt_out, "GDRX_BACKEND=bogus"), 1);
    /* a "--" ends the user's options, not the children's */
    CU_ASSERT_EQUAL(tt_run("|gdrx-copylat -v all -s 8 -n 5 -w 2 -t to --"), 0);
    CU_ASSERT_PTR_NULL(strstr(tt_out, "unexpected argument"));

    tt_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/all.csv", dir);
    CU_ASSERT_EQUAL(tt_run("|gdrx-copylat -v all -s 8 -n 5 -w 2 -t to -o %s", path), 0);
    CU_ASSERT_EQUAL(tt_count(tt_out, "SIMULATED GPU:"), 1);
    const char *csv = tt_slurp(path);
    CU_ASSERT_EQUAL(tt_count(csv, "tool,test,"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(csv, ",gdrx,H->D,libc,8,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(csv, ",gdrx,H->D,sse2,8,"));
    CU_ASSERT(csv_rows(csv, ",floor,") >= 6);
    CU_ASSERT_EQUAL(tt_run("|gdrx-copybw -v all -s 4K -n 2 -w 1 --json 2>/dev/null"), 0);
    CU_ASSERT(json_check(tt_out));
    CU_ASSERT(tt_count(tt_out, "\"op\":\"gdrx\"") >= 4);
    tt_rmdir(dir);
}

static void test_cpu_pinning(void)
{
    CU_ASSERT_EQUAL(tt_run("|gdrx-copylat -c 0 -s 8 -n 3"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "pinned to CPU 0 "));
    CU_ASSERT_EQUAL(tt_run("|gdrx-pplat -c none -n 3 -w 3"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "not pinned (-c none)"));
    CU_ASSERT_EQUAL(tt_run("|gdrx-apiperf -c 65535 -s 4K -n 2"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "CPU 65535 is not one this process may run on"));
    CU_ASSERT_EQUAL(tt_run("|gdrx-copybw -s 4K -n 2 --csv 2>/dev/null"), 0);
    CU_ASSERT_PTR_NULL(strstr(tt_out, ",-1,-1,dmabuf")); /* auto pinned a CPU */
}

/* Without a GPU every tool measures nothing and says so: not run (3),
 * the same for all four (make bench lists them as NOT RUN, not FAILED). */
static void test_pplat_not_run(void)
{
    static const char *const others[] = {
        "SIMCU_DEVICES=none|gdrx-copylat -s 8 -n 5", "SIMCU_DEVICES=none|gdrx-copybw -s 4K -n 2",
        "SIMCU_DEVICES=none|gdrx-apiperf -s 4K",
    };
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        CU_ASSERT_EQUAL(tt_run(others[i]), 3);
        CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, ": NOT RUN: "));
    }
    CU_ASSERT_EQUAL(tt_run("SIMCU_DEVICES=none|gdrx-pplat -n 5"), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "gdrx-pplat: NOT RUN: no GPU"));
    CU_ASSERT_EQUAL(tt_run("|gdrx-pplat -n 5 -w 5"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "a CPU thread in place of the GPU kernel"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "\nwrite "));
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "\npoll "));
}

static void test_apiperf(void)
{
    char plugin[512];
    snprintf(plugin, sizeof(plugin), "GDRX_UCX_PLUGIN=%s/ucx_plugin/.libs/libuct_gdrx.so.0",
             tt_builddir());
    CU_ASSERT_EQUAL(tt_run("%s|gdrx-apiperf -s 4K,64K -n 3 -w 1", plugin), 0);
    for (const char *const *op = (const char *const[]){ "api-first  open", "api-cold   pin ",
             "api-warm   unmap+unpin", "api-warm   query", NULL }; *op; op++)
        if (!strstr(tt_out, *op)) {
            fprintf(stderr, "no '%s' in:\n%s\n", *op, tt_out);
            CU_FAIL("row missing");
        }
#ifdef GDRX_TEST_HAVE_UCX
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "\nrcache     hit "));
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "\nrcache     miss "));
    CU_ASSERT_EQUAL(tt_run("GDRX_UCX_PLUGIN=/nonexistent.so|gdrx-apiperf -s 4K -n 2"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "UCX registration cache: NOT RUN (the gdrx UCX "
                                          "plugin is not loaded"));
#else
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "UCX registration cache: NOT RUN (this "
                                          "gdrx-apiperf was built without UCX"));
#endif
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_help),
    GDRX_TEST_CASE(test_bad_options),
    GDRX_TEST_CASE(test_bad_sizes),
    GDRX_TEST_CASE(test_sim_banner_first_line),
    GDRX_TEST_CASE(test_table),
    GDRX_TEST_CASE(test_csv),
    GDRX_TEST_CASE(test_json),
    GDRX_TEST_CASE(test_output_file_on_failure),
    GDRX_TEST_CASE(test_output_file),
    GDRX_TEST_CASE(test_variant_all),
    GDRX_TEST_CASE(test_cpu_pinning),
    GDRX_TEST_CASE(test_pplat_not_run),
    GDRX_TEST_CASE(test_apiperf),
    GDRX_TEST_END
};

static const struct gdrx_test_suite suites[] = {
    { "bench_tools", NULL, NULL, cases },
    { "bench_script", NULL, NULL, tt_script_cases },
    { "tool_method", NULL, NULL, tt_method_cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    setenv("GDRX_BACKEND", "dmabuf", 0);
    return gdrx_test_main(argc, argv, suites);
}
