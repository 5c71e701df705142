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
 * memory-type endpoint for CUDA memory) and "memtype rma_bw cuda: tl,..."
 * (those of its high-bandwidth lanes, best first), and at the end "ep
 * lanes (limit L) N: tl,..." (its endpoint to the other rank, and the most
 * lanes this UCX allows one).  The lanes come from what UCP prints through
 * its public API, not from its structures: see parse_lanes.  Where that
 * text has no lanes this program can read, "memtype lanes unknown: ..." or
 * "ep lanes unknown: ..." instead, and exit 2.  Exit 0 when both ranks
 * checked every message, 1 on a bad byte, 2 on an error.
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
#include <ucp/core/ucp_types.h> /* UCP_MAX_LANES only: a constant, no layout */
#include <ucs/memory/memory_type.h>

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

/* An endpoint's lanes as UCP prints them: ucp_ep_print_info, and
 * ucp_worker_print_info for the worker's memory-type endpoints, each of
 * those under "# UCP endpoint for DESC" (ucs_memory_type_descs).  One line
 * a lane, the same from 1.13 to 1.23 (ucp_ep_config_lane_info_str):
 *   "#                 lane[1]:  5:gdrx/gdrx0.0 md[3] -> ... rma_bw#0 am"
 * and "lane[N]: cm NAME" for a connection manager's.  UCP reads its own
 * structures there, as the library it is.  This program read them through
 * a UCX source tree's internal headers, and read garbage wherever the tree
 * was not the library's exact version (sid's 1.23.0~rc1 package next to a
 * later commit of the 1.23 line: mem_type_ep 40 bytes apart); reading
 * nothing of them, it has no pointer of UCP's to check either. */
#define LANES_MAX 64

struct lanes {
    unsigned n;
    char     tl[LANES_MAX][32];
    int      bw[LANES_MAX]; /* the lane's rma_bw priority (0 best), -1: none */
};

/* The first run of lane lines in [p, end): 0, or -1 where a line that
 * names a lane is not what UCP prints (nothing is guessed then). */
static int parse_lanes(const char *p, const char *end, struct lanes *l)
{
    l->n = 0;
    while (p < end) {
        size_t len = strcspn(p, "\n");
        char line[512];
        const char *q, *bw;
        unsigned idx, rsc;

        snprintf(line, sizeof(line), "%.*s", (int)len, p);
        p += len + (p[len] == '\n');
        q = line + strspn(line, "# ");
        if (strncmp(q, "lane[", 5) != 0) {
            if (l->n > 0)
                break; /* the lanes end; protocol tables may follow */
            continue;
        }
        if (l->n == LANES_MAX || sscanf(q, "lane[%u]:", &idx) != 1 || idx != l->n)
            return -1;
        q = strchr(q, ':') + 1;
        if (sscanf(q, " %u:%31[^/ ]/", &rsc, l->tl[l->n]) != 2) {
            if (strncmp(q + strspn(q, " "), "cm ", 3) != 0)
                return -1;
            strcpy(l->tl[l->n], "cm");
        }
        bw = strstr(q, " rma_bw#");
        l->bw[l->n++] = bw ? atoi(bw + 8) : -1;
    }
    return 0;
}

/* What UCP prints of endpoint `e`, or with NULL of the worker and its
 * memory-type endpoints; NUL-terminated, for free(). */
static char *printed(ucp_ep_h e)
{
    char *text  = NULL;
    size_t size = 0;
    FILE *f     = open_memstream(&text, &size);

    if (f == NULL)
        DIE("open_memstream failed");
    if (e != NULL)
        ucp_ep_print_info(e, f);
    else
        ucp_worker_print_info(worker, f);
    if (fclose(f) != 0 || text == NULL)
        DIE("capturing UCP's print failed");
    return text;
}

/* Set: a lane report was unknown; the job still runs, and exits 2. */
static int lanes_unknown;

/* "WHAT N: tl,tl", with `bw` "BW: tl,..." (the rma_bw lanes, best first),
 * or with l NULL "WHAT unknown: ...". */
static void print_lanes(const char *what, const struct lanes *l, const char *bw)
{
    unsigned i, prio, k = 0;

    if (l == NULL) {
        printf("%s unknown: UCP printed no lanes this program can read "
               "(ucp_worker_print_info, ucp_ep_print_info)\n", what);
        fflush(stdout);
        lanes_unknown = 1;
        return;
    }
    printf("%s %u:", what, l->n);
    for (i = 0; i < l->n; ++i)
        printf("%s%s", i ? "," : " ", l->tl[i]);
    printf("\n");
    if (bw != NULL) {
        printf("%s:", bw);
        for (prio = 0; prio < l->n; ++prio)
            for (i = 0; i < l->n; ++i)
                if (l->bw[i] == (int)prio)
                    printf("%s%s", k++ ? "," : " ", l->tl[i]);
        printf("\n");
    }
    fflush(stdout);
}

/* Which transports UCP's memory-type endpoint for CUDA memory uses, and
 * those of its high-bandwidth lanes (large messages staged through host
 * memory), best first.  No such endpoint: 0 lanes. */
static void print_memtype_lanes(void)
{
    char *text = printed(NULL), head[128];
    struct lanes l = { 0 };
    const char *p, *end;
    int ok;

    snprintf(head, sizeof(head), "# UCP endpoint for %s\n",
             ucs_memory_type_descs[UCS_MEMORY_TYPE_CUDA]);
    ok = strstr(text, "# UCP worker ") != NULL;
    p  = strstr(text, head);
    if (ok && p != NULL) {
        p  += strlen(head);
        end = strstr(p, "# UCP endpoint ");
        ok  = parse_lanes(p, end ? end : p + strlen(p), &l) == 0 && l.n > 0;
    }
    if (ok)
        print_lanes("memtype lanes cuda", &l, "memtype rma_bw cuda");
    else
        print_lanes("memtype lanes", NULL, NULL);
    free(text);
}

/* "ep lanes (limit L) N: tl,...": the endpoint to the other rank. */
static void print_ep_lanes(void)
{
    char *text = printed(ep), what[64];
    struct lanes l;

    /* UCP_MAX_LANES: what this UCX allows one endpoint */
    snprintf(what, sizeof(what), "ep lanes (limit %d)", UCP_MAX_LANES);
    if (parse_lanes(text, text + strlen(text), &l) == 0 && l.n > 0)
        print_lanes(what, &l, NULL);
    else
        print_lanes("ep lanes", NULL, NULL);
    free(text);
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
    if (rank == 0)
        print_ep_lanes();
    ucp_ep_destroy(ep);
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    printf("rank %d: %ld messages, %ld bad\n", rank, opt.msgs, bad);
    fflush(stdout);
    if (rank == 1)
        _exit(bad ? 1 : 0);
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status))
        return 2;
    return bad ? 1 : lanes_unknown ? 2 : WEXITSTATUS(status);
}
