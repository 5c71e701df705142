/*
 * test_mpi.c - gdrx under Open MPI, as users run it: two ranks, pml ucx,
 * the plugin preloaded, GPU buffers on the simulated GPU (any CPU access to
 * them faults; Open MPI uses the UCX gdrx was built for, first on
 * LD_LIBRARY_PATH).  The programs check every byte they receive (-c); gdrx's
 * counters prove that the copies went through gdrx; UCX_MEMTYPE_CACHE is
 * left at its default.
 *
 * SPDX-License-Identifier: MIT
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ut_uct.h"

static char out[1 << 18];
static char stats[128];

#define UT_PLUGIN          "ucx_plugin/.libs/libuct_gdrx.so.0"
/* the test build that records another UCX release (tests/ucx/local.mk) */
#define UT_PLUGIN_WRONGVER "tests/ucx/.libs/libuct_gdrx_wrongver.so"

/* Run `prog args` on two ranks with the plugin at plugin_rel preloaded,
 * UCX_TLS=tls and extra "-x" settings; 0 if mpirun exited 0 (else its
 * output is shown unless quiet).  Output in out, counters in stats. */
/* The UCX the ranks load: NULL, the one gdrx was built for; else a
 * library path (the CUDA-enabled build, ut_ucx_cuda_libpath). */
static const char *ranks_libpath;
/* mpirun's exit status in the last run (-1: it did not exit) */
static int last_exit;

