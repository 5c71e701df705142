/*
 * test_ucp_defaults.c - gdrx installed the way sites install it, in the
 * configurations users leave or set: UCX_TLS unset, "all", "^gdr_copy",
 * and the network path between nodes without GPUDirect RDMA ("tcp,...,gdrx"
 * over the loopback device).  Each case runs tests/ucx/ucp_job (two
 * processes, messages both ways of random lengths past every threshold,
 * host-only jobs and jobs with device buffers, every byte and the guards
 * around it checked) with the plugin preloaded, next to:
 *   - the system's UCX (no CUDA: gdrx is its only CUDA transport);
 *   - a CUDA-enabled build of the same UCX release with cuda_copy,
 *     cuda_ipc and gdr_copy, gdr_copy running over gdrx's own
 *     libgdrapi.so.2 (config/ucx-cuda-debian.sh; the simulated runtime
 *     tests/sim/libcudart runs UCX's CUDA transports on the simulated GPU).
 *     Without that build its cases are not registered: not run.
 * With a CUDA transport and gdr_copy besides gdrx, UCP's memory-type
 * endpoint must keep to two transports (UCX 1.21 and later abort every
 * process at worker creation when it needs three, host-only jobs too) and
 * gdrx must carry its device copies (the fastest path for small messages).
 *
 * SPDX-License-Identifier: MIT
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ut_uct.h"

static char out[1 << 16];
static char stats[PATH_MAX];
/* Set: the fake libnvidia-ml (tests/info) comes first in the job's path. */
static int with_fake_nvml;

/* The library path of a job: the CUDA-enabled UCX's (ut_ucx_cuda_libpath),
 * or the simulated GPU's then the UCX the plugin was built for. */
static void job_library_path(int cuda, char *buf, size_t size)
{
    char sim[PATH_MAX], nvml[PATH_MAX];

    if (cuda && ut_ucx_cuda_libpath(buf, size))
        return;
    ut_build_path(sim, sizeof(sim), "tests/sim/.libs");
    ut_build_path(nvml, sizeof(nvml), "tests/info/.libs");
    snprintf(buf, size, "%s%s%s:%s", with_fake_nvml ? nvml : "", with_fake_nvml ? ":" : "",
             sim, GDRX_UCX_LIBDIR);
}

/* Run ucp_job with `env` (VAR=value words; "UCX_TLS=" alone: unset) next
 * to the chosen UCX; 0 when it exited 0.  Output in out. */
static int run_job(int cuda, const char *env, const char *args)
{
    char libpath[4 * PATH_MAX], plugin[PATH_MAX], job[PATH_MAX], cmd[8 * PATH_MAX + 1024];
    const char *rt = getenv("GDRX_SANITIZER_RUNTIME");
    int status;

    ut_stats_file(stats, sizeof(stats), "defaults");
    unlink(stats);
    job_library_path(cuda, libpath, sizeof(libpath));
    ut_build_path(plugin, sizeof(plugin), "ucx_plugin/.libs/libuct_gdrx.so.0");
    ut_build_path(job, sizeof(job), "tests/ucx/.libs/ucp_job");
    if (access(job, X_OK) != 0)
        ut_build_path(job, sizeof(job), "tests/ucx/ucp_job");
    snprintf(cmd, sizeof(cmd),
             "env -u UCX_TLS -u UCX_MEMTYPE_CACHE -u UCX_NET_DEVICES "
             "LD_LIBRARY_PATH='%s' LD_PRELOAD='%s%s%s' UCX_GDRX_STATS_DUMP='%s' "
             "ASAN_OPTIONS=detect_leaks=0 %s '%s' %s 2>&1",
             libpath, (rt && *rt) ? rt : "", (rt && *rt) ? ":" : "", plugin, stats,
             env, job, args);
    status = gdrx_test_capture(cmd, out, sizeof(out));
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "    ucp_job %s (%s UCX, %s) said:\n%s\n", args,
                cuda ? "CUDA" : "system", env, out);
        return -1;
    }
    return 0;
}

