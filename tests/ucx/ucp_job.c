/*
 * ucp_job.c - a two-rank UCP job as users run one, with whatever UCX and
 * UCX_* settings the environment gives (UCX_TLS unset included): two
 * processes (fork), each its own worker, endpoints over the transports UCP
 * picks, tag messages both ways of random lengths (log-uniform up to -x,
 * past every eager and rendezvous threshold) at random offsets, from and
 * to host or device buffers; device buffers are freed and reallocated now
 * and then.  Every byte of each receive buffer is checked: the message,
 * and guard bytes around it that must stay untouched.
 *
 * SPDX-License-Identifier: MIT
 *
 * Usage: ucp_job [-m host|dev|mix] [-n MESSAGES] [-x MAXLEN] [-s SEED] [-L]
 * -L: each rank gets the local rank and size a launcher gives (Open MPI's
 * OMPI_COMM_WORLD_LOCAL_RANK and _SIZE), as under mpirun.
 * Prints one line per rank, "rank R: N messages, B bad", and for rank 0
 * first "memtype lanes cuda N: tl,tl" (the transports of UCP's
 * memory-type endpoint for CUDA memory, from UCP's internals) and
 * "memtype rma_bw cuda: tl,..." (those of its high-bandwidth lanes, best
 * first), and at the
 * end "ep lanes (limit L) N: tl,..." (its endpoint to the other rank, and
 * the most lanes this UCX allows one).  Exit 0 when
 * both ranks checked every message, 1 on a bad byte, 2 on an error.
 */
#include <cuda.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ucp/api/ucp.h>
#include <ucp/core/ucp_ep.inl>
#include <ucp/core/ucp_worker.h>

#define GUARD  0xA5
#define MAXOFF 64

static struct {
    const char *mode;
    long        msgs;
    size_t      maxlen;
    uint64_t    seed;
    int         launcher;
} opt = { "mix", 200, 1 << 20, 1, 0 };

static int rank;

#define DIE(...) \
    do { \
        fprintf(stderr, "ucp_job: rank %d: ", rank); \
        fprintf(stderr, __VA_ARGS__); \
        fputc('\n', stderr); \
        exit(2); \
    } while (0)

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

/* Message i's parameters, the same in both ranks. */
struct msg {
    int    sender;
    int    dev_src, dev_dst;
    size_t len, soff, doff;
};

static struct msg msg_of(long i)
{
    uint64_t r = mix64(opt.seed * 1000003 + (uint64_t)i);
    struct msg m;
    int bits   = 1;

    while ((((size_t)1) << bits) < opt.maxlen)
        bits++;
    m.sender = (int)(r & 1);
    m.len    = (size_t)1 << ((r >> 1) % (unsigned)(bits + 1));
    m.len   += (r >> 8) % m.len;  /* log-uniform in [1, 2 * 2^k) */
    if (m.len > opt.maxlen)
        m.len = opt.maxlen;
    m.soff    = (r >> 32) % MAXOFF;
    m.doff    = (r >> 40) % MAXOFF;
    m.dev_src = !strcmp(opt.mode, "dev") || (!strcmp(opt.mode, "mix") && ((r >> 48) & 1));
    m.dev_dst = !strcmp(opt.mode, "dev") || (!strcmp(opt.mode, "mix") && ((r >> 49) & 1));
    return m;
}

static unsigned char pattern(long i, size_t k)
{
    return (unsigned char)mix64(((uint64_t)i << 32) ^ k ^ opt.seed) | 1;
}

/* The buffers of one rank: host and device, each of the largest message
 * plus the offsets and a guard. */
static size_t cap;
static unsigned char *host_buf, *scratch;
static CUdeviceptr dev_buf;

static void cu_check(CUresult rc, const char *what)
{
    if (rc != CUDA_SUCCESS)
        DIE("%s failed (%d)", what, (int)rc);
}

static void dev_realloc(void)
{
    if (dev_buf != 0)
        cu_check(cuMemFree(dev_buf), "cuMemFree");
    cu_check(cuMemAlloc(&dev_buf, cap), "cuMemAlloc");
}

static void *buffer(int dev)
{
    return dev ? (void *)(uintptr_t)dev_buf : (void *)host_buf;
}

/* Fill the whole buffer with the guard, or read it back to scratch. */
static void guard_fill(int dev)
{
    if (dev)
        cu_check(cuMemsetD8(dev_buf, GUARD, cap), "cuMemsetD8");
    else
        memset(host_buf, GUARD, cap);
}