static int run_plugin(const char *plugin_rel, const char *tls, const char *extra,
                      const char *prog, const char *args, int quiet)
{
    const char *rt = getenv("GDRX_SANITIZER_RUNTIME");
    char sim[1100], plugin[512], exe[512], cmd[8192], tls_env[256];
    int status;

    /* tls NULL: UCX_TLS unset, as most users leave it */
    if (tls != NULL)
        snprintf(tls_env, sizeof(tls_env), "UCX_TLS=%s", tls);
    else
        snprintf(tls_env, sizeof(tls_env), "-u UCX_TLS");

    /* one file per suite run (cases run in children of the suite's
     * process, which removes it at the end) */
    snprintf(stats, sizeof(stats), "/tmp/gdrx-mpi-stats.%d", (int)getppid());
    unlink(stats);
    /* The simulated GPU has no device node and serves through dmabuf only:
     * its libcuda, preloaded and initialised at load, stands for a CUDA
     * program that set up CUDA before MPI_Init (where gdrx lists its
     * resource) */
    ut_sim_preload(sim, sizeof(sim));
    ut_build_path(plugin, sizeof(plugin), plugin_rel);
    ut_build_path(exe, sizeof(exe), prog);
    snprintf(cmd, sizeof(cmd),
             "env -u UCX_MEMTYPE_CACHE %s OMPI_ALLOW_RUN_AS_ROOT=1 "
             "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 LD_PRELOAD='%s%s%s:%s' "
             "LD_LIBRARY_PATH=\"%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\" "
             "UCX_GDRX_STATS_DUMP=%s ASAN_OPTIONS=detect_leaks=0 "
             "'%s' -np 2 --oversubscribe --bind-to none --allow-run-as-root "
             "--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any "
             "--mca btl self,vader "
             "-x LD_PRELOAD -x LD_LIBRARY_PATH %s -x UCX_GDRX_STATS_DUMP "
             "-x GDRX_BACKEND -x ASAN_OPTIONS %s '%s' %s 2>&1",
             tls_env, (rt && *rt) ? rt : "", (rt && *rt) ? ":" : "", sim, plugin,
             ranks_libpath ? ranks_libpath : GDRX_UCX_LIBDIR,
             stats, GDRX_MPIRUN, tls ? "-x UCX_TLS" : "", extra, exe, args);
    status = gdrx_test_capture(cmd, out, sizeof(out));
    last_exit = (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
    if ((status == -1) || !WIFEXITED(status) || (WEXITSTATUS(status) != 0)) {
        if (!quiet) {
            fprintf(stderr, "    %s %s said:\n%s\n", prog, args, out);
        }
        return -1;
    }
    return 0;
}

static int run_mpi(const char *tls, const char *extra, const char *prog, const char *args,
                   int quiet)
{
    return run_plugin(UT_PLUGIN, tls, extra, prog, args, quiet);
}

static int run(const char *tls, const char *extra, const char *prog, const char *args)
{
    return run_mpi(tls, extra, prog, args, 0);
}

/* Operations ("count") or bytes ("bytes") of gdrx in one direction ("get":
 * out of a GPU, "put": into one), over every operation kind and both ranks
 * (which kind UCX uses for which size differs between its releases). */
static long total(const char *dir, const char *what)
{
    static const char *const ops[] = { "short", "bcopy", "zcopy" };
    char op[64];
    long sum = 0, v;

    for (int i = 0; i < 3; i++) {
        snprintf(op, sizeof(op), "iface %s_%s", dir, ops[i]);
        v = ut_counter(stats, op, what);
        sum += (v > 0) ? v : 0;
    }
    return sum;
}

/* The row of the last size the sweep must reach, at the start of a line. */
static int has_row(const char *size)
{
    char want[64];

    snprintf(want, sizeof(want), "\n%s ", size);
    return strstr(out, want) != NULL;
}

static long count(const char *op)
{
    return ut_counter(stats, op, "count");
}

/* Every message of the small sizes (iters + warmup each, both ranks) left
 * its sender's GPU through at least one gdrx copy and reached the
 * receiver's GPU through one. */
static void assert_eager_through_gdrx(long messages)
{
    CU_ASSERT(total("get", "count") >= messages);
    CU_ASSERT(total("put", "count") >= messages);
}

/* Sizes 0..2^log2max, 20 round trips and 2 of warm-up each: every byte
 * either rank sent left its GPU through gdrx and entered the peer's GPU
 * through it, whichever protocol UCX chose per size. */
static void latency_dd(const char *extra, int log2max)
{
    const long round_trips = 22;
    long sent = 2 * round_trips * ((2L << log2max) - 1);
    char args[128], last[32];

    snprintf(args, sizeof(args), "-m 0:%ld -i 20 -x 2 -c D D", 1L << log2max);
    snprintf(last, sizeof(last), "%ld", 1L << log2max);
    CU_ASSERT_EQUAL_FATAL(run("sm,gdrx", extra, "tests/mpi/gdrx_mpi_latency", args), 0);
    CU_ASSERT(has_row("0"));
    CU_ASSERT(has_row(last));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "DEVICE (D) and Receive Buffer on DEVICE (D)"));
    /* sizes 1..1024: 11 sizes, 2 messages a round trip */
    assert_eager_through_gdrx(11L * round_trips * 2);
    CU_ASSERT(total("get", "bytes") >= sent);
    CU_ASSERT(total("put", "bytes") >= sent);
}

/* Default protocols (v1 on 1.13): eager, then rendezvous up to 1 MiB. */
static void test_latency_dd(void)
{
    latency_dd("", 20);
    CU_ASSERT(count("iface get_zcopy") + count("iface put_zcopy") > 0); /* rendezvous */
}

/* UCX's new protocols.  UCX 1.13's own v2 rendezvous put/mtype asserts
 * for device-to-device messages of 512 KiB and more (rndv_put.c:471, a
 * request flag set only after the first copy returns); 1.16 passes. */
static void test_latency_dd_proto_v2(void)
{
    latency_dd("-x UCX_PROTO_ENABLE=y", (UCT_API >= UCT_VERSION(1, 16)) ? 20 : 18);
}