/* Both ranks checked every message: "rank R: N messages, 0 bad". */
static void assert_clean(long msgs)
{
    char want[64];

    for (int r = 0; r < 2; r++) {
        snprintf(want, sizeof(want), "rank %d: %ld messages, 0 bad", r, msgs);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    }
}

/* UCP's memory-type endpoint for CUDA memory: at most two transports,
 * `tl` one of them. */
static void assert_memtype_lanes(const char *tl)
{
    const char *p = strstr(out, "memtype lanes cuda ");
    unsigned n    = 99;
    char list[128] = "", want[40];

    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT(sscanf(p, "memtype lanes cuda %u: %100[^\n]", &n, list) == 2);
    CU_ASSERT(n >= 1 && n <= 2);
    if (n > 2)
        fprintf(stderr, "    %.*s\n", (int)strcspn(p, "\n"), p);
    snprintf(want, sizeof(want), ",%s,", tl);
    memmove(list + 1, list, strlen(list) + 1);
    list[0] = ',';
    strcat(list, ",");
    CU_ASSERT_PTR_NOT_NULL(strstr(list, want));
}

/* The first high-bandwidth lane of UCP's memory-type endpoint (large
 * messages staged through host memory) is `tl`: cuda_copy where the UCX
 * has it (its copy engine stages large messages several times faster than
 * gdrx: 146 against 684 us at 4 MiB on an H200). */
static void assert_rma_bw_first(const char *tl)
{
    const char *p = strstr(out, "memtype rma_bw cuda:");
    char first[64] = "";

    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT(sscanf(p, "memtype rma_bw cuda: %63[^,\n]", first) == 1);
    CU_ASSERT_STRING_EQUAL(first, tl);
}

/* The endpoint between the ranks stays below UCP's limit of lanes per
 * endpoint (an extra CUDA-capable transport must not crowd one out; 1.13
 * allows 6). */
static void assert_ep_lanes(void)
{
    const char *p = strstr(out, "ep lanes (limit ");
    unsigned limit = 0, n = 99;

    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT(sscanf(p, "ep lanes (limit %u) %u:", &limit, &n) == 2);
    CU_ASSERT(n >= 1 && n < limit);
}

/* gdrx moved device data (both directions, both ranks' counters). */
static void assert_gdrx_moved(void)
{
    static const char *const ops[] = { "short", "bcopy", "zcopy" };
    long get = 0, put = 0, v;
    char op[64];

    for (int i = 0; i < 3; i++) {
        snprintf(op, sizeof(op), "iface get_%s", ops[i]);
        v = ut_counter(stats, op, "bytes");
        get += v > 0 ? v : 0;
        snprintf(op, sizeof(op), "iface put_%s", ops[i]);
        v = ut_counter(stats, op, "bytes");
        put += v > 0 ? v : 0;
    }
    CU_ASSERT(get > 0);
    CU_ASSERT(put > 0);
}

#define MSGS     "160"
#define JOB_DEV  "-m mix -n " MSGS " -x 600000 -s %d"
#define JOB_HOST "-m host -n " MSGS " -x 600000 -s %d"

/* One configuration: a host-only job and a job with device buffers. */
static void job_pair(int cuda, const char *env, const char *memtype_tl, int seed)
{
    const char *bw_tl = cuda ? "cuda_copy" : "gdrx";
    char args[128];

    snprintf(args, sizeof(args), JOB_HOST, seed);
    CU_ASSERT_EQUAL_FATAL(run_job(cuda, env, args), 0);
    assert_clean(atol(MSGS));
    assert_memtype_lanes(memtype_tl);
    assert_rma_bw_first(bw_tl);
    snprintf(args, sizeof(args), JOB_DEV, seed + 1);
    CU_ASSERT_EQUAL_FATAL(run_job(cuda, env, args), 0);
    assert_clean(atol(MSGS));
    assert_memtype_lanes(memtype_tl);
    assert_ep_lanes();
    assert_gdrx_moved();
}

