/*
 * gdrx_mpi_bw.c - two-rank streaming bandwidth (osu_bw's method and
 * columns: rank 0 posts a window of non-blocking sends, rank 1 as many
 * receives and then a 4-byte acknowledgement; MB/s with MB = 10^6 bytes)
 * over host or device buffers, checking the data received.  With -c each
 * message of a window lands in its own slot and every slot is checked.
 *
 * SPDX-License-Identifier: MIT
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpi_bench.h"

static MPI_Request reqs[1024];

/* One window of `len`-byte messages; slot_stride 0: all into one buffer. */
static void window(int rank, const struct mb_opts *o, struct mb_buf *s, struct mb_buf *r,
                   size_t len, size_t slot_stride)
{
    char ack[4] = { 0 };

    if (rank == 0) {
        for (int w = 0; w < o->window; w++)
            MPI_Isend(mb_buf_ptr(s), (int)len, MPI_CHAR, 1, 100, MPI_COMM_WORLD, &reqs[w]);
        MPI_Waitall(o->window, reqs, MPI_STATUSES_IGNORE);
        MPI_Recv(ack, 4, MPI_CHAR, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        for (int w = 0; w < o->window; w++)
            MPI_Irecv((char *)mb_buf_ptr(r) + (size_t)w * slot_stride, (int)len, MPI_CHAR, 0, 100,
                      MPI_COMM_WORLD, &reqs[w]);
        MPI_Waitall(o->window, reqs, MPI_STATUSES_IGNORE);
        MPI_Send(ack, 4, MPI_CHAR, 0, 101, MPI_COMM_WORLD);
    }
}

/* Rank 1: every slot of the window holds the pattern of `seed`. */
static long check_slots(struct mb_buf *r, const struct mb_opts *o, size_t len, size_t stride,
                        uint32_t seed)
{
    long bad = 0;

    for (int w = 0; w < (stride ? o->window : 1) && bad >= 0; w++) {
        struct mb_buf slot = *r;
        slot.host = (char *)r->host + (size_t)w * stride;
        slot.dptr = r->dptr ? r->dptr + (size_t)w * stride : 0;
        long b = mb_check(&slot, len, seed, "rank 1 received");
        bad = b < 0 ? -1 : bad + b;
    }
    return bad;
}

int main(int argc, char **argv)
{
    struct mb_opts o;
    struct mb_buf s, r;
    int rank, rc;

    if ((rc = mb_start(&argc, &argv, 1, &o, &s, &r, &rank)) != 0)
        return rc;
    if (rank == 0)
        mb_header("Bandwidth", &o, "Bandwidth (MB/s)");

    for (size_t len = o.min; len <= o.max; len = mb_next_size(len)) {
        size_t stride = o.check_each ? len : 0;
        double elapsed = 0;
        long bad = 0;

        for (int i = 0; i < o.warmup; i++)
            window(rank, &o, &s, &r, len, 0);
        for (int i = 0; i < o.iters; i++) {
            /* -c: a fresh pattern into poisoned slots every window; else the
             * last window only (its time counts like the others') */
            int checked = o.check_each || (i == o.iters - 1);
            uint32_t seed = 11 + (uint32_t)i;
            if (checked &&
                ((rank == 0 && mb_fill(&s, len, seed)) ||
                 (rank == 1 && mb_poison(&r, stride ? len * (size_t)o.window : len))))
                mb_abort(rank, "filling the buffers");
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            window(rank, &o, &s, &r, len, stride);
            elapsed += MPI_Wtime() - t0;
            if (rank == 1 && checked) {
                long b = check_slots(&r, &o, len, stride, seed);
                if (b < 0)
                    mb_abort(rank, "reading the receive buffer");
                bad += b;
            }
        }
        if ((rc = mb_verdict(bad, len, argv[0], rank)) != 0)
            break;
        if (rank == 0) {
            printf("%-10zu%20.2f\n", len, len * (double)o.window * o.iters / elapsed / 1e6);
            fflush(stdout);
        }
    }
    mb_finish(&s, &r);
    return rc;
}