static void test_latency_mixed(void)
{
    CU_ASSERT_EQUAL(run("sm,gdrx", "", "tests/mpi/gdrx_mpi_latency", "-m 0:256K -i 10 -x 1 -c H D"),
                    0);
    CU_ASSERT(has_row("262144"));
    CU_ASSERT(total("put", "count") > 0); /* into rank 1's GPU */
    CU_ASSERT_EQUAL(run("sm,gdrx", "", "tests/mpi/gdrx_mpi_latency", "-m 0:256K -i 10 -x 1 -c D H"),
                    0);
    CU_ASSERT(has_row("262144"));
    CU_ASSERT(total("get", "count") > 0); /* out of rank 0's GPU */
}

/* A CUDA program's churn: both ranks free and allocate their buffers
 * again every 10 round trips (a scratch allocation in between moves the
 * allocator); every chunk's data is checked, so a registration kept for a
 * freed buffer would show as bad bytes or a failed job. */
static void test_latency_churn(void)
{
    CU_ASSERT_EQUAL_FATAL(run("sm,gdrx", "", "tests/mpi/gdrx_mpi_latency",
                              "-m 8:64K -i 40 -x 2 -r 10 D D"), 0);
    CU_ASSERT(has_row("8"));
    CU_ASSERT(has_row("65536"));
    CU_ASSERT(total("get", "count") >= 2L * 40 * 14);
    CU_ASSERT(total("put", "count") >= 2L * 40 * 14);
}

/* A job that delivered every byte can still have gone wrong on the way
 * (an IPC mapping that did not close, a refused registration): no UCX
 * error in the last output.  UCX's cuda_ipc says at start that NVML finds
 * no NVIDIA driver, which machines without a GPU have. */
static void assert_no_ucx_errors(void)
{
    const char *p = out, *eol;
    char line[512];

    while ((p = strstr(p, "UCX  ERROR")) != NULL) {
        eol = strchrnul(p, '\n');
        if (strncmp(p, "UCX  ERROR nvmlInit_v2() failed: Driver Not Loaded",
                    strlen("UCX  ERROR nvmlInit_v2() failed: Driver Not Loaded")) != 0) {
            snprintf(line, sizeof(line), "%.*s", (int)(eol - p), p);
            fprintf(stderr, "    the job said: %s\n", line);
            CU_FAIL("UCX said an error");
        }
        p = eol;
    }
}

/* Issue 28's randomised check (tests/mpi/gdrx_mpi_integrity.c): messages
 * of every size around the protocol thresholds, D/H on each side, odd
 * offsets, guards, buffers freed and allocated again at the same and at
 * other addresses; every byte checked, with UCX's memory-type cache on
 * (its default: gdrx's events keep it) and off. */
static void integrity(const char *extra, long messages, int seed, const char *flags)
{
    char args[64], want[64];

    snprintf(args, sizeof(args), "-n %ld -s %d %s", messages, seed, flags);
    CU_ASSERT_EQUAL(run("sm,gdrx", extra, "tests/mpi/gdrx_mpi_integrity", args), 0);
    snprintf(want, sizeof(want), "integrity: %ld messages, 0 bad", messages);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    CU_ASSERT(total("get", "count") > 0); /* out of a sender's GPU */
    CU_ASSERT(total("put", "count") > 0); /* into a receiver's GPU */
    assert_no_ucx_errors();
}

static void test_integrity(void)
{
    integrity("", 2500, 11, "");
}

/* UCX_TLS unset, "all", "^gdr_copy" and the network path, each with host
 * buffers only (-k HH) and with device ones: every byte checked. */