/* The system's UCX (no CUDA): gdrx is the only transport of GPU memory. */
static void test_system_tls_unset(void)   { job_pair(0, "", "gdrx", 11); }
static void test_system_tls_all(void)     { job_pair(0, "UCX_TLS=all", "gdrx", 21); }
static void test_system_tls_named(void)   { job_pair(0, "UCX_TLS=sm,gdrx", "gdrx", 31); }
static void test_system_tcp(void)
{
    job_pair(0, "UCX_TLS=tcp,gdrx UCX_NET_DEVICES=lo", "gdrx", 41);
}

/* The CUDA-enabled UCX with cuda_copy, cuda_ipc and gdr_copy (over gdrx's
 * libgdrapi) and gdrx installed next to them. */
static void test_cuda_tls_unset(void)     { job_pair(1, "", "gdrx", 51); }
static void test_cuda_tls_all(void)       { job_pair(1, "UCX_TLS=all", "gdrx", 61); }
static void test_cuda_tls_not_gdr_copy(void)
{
    job_pair(1, "UCX_TLS=^gdr_copy", "gdrx", 71);
}
static void test_cuda_named(void)
{
    job_pair(1, "UCX_TLS=sm,cuda_copy,gdrx", "gdrx", 81);
}
static void test_cuda_tcp(void)
{
    job_pair(1, "UCX_TLS=tcp,cuda_copy,gdrx UCX_NET_DEVICES=lo", "gdrx", 91);
}

/* Many processes per node (UCP divides shared bandwidth by their number):
 * gdrx still outranks gdr_copy for small copies, so two transports at most
 * (no abort from UCX 1.21 on); large copies may go to gdrx there.  With
 * 250e6 B/s of its own gdrx lost to gdr_copy's 250 MiB/s from about 50
 * processes on 1.22 (test_md_setup's test_rank_figures: the figures). */
static void test_cuda_tls_unset_many_ppn(void)
{
    static const char *const ppn[] = { "UCX_NUM_PPN=64", "UCX_NUM_PPN=1024",
                                       "UCX_NUM_PPN=65536" };
    char args[128];

    for (unsigned i = 0; i < sizeof(ppn) / sizeof(ppn[0]); i++) {
        snprintf(args, sizeof(args), JOB_DEV, 111 + (int)i);
        CU_ASSERT_EQUAL_FATAL(run_job(1, ppn[i], args), 0);
        assert_clean(atol(MSGS));
        assert_memtype_lanes("gdrx");
    }
}

/* The same UCX without gdrx's transport: gdr_copy over gdrx's libgdrapi
 * carries the device copies (the flavour works before gdrx is added). */
static void test_cuda_gdr_copy_alone(void)
{
    char args[128];

    snprintf(args, sizeof(args), JOB_DEV, 101);
    CU_ASSERT_EQUAL_FATAL(run_job(1, "UCX_TLS=sm,cuda_copy,gdr_copy", args), 0);
    assert_clean(atol(MSGS));
    assert_memtype_lanes("gdr_copy");
}

/* A GPU shared by several processes without MPS: one warning per job
 * (uct_gdrx_share.c), from the process a launcher names local rank 0, and
 * none where MPS serves the GPU or one process has it.  NVML's process
 * count comes from the fake libnvidia-ml (FAKE_NVML_PROCS), MPS from the
 * simulated driver (SIMCU_MPS). */
static int shared_gpu_warnings(const char *env, const char *mode, int launcher)
{
    char args[128];
    int n = 0;

    snprintf(args, sizeof(args), "-m %s -n 40 -x 70000 -s 7%s", mode, launcher ? " -L" : "");
    with_fake_nvml = 1;
    CU_ASSERT_EQUAL(run_job(0, env, args), 0);
    with_fake_nvml = 0;
    assert_clean(40);
    for (const char *p = out; (p = strstr(p, "without MPS")) != NULL; p++)
        n++;
    return n;
}

