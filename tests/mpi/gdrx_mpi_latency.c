/*
 * gdrx_mpi_latency.c - two-rank ping-pong latency (osu_latency's method
 * and columns: half the round trip, in µs) over host or device buffers,
 * checking the data received.  Options in mpi_bench.h; -r N reallocates
 * the buffers every N round trips (untimed), to show that a program's
 * allocation churn does not slow the messages after it.
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

static const char *const received[2] = { "rank 0 received", "rank 1 received" };

/* This rank sends the pattern of `seed` (per rank) into a poisoned peer
 * buffer; a rank whose GPU copies fail ends the job (mb_abort). */
static void prepare(int rank, struct mb_buf *s, struct mb_buf *r, size_t len, uint32_t seed)
{
    if (mb_fill(s, len, seed * 2 + (uint32_t)rank) || mb_poison(r, len))
        mb_abort(rank, "filling the buffers");
}

/* What arrived in r: bad bytes against the peer's pattern of `seed`. */
static long check(int rank, struct mb_buf *r, size_t len, uint32_t seed)
{
    long bad = mb_check(r, len, seed * 2 + (uint32_t)!rank, received[rank]);

    if (bad < 0)
        mb_abort(rank, "reading the receive buffer");
    return bad;
}

/* One timed round trip (the barrier before it is not timed). */
static double timed_round_trip(int rank, struct mb_buf *s, struct mb_buf *r, size_t len)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    round_trip(rank, s, r, len);
    return MPI_Wtime() - t0;
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

        prepare(rank, &s, &r, len, 2);
        for (int i = 0; i < o.warmup; i++)
            round_trip(rank, &s, &r, len);
        if (o.realloc_every) {
            /* chunks of N timed round trips, new buffers between them; the
             * first round trip on new buffers (registration) is timed on
             * its own and reported apart */
            double first = 0;
            int chunks = 0;
            for (int i = 0; i < o.iters; i += o.realloc_every, chunks++) {
                int n = o.iters - i < o.realloc_every ? o.iters - i : o.realloc_every;
                if (i && (mb_buf_renew(&s) || mb_buf_renew(&r)))
                    mb_abort(rank, "reallocating the buffers");
                prepare(rank, &s, &r, len, 4 + (uint32_t)i);
                first += timed_round_trip(rank, &s, &r, len);
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                for (int k = 1; k < n; k++)
                    round_trip(rank, &s, &r, len);
                elapsed += MPI_Wtime() - t0;
                bad += check(rank, &r, len, 4 + (uint32_t)i);
            }
            if (rank == 0)
                printf("# %zu B: first round trip on new buffers %.2f us (half, mean of %d)\n",
                       len, first * 1e6 / (2.0 * chunks), chunks);
            elapsed *= (double)o.iters / (o.iters - chunks > 0 ? o.iters - chunks : 1);
        } else if (o.check_each) {
            for (int i = 0; i < o.iters; i++) {
                prepare(rank, &s, &r, len, 3 + (uint32_t)i);
                elapsed += timed_round_trip(rank, &s, &r, len);
                bad += check(rank, &r, len, 3 + (uint32_t)i);
            }
        } else {
            /* all but the last back to back; the last into a poisoned buffer */
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < o.iters - 1; i++)
                round_trip(rank, &s, &r, len);
            elapsed = MPI_Wtime() - t0;
            prepare(rank, &s, &r, len, 1);
            elapsed += timed_round_trip(rank, &s, &r, len);
            bad = check(rank, &r, len, 1);
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