static void put_bytes(int dev, size_t off, const unsigned char *src, size_t len)
{
    if (dev)
        cu_check(cuMemcpyHtoD(dev_buf + off, src, len), "cuMemcpyHtoD");
    else
        memcpy(host_buf + off, src, len);
}

static const unsigned char *get_all(int dev)
{
    if (!dev)
        return host_buf;
    cu_check(cuMemcpyDtoH(scratch, dev_buf, cap), "cuMemcpyDtoH");
    return scratch;
}

static ucp_context_h context;
static ucp_worker_h worker;
static ucp_ep_h ep;

static void wait_req(void *req, const char *what)
{
    ucs_status_t st;

    if (UCS_PTR_IS_ERR(req))
        DIE("%s: %s", what, ucs_status_string(UCS_PTR_STATUS(req)));
    if (req == NULL)
        return;
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS)
        ucp_worker_progress(worker);
    ucp_request_free(req);
    if (st != UCS_OK)
        DIE("%s: %s", what, ucs_status_string(st));
}

static void xfer(int fd, void *buf, size_t len, int out)
{
    unsigned char *p = buf;

    while (len > 0) {
        ssize_t n = out ? write(fd, p, len) : read(fd, p, len);
        if (n <= 0)
            DIE("address exchange failed");
        p   += n;
        len -= (size_t)n;
    }
}

/* "WHAT N: tl,tl": the transports of an endpoint's lanes. */
static void print_lanes(const char *what, ucp_ep_h e)
{
    ucp_lane_index_t lane, n = e ? ucp_ep_num_lanes(e) : 0;

    printf("%s %u:", what, (unsigned)n);
    for (lane = 0; lane < n; ++lane) {
        ucp_rsc_index_t rsc = ucp_ep_get_rsc_index(e, lane);
        printf("%s%s", lane ? "," : " ", context->tl_rscs[rsc].tl_rsc.tl_name);
    }
    printf("\n");
    fflush(stdout);
}

/* Which transports UCP's memory-type endpoint for CUDA memory uses, and
 * those of its high-bandwidth lanes (large messages staged through host
 * memory), best first. */
static void print_memtype_lanes(void)
{
    ucp_ep_h mep = worker->mem_type_ep[UCS_MEMORY_TYPE_CUDA];
    int i;

    print_lanes("memtype lanes cuda", mep);
    printf("memtype rma_bw cuda:");
    for (i = 0; (mep != NULL) && (i < UCP_MAX_LANES) &&
                (ucp_ep_config(mep)->key.rma_bw_lanes[i] != UCP_NULL_LANE); ++i) {
        ucp_rsc_index_t rsc = ucp_ep_get_rsc_index(mep,
                                                   ucp_ep_config(mep)->key.rma_bw_lanes[i]);
        printf("%s%s", i ? "," : " ", context->tl_rscs[rsc].tl_rsc.tl_name);
    }
    printf("\n");
    fflush(stdout);
}

static void setup(int rfd, int wfd)
{
    ucp_params_t params           = {0};
    ucp_worker_params_t wparams   = {0};
    ucp_ep_params_t eparams       = {0};
    ucp_address_t *addr, *peer;
    size_t len, peer_len;
    CUcontext ctx;
    ucs_status_t st;

    cu_check(cuInit(0), "cuInit");
    cu_check(cuDevicePrimaryCtxRetain(&ctx, 0), "cuDevicePrimaryCtxRetain");
    cu_check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    cap      = opt.maxlen + 2 * MAXOFF;
    host_buf = malloc(cap);
    scratch  = malloc(cap);
    if (host_buf == NULL || scratch == NULL)
        DIE("out of memory");
    dev_realloc();

    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG;
    st = ucp_init(&params, NULL, &context);
    if (st != UCS_OK)
        DIE("ucp_init: %s", ucs_status_string(st));
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    st = ucp_worker_create(context, &wparams, &worker);
    if (st != UCS_OK)
        DIE("ucp_worker_create: %s", ucs_status_string(st));
    if (rank == 0)
        print_memtype_lanes();
    st = ucp_worker_get_address(worker, &addr, &len);
    if (st != UCS_OK)
        DIE("ucp_worker_get_address: %s", ucs_status_string(st));
    xfer(wfd, &len, sizeof(len), 1);
    xfer(wfd, addr, len, 1);
    ucp_worker_release_address(worker, addr);
    xfer(rfd, &peer_len, sizeof(peer_len), 0);
    peer = malloc(peer_len);
    if (peer == NULL)
        DIE("out of memory");
    xfer(rfd, peer, peer_len, 0);
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = peer;
    st = ucp_ep_create(worker, &eparams, &ep);
    if (st != UCS_OK)
        DIE("ucp_ep_create: %s", ucs_status_string(st));
    free(peer);
}