static void integrity_tls(const char *tls, const char *extra, long messages,
                          int seed)
{
    char args[64], want[64];

    snprintf(args, sizeof(args), "-n %ld -s %d -k HH", messages, seed);
    CU_ASSERT_EQUAL(run(tls, extra, "tests/mpi/gdrx_mpi_integrity", args), 0);
    snprintf(want, sizeof(want), "integrity: %ld messages, 0 bad", messages);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    snprintf(args, sizeof(args), "-n %ld -s %d", messages, seed + 1);
    CU_ASSERT_EQUAL(run(tls, extra, "tests/mpi/gdrx_mpi_integrity", args), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    CU_ASSERT(total("get", "count") > 0);
    CU_ASSERT(total("put", "count") > 0);
    assert_no_ucx_errors();
}

static void test_integrity_tls_unset(void)
{
    integrity_tls(NULL, "", 600, 21);
}

static void test_integrity_tls_all(void)
{
    integrity_tls("all", "", 400, 23);
}

/* The CUDA-enabled UCX of the same release, with cuda_copy, cuda_ipc and
 * gdr_copy over gdrx's libgdrapi, gdrx installed next to them: UCX 1.21
 * and later aborted every rank in MPI_Init when its memory-type endpoint
 * needed three transports (tests/ucx/test_ucp_defaults asserts the lanes). */
static char cuda_libpath[8192];

/* UCX_TLS unset, as sites leave it: cuda_ipc, cuda_copy, gdr_copy and
 * gdrx all loaded.  cuda_ipc maps the peer's allocations; one that the
 * driver placed inside a larger object (small allocations share one) must
 * be imported at its offset, or UCX's copies of it and its close fail
 * (the simulated GPU's IPC did so until it kept the offset). */
static void test_cuda_ucx_integrity_unset(void)
{
    ranks_libpath = cuda_libpath;
    integrity_tls(NULL, "", 600, 35);
}

/* Everything but cuda_ipc: device messages staged by cuda_copy, gdr_copy
 * and gdrx instead. */
static void test_cuda_ucx_integrity_all_but_ipc(void)
{
    ranks_libpath = cuda_libpath;
    integrity_tls("^cuda_ipc", "", 600, 31);
}

static void test_cuda_ucx_integrity_not_gdr_copy(void)
{
    ranks_libpath = cuda_libpath;
    integrity_tls("^gdr_copy", "", 400, 33);
}

static void test_cuda_ucx_integrity_tcp(void)
{
    ranks_libpath = cuda_libpath;
    integrity_tls("tcp,cuda_copy,gdrx", "-x UCX_NET_DEVICES=lo", 300, 35);
}

static void test_integrity_no_memtype_cache(void)
{
    integrity("-x UCX_MEMTYPE_CACHE=n", 1500, 12, "");
}

/* The first device buffer of each rank allocated before MPI_Init (-B), the
 * memory-type cache on: UCX heard no event for it, and it must still be
 * taken for device memory (before gdrx marked such mappings, UCP copied it
 * with the CPU and the rank died). */
static void test_integrity_alloc_before_init(void)
{
    integrity("", 600, 13, "-B -r 200");
}

/* The check itself: a damaged payload byte and guard byte are seen. */
static void test_integrity_sees_damage(void)
{
    CU_ASSERT_NOT_EQUAL(run_mpi("sm,gdrx", "", "tests/mpi/gdrx_mpi_integrity",
                                "-n 40 -s 3 -F 17", 1), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "BAD received message 17:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "in guards)"));
    /* one flipped bit is no earlier message's payload */
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "payload holds unknown content"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "integrity: 40 messages, 1 bad"));
}

/* Issue 43's threads under MPI (tests/mpi/gdrx_mpi_threads.c): 8 threads
 * a rank under MPI_THREAD_MULTIPLE, each with its own tags, buffers and
 * schedule (every direction, sizes around the thresholds, offsets, its
 * buffers freed and allocated again every ~10 messages with cuMemAlloc or
 * cudaMalloc, at the same address or another) while the other threads
 * send and receive; every byte and guard checked on both sides.
 * mpi_yield_when_idle: 16 threads that poll on 2 cores take ~30 times as
 * long without it (a preempted thread holds UCX's worker spinlock);
 * -W 20: a hung thread is named, and the job ended, before the case's
 * timeout. */