static void test_shared_gpu_warns_once_per_job(void)
{
    CU_ASSERT_EQUAL(shared_gpu_warnings("UCX_TLS=sm,gdrx FAKE_NVML_PROCS=2", "dev", 1), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "shared by 2 processes without MPS"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "nvidia-cuda-mps-control -d"));
    /* UCX_TLS unset, the default: the same */
    CU_ASSERT_EQUAL(shared_gpu_warnings("FAKE_NVML_PROCS=3", "mix", 1), 1);
}

static void test_shared_gpu_warns_each_process_without_launcher(void)
{
    CU_ASSERT_EQUAL(shared_gpu_warnings("UCX_TLS=sm,gdrx FAKE_NVML_PROCS=2", "dev", 0), 2);
}

static void test_shared_gpu_quiet_where_it_does_not_apply(void)
{
    /* MPS serves the GPU */
    CU_ASSERT_EQUAL(shared_gpu_warnings("FAKE_NVML_PROCS=2 SIMCU_MPS=1", "dev", 1), 0);
    /* one process on the GPU */
    CU_ASSERT_EQUAL(shared_gpu_warnings("FAKE_NVML_PROCS=1", "dev", 1), 0);
    /* NVML cannot answer: nothing is claimed */
    CU_ASSERT_EQUAL(shared_gpu_warnings("FAKE_NVML_PROCS=2 FAKE_NVML_FAIL=1", "dev", 1), 0);
    /* no GPU memory through gdrx */
    CU_ASSERT_EQUAL(shared_gpu_warnings("FAKE_NVML_PROCS=2", "host", 1), 0);
}

static const struct gdrx_test_case shared_cases[] = {
    GDRX_TEST_CASE(test_shared_gpu_warns_once_per_job),
    GDRX_TEST_CASE(test_shared_gpu_warns_each_process_without_launcher),
    GDRX_TEST_CASE(test_shared_gpu_quiet_where_it_does_not_apply),
    GDRX_TEST_END
};

static const struct gdrx_test_case system_cases[] = {
    GDRX_TEST_CASE(test_system_tls_unset),
    GDRX_TEST_CASE(test_system_tls_all),
    GDRX_TEST_CASE(test_system_tls_named),
    GDRX_TEST_CASE(test_system_tcp),
    GDRX_TEST_END
};

static const struct gdrx_test_case cuda_cases[] = {
    GDRX_TEST_CASE(test_cuda_tls_unset),
    GDRX_TEST_CASE(test_cuda_tls_all),
    GDRX_TEST_CASE(test_cuda_tls_not_gdr_copy),
    GDRX_TEST_CASE(test_cuda_named),
    GDRX_TEST_CASE(test_cuda_tcp),
    GDRX_TEST_CASE(test_cuda_tls_unset_many_ppn),
    GDRX_TEST_CASE(test_cuda_gdr_copy_alone),
    GDRX_TEST_END
};

int main(int argc, char **argv)
{
    static struct gdrx_test_suite suites[] = {
        { "ucx_defaults_system", NULL, NULL, system_cases },
        { "ucx_shared_gpu", NULL, NULL, shared_cases },
        GDRX_SUITE_END,
        GDRX_SUITE_END,
    };

    char libpath[4 * PATH_MAX];

    if (ut_ucx_cuda_libpath(libpath, sizeof(libpath))) {
        suites[2] = (struct gdrx_test_suite){ "ucx_defaults_cuda", NULL, NULL,
                                              cuda_cases };
    } else {
        tc_report_skip("ucx_defaults_cuda",
                       "no CUDA-enabled UCX " GDRX_UCX_BUILD_VERSION " with gdr_copy "
                       "(config/deps.sh builds one where the CUDA toolkit is installed)");
    }
    return gdrx_test_main(argc, argv, suites);
}