/* Both ranks finish their outstanding work before either closes. */
static void barrier(void)
{
    ucp_request_param_t prm = {0};
    char x = 0;

    wait_req(ucp_tag_send_nbx(ep, &x, 1, (ucp_tag_t)-1, &prm), "barrier send");
    wait_req(ucp_tag_recv_nbx(worker, &x, 1, (ucp_tag_t)-1, (ucp_tag_t)-1, &prm),
             "barrier recv");
}

static long run(void)
{
    ucp_request_param_t prm = {0};
    unsigned char *src      = malloc(opt.maxlen);
    long bad                = 0;

    if (src == NULL)
        DIE("out of memory");
    for (long i = 0; i < opt.msgs; ++i) {
        struct msg m = msg_of(i);

        if ((mix64((uint64_t)i ^ (uint64_t)rank << 20) & 7) == 0)
            dev_realloc(); /* the old address may come back */
        if (m.sender == rank) {
            for (size_t k = 0; k < m.len; ++k)
                src[k] = pattern(i, k);
            put_bytes(m.dev_src, m.soff, src, m.len);
            wait_req(ucp_tag_send_nbx(ep, (char *)buffer(m.dev_src) + m.soff,
                                      m.len, (ucp_tag_t)i, &prm), "send");
        } else {
            guard_fill(m.dev_dst);
            wait_req(ucp_tag_recv_nbx(worker, (char *)buffer(m.dev_dst) + m.doff,
                                      m.len, (ucp_tag_t)i, (ucp_tag_t)-1, &prm),
                     "recv");
            const unsigned char *got = get_all(m.dev_dst);
            long wrong = 0;
            for (size_t k = 0; k < cap; ++k) {
                int in = k >= m.doff && k < m.doff + m.len;
                wrong += got[k] != (in ? pattern(i, k - m.doff) : GUARD);
            }
            if (wrong) {
                fprintf(stderr, "ucp_job: rank %d: message %ld (%zu bytes, %s to %s): "
                        "%ld bad bytes\n", rank, i, m.len, m.dev_src ? "dev" : "host",
                        m.dev_dst ? "dev" : "host", wrong);
                bad++;
            }
        }
    }
    barrier();
    free(src);
    return bad;
}

int main(int argc, char **argv)
{
    int a[2], b[2], c, status = 0;
    pid_t child;
    long bad;

    while ((c = getopt(argc, argv, "m:n:x:s:L")) != -1) {
        switch (c) {
        case 'm': opt.mode = optarg; break;
        case 'n': opt.msgs = atol(optarg); break;
        case 'x': opt.maxlen = (size_t)atol(optarg); break;
        case 's': opt.seed = (uint64_t)atoll(optarg); break;
        case 'L': opt.launcher = 1; break;
        default:
            fprintf(stderr, "usage: ucp_job [-m host|dev|mix] [-n MESSAGES] "
                    "[-x MAXLEN] [-s SEED] [-L]\n");
            return 2;
        }
    }
    if (strcmp(opt.mode, "host") && strcmp(opt.mode, "dev") && strcmp(opt.mode, "mix")) {
        fprintf(stderr, "ucp_job: -m takes host, dev or mix\n");
        return 2;
    }
    if (opt.msgs < 1 || opt.maxlen < 1) {
        fprintf(stderr, "ucp_job: -n and -x must be positive\n");
        return 2;
    }
    if (pipe(a) || pipe(b))
        return 2;
    fflush(stdout);
    child = fork();
    if (child < 0)
        return 2;
    rank = child == 0;
    if (opt.launcher) {
        setenv("OMPI_COMM_WORLD_LOCAL_RANK", rank ? "1" : "0", 1);
        setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
    }
    if (rank == 0)
        setup(b[0], a[1]);
    else
        setup(a[0], b[1]);
    bad = run();
    if (rank == 0) {
        char what[64];

        /* UCP_MAX_LANES: what this UCX allows one endpoint */
        snprintf(what, sizeof(what), "ep lanes (limit %d)", UCP_MAX_LANES);
        print_lanes(what, ep);
    }
    ucp_ep_destroy(ep);
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    printf("rank %d: %ld messages, %ld bad\n", rank, opt.msgs, bad);
    fflush(stdout);
    if (rank == 1)
        _exit(bad ? 1 : 0);
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status))
        return 2;
    return bad ? 1 : WEXITSTATUS(status);
}