#define THREADS_EXTRA "--mca mpi_yield_when_idle 1"
#define THREADS_NO_MT 4 /* gdrx_mpi_threads: MPI_THREAD_MULTIPLE not provided */

static void threads(const char *tls, int nthreads, long per_thread, int seed)
{
    char args[128], want[96];
    long messages = nthreads * per_thread;
    int rc;

    snprintf(args, sizeof(args), "-t %d -n %ld -s %d -W 20", nthreads, per_thread, seed);
    rc = run(tls, THREADS_EXTRA, "tests/mpi/gdrx_mpi_threads", args);
    /* the MPI or UCX here cannot run the check: an environment to fix,
     * never a pass */
    if (last_exit == THREADS_NO_MT)
        fprintf(stderr, "    environment: this Open MPI/UCX does not provide "
                        "MPI_THREAD_MULTIPLE (a UCX built without --enable-mt?)\n");
    CU_ASSERT_NOT_EQUAL(last_exit, THREADS_NO_MT);
    CU_ASSERT_EQUAL(rc, 0);
    snprintf(want, sizeof(want), "rank 0: threads: %ld messages, 0 bad", messages);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    snprintf(want, sizeof(want), "rank 1: threads: %ld messages, 0 bad", messages);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    snprintf(want, sizeof(want), "total: threads: %ld messages, 0 bad", messages);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    CU_ASSERT(total("get", "count") > 0); /* out of a sender's GPU */
    CU_ASSERT(total("put", "count") > 0); /* into a receiver's GPU */
    assert_no_ucx_errors();
}

static void test_threads(void)
{
    threads("sm,gdrx", 8, 300, 41);
}

static void test_threads_tls_unset(void)
{
    threads(NULL, 8, 300, 43);
}

/* The check itself: thread 0's damaged window is seen, named, and fails
 * the job, while the other threads' messages stay good. */
static void test_threads_sees_damage(void)
{
    CU_ASSERT_NOT_EQUAL(run_mpi("sm,gdrx", THREADS_EXTRA, "tests/mpi/gdrx_mpi_threads",
                                "-t 8 -n 40 -s 3 -F 17 -W 20", 1), 0);
    CU_ASSERT_EQUAL(last_exit, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "BAD thread 0 received message 17:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "in guards)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "payload holds unknown content"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "total: threads: 320 messages, 1 bad"));
}

/* Less than MPI_THREAD_MULTIPLE (asked for with -S): "not run" and its own
 * exit status, which threads() counts as a failure, never a pass. */
static void test_threads_not_multiple(void)
{
    CU_ASSERT_NOT_EQUAL(run_mpi("sm,gdrx", "", "tests/mpi/gdrx_mpi_threads", "-S", 1), 0);
    CU_ASSERT_EQUAL(last_exit, THREADS_NO_MT);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "not run: MPI_THREAD_MULTIPLE asked for, the MPI "
                                       "library provides MPI_THREAD_SERIALIZED"));
    CU_ASSERT_PTR_NULL(strstr(out, "total: threads:"));
}

/* Threads next to the CUDA UCX: cuda_copy's own hooks and memory-type
 * cache next to gdrx's events; with and without cuda_ipc.  With a late
 * FREE from gdrx (thread A's cuMemFree returned, thread B's cuMemAlloc got
 * the same address and libucm_cuda raised its ALLOC, then gdrx's FREE of
 * A's range dropped B's entry from UCX's memory-type cache), a rank died
 * of SIGSEGV in ucp_dt_pack or uct_mm_ep_am_short reading B's device
 * buffer as host memory: 5 runs in 6 with -t 8 -n 300.  gdrx now raises
 * every allocation after the FREEs of its range (ucx_plugin/
 * uct_gdrx_events.c); tests/ucx/test_memtype_race forces that
 * interleaving deterministically. */
static void test_cuda_ucx_threads_all_but_ipc(void)
{
    ranks_libpath = cuda_libpath;
    threads("^cuda_ipc", 8, 300, 45);
}

