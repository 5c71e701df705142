/*
 * gdrx_mpi_latency.c - two-rank ping-pong latency (osu_latency's method
 * and columns: half the round trip, in µs) over host or device buffers,
 * checking the data received.  Options in mpi_bench.h.
 *
 * SPDX-License-Identifier: MIT
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpi_bench.h"

/* One round trip of `len` bytes, started by rank 0. */
static void round_trip(int rank, struct mb_buf *s, struct mb_buf *r, size_t len)
{
    int peer = !rank;

    if (rank == 0) {
        MPI_Send(mb_buf_ptr(s), (int)len, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
        MPI_Recv(mb_buf_ptr(r), (int)len, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(mb_buf_ptr(r), (int)len, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(mb_buf_ptr(s), (int)len, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
    }
}

/* Fresh pattern to send (seed per rank and iteration), poisoned receive
 * buffer; after the round trip, the check of what arrived. */
static long checked_round_trip(int rank, struct mb_buf *s, struct mb_buf *r, size_t len,
                               uint32_t seed, double *elapsed)
{
    const char *what = rank ? "rank 1 received" : "rank 0 received";

    if (mb_fill(s, len, seed * 2 + (uint32_t)rank) || mb_poison(r, len))
        return -1;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    round_trip(rank, s, r, len);
    *elapsed += MPI_Wtime() - t0;
    return mb_check(r, len, seed * 2 + (uint32_t)!rank, what);
}

int main(int argc, char **argv)
{
    struct mb_opts o;
    struct mb_buf s, r;
    int rank, rc;

    if ((rc = mb_start(&argc, &argv, 0, &o, &s, &r, &rank)) != 0)
        return rc;
    if (rank == 0)
        mb_header("Latency", &o, "Latency (us)");

    for (size_t len = o.min; len <= o.max; len = mb_next_size(len)) {
        double elapsed = 0;
        long bad = 0;

        /* The pattern the last message is checked against. */
        if (mb_fill(&s, len, 2 + (uint32_t)rank) || mb_poison(&r, len))
            bad = -1;
        for (int i = 0; i < o.warmup; i++)
            round_trip(rank, &s, &r, len);
        if (o.check_each) {
            for (int i = 0; i < o.iters && bad >= 0; i++) {
                long b = checked_round_trip(rank, &s, &r, len, 3 + (uint32_t)i, &elapsed);
                bad = b < 0 ? -1 : bad + b;
            }
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < o.iters; i++)
                round_trip(rank, &s, &r, len);
            elapsed = MPI_Wtime() - t0;
            long b = mb_check(&r, len, 2 + (uint32_t)!rank, rank ? "rank 1 received" :
                                                                   "rank 0 received");
            bad = (bad < 0 || b < 0) ? -1 : b;
        }
        if ((rc = mb_verdict(bad, len, argv[0], rank)) != 0)
            break;
        if (rank == 0) {
            printf("%-10zu%20.2f\n", len, elapsed * 1e6 / (2.0 * o.iters));
            fflush(stdout);
        }
    }
    mb_finish(&s, &r);
    return rc;
}