static void test_cuda_ucx_threads_unset(void)
{
    ranks_libpath = cuda_libpath;
    threads(NULL, 8, 300, 49);
}

static void test_cuda_ucx_threads_cuda_copy(void)
{
    ranks_libpath = cuda_libpath;
    threads("sm,cuda_copy,gdrx", 8, 300, 47);
}

/* A window of messages, each in its own slot, every slot checked. */
static void test_bandwidth_dd(void)
{
    CU_ASSERT_EQUAL_FATAL(run("sm,gdrx", "", "tests/mpi/gdrx_mpi_bw", "-m 1:1M -i 4 -x 1 -w 8 -c D D"),
                          0);
    CU_ASSERT(has_row("1"));
    CU_ASSERT(has_row("1048576"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "Bandwidth (MB/s)"));
    CU_ASSERT(total("get", "bytes") >= 4L * 8 * ((2L << 20) - 1)); /* 4 windows of 8 */
    CU_ASSERT(total("put", "bytes") >= 4L * 8 * ((2L << 20) - 1));
}

/* What a node pair without GPUDirect RDMA NICs does: TCP between the
 * ranks (loopback here), gdrx staging through host memory. */
static void test_tcp_staging(void)
{
    CU_ASSERT_EQUAL_FATAL(run("tcp,gdrx", "-x UCX_NET_DEVICES=lo", "tests/mpi/gdrx_mpi_latency",
                              "-m 0:1M -i 10 -x 1 -c D D"), 0);
    CU_ASSERT(has_row("1048576"));
    assert_eager_through_gdrx(11L * 22 * 1);
}

/* Bad options: a clear message and a non-zero exit, no run. */
static void test_bad_options(void)
{
    CU_ASSERT_NOT_EQUAL(run_mpi("sm,gdrx", "", "tests/mpi/gdrx_mpi_latency", "-m 9:3 D D", 1), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "bad -m"));
    CU_ASSERT_NOT_EQUAL(run_mpi("sm,gdrx", "", "tests/mpi/gdrx_mpi_bw", "-w 0 D D", 1), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "bad -w"));
    CU_ASSERT_NOT_EQUAL(run_mpi("sm,gdrx", "", "tests/mpi/gdrx_mpi_latency", "-r 0 D D", 1), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "bad -r"));
    CU_ASSERT_NOT_EQUAL(run_mpi("sm,gdrx", "", "tests/mpi/gdrx_mpi_latency", "D", 1), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "both buffer kinds"));
}

/* The documented deployment with a plugin built for another UCX release:
 * preloaded in every rank, where libucp only arrives with MPI_Init.  Each
 * rank refuses gdrx (one line on stderr), the job runs on the other
 * transports, and no gdrx MD or interface is ever opened (no counters). */
static void test_wrong_version_refused(void)
{
    char want[256];
    const char *first;

    CU_ASSERT_EQUAL_FATAL(run_plugin(UT_PLUGIN_WRONGVER, "sm,self,gdrx", "",
                                     "tests/mpi/gdrx_mpi_latency", "-m 0:4K -i 4 -x 1 -c H H",
                                     0), 0);
    CU_ASSERT(has_row("4096"));
    snprintf(want, sizeof(want), "gdrx: libuct_gdrx was built for UCX 1.12.0 but this process "
             "runs UCX %s; the gdrx transport is not registered", GDRX_UCX_BUILD_VERSION);
    first = strstr(out, want);
    CU_ASSERT_PTR_NOT_NULL(first); /* rank 0 */
    CU_ASSERT(first && strstr(first + 1, want)); /* rank 1 */
    CU_ASSERT_EQUAL(access(stats, F_OK), -1); /* nothing of gdrx ever opened */
}

/* gdrx named but unable to serve (its backend forced to a gdrdrv without
 * the module): the ranks list no gdrx, MPI_Init comes up and host messages
 * run on sm; no gdrx MD is ever opened. */
static void test_forced_backend_job_runs(void)
{
    CU_ASSERT_EQUAL_FATAL(run("sm,gdrx", "-x UCX_GDRX_BACKEND=gdrdrv "
                              "-x GDRX_GDRDRV_PATH=/nonexistent/gdrdrv",
                              "tests/mpi/gdrx_mpi_latency", "-m 0:64K -i 4 -x 1 -c H H"), 0);
    CU_ASSERT(has_row("65536"));
    CU_ASSERT_EQUAL(access(stats, F_OK), -1);
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_latency_dd),
    GDRX_TEST_CASE(test_latency_dd_proto_v2),
    GDRX_TEST_CASE(test_latency_mixed),
    GDRX_TEST_CASE(test_latency_churn),
    GDRX_TEST_CASE(test_bandwidth_dd),
    GDRX_TEST_CASE(test_integrity),
    GDRX_TEST_CASE(test_integrity_tls_unset),
    GDRX_TEST_CASE(test_integrity_tls_all),
    GDRX_TEST_CASE(test_integrity_no_memtype_cache),
    GDRX_TEST_CASE(test_integrity_alloc_before_init),
    GDRX_TEST_CASE(test_integrity_sees_damage),
    GDRX_TEST_CASE(test_threads),
    GDRX_TEST_CASE(test_threads_tls_unset),
    GDRX_TEST_CASE(test_threads_sees_damage),
    GDRX_TEST_CASE(test_threads_not_multiple),
    GDRX_TEST_CASE(test_tcp_staging),
    GDRX_TEST_CASE(test_bad_options),
    GDRX_TEST_CASE(test_wrong_version_refused),
    GDRX_TEST_CASE(test_forced_backend_job_runs),
    GDRX_TEST_END
};

static const struct gdrx_test_case cuda_ucx_cases[] = {
    GDRX_TEST_CASE(test_cuda_ucx_integrity_all_but_ipc),
    GDRX_TEST_CASE(test_cuda_ucx_integrity_unset),
    GDRX_TEST_CASE(test_cuda_ucx_integrity_not_gdr_copy),
    GDRX_TEST_CASE(test_cuda_ucx_integrity_tcp),
    GDRX_TEST_END
};

/* issue 43 §1 (see test_cuda_ucx_threads_all_but_ipc) */
static const struct gdrx_test_case cuda_ucx_threads_cases[] = {
    GDRX_TEST_CASE(test_cuda_ucx_threads_all_but_ipc),
    GDRX_TEST_CASE(test_cuda_ucx_threads_unset),
    GDRX_TEST_CASE(test_cuda_ucx_threads_cuda_copy),
    GDRX_TEST_END
};

static struct gdrx_test_suite suites[] = {
    { "mpi", NULL, NULL, cases },
    GDRX_SUITE_END,
    GDRX_SUITE_END,
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    int rc;

    setenv("GDRX_BACKEND", "dmabuf", 0);
    if (ut_ucx_cuda_libpath(cuda_libpath, sizeof(cuda_libpath))) {
        suites[1] = (struct gdrx_test_suite){ "mpi_cuda_ucx", NULL, NULL, cuda_ucx_cases };
        suites[2] = (struct gdrx_test_suite){ "mpi_cuda_ucx_threads", NULL, NULL,
                                              cuda_ucx_threads_cases };
    } else {
        tc_report_skip("mpi_cuda_ucx", "no CUDA-enabled UCX " GDRX_UCX_BUILD_VERSION
                       " with gdr_copy (config/deps.sh builds one where the CUDA "
                       "toolkit is installed)");
    }
    rc = gdrx_test_main(argc, argv, suites);
    snprintf(stats, sizeof(stats), "/tmp/gdrx-mpi-stats.%d", (int)getpid());
    unlink(stats);
    return rc;
}
