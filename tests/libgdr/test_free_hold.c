/*
 * test_free_hold.c - a CUDA free holds the copies through its pins until
 * they are revoked, forced with the interleaving points (ipoint.h) instead
 * of left to the scheduler: the freeing thread is parked inside the hook,
 * a copy through the pin is started in another thread, and it must wait
 * (not return) for as long as the free is parked, then return -ESTALE
 * without having copied a byte.
 *
 * SPDX-License-Identifier: MIT
 *
 * Two windows (docs/free-interception.md, "Hold, then revoke"):
 * - mem_events.held: the pins are held, the driver has not freed yet;
 * - mem_events.after_driver_free: the driver has freed, the pins are not
 *   revoked yet.  Another thread gets the address again meanwhile (the
 *   sim hands it out again), so a copy that slipped through would read or
 *   write the new owner's memory.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ipoint.h"
#include "parked_call.h"
#include "tcuda.h"

#define KiB 1024u
#define LEN (256 * KiB)
#define PARK_MS 5000u
/* How long a held copy is watched not returning. */
#define WATCH_MS 200

struct copier {
    pthread_t      t;
    gdrx_pin_t     pin;
    void          *cpu;
    int            to_device; /* gdrx_copy_to_mapping, else from */
    unsigned char *buf;       /* LEN bytes */
    int            rc;
    int            done;      /* atomic: the copy returned */
};

static void *copy_thread(void *arg)
{
    struct copier *c = arg;

    c->rc = c->to_device ? gdrx_copy_to_mapping(c->pin, c->cpu, c->buf, LEN)
                         : gdrx_copy_from_mapping(c->pin, c->buf, c->cpu, LEN);
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

    nanosleep(&ts, NULL);
}

/* A free parked at `point` while one copy in each direction is started
 * through its pin; during_park(p) runs while they wait.  Checks that they
 * wait, then return -ESTALE having copied nothing. */
static void free_parked(const char *point, void (*during_park)(CUdeviceptr p))
{
    struct parked_call f = { 0 };
    struct copier c[2] = { { 0 } };
    unsigned char *sentinel = malloc(LEN);
    gdrx_pin_t pin;
    void *cpu;

    if (tc_setup(0))
        return;
    CU_ASSERT_FATAL(sentinel != NULL);
    memset(sentinel, 0xA5, LEN);
    gdrx_t g = tc_open();
    f.p = tc_alloc(LEN);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, f.p, LEN, 0, &pin), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, pin, &cpu), 0);
    tc_fill(f.p, LEN, 1);

    CU_ASSERT_EQUAL_FATAL(parked_call_start(&f, point, PARK_MS), 0);
    for (int i = 0; i < 2; i++) {
        c[i] = (struct copier){ .pin = pin, .cpu = cpu, .to_device = i, .buf = malloc(LEN) };
        CU_ASSERT_FATAL(c[i].buf != NULL);
        memset(c[i].buf, 0xA5, LEN);
        CU_ASSERT_EQUAL_FATAL(pthread_create(&c[i].t, NULL, copy_thread, &c[i]), 0);
    }
    if (during_park)
        during_park(f.p);
    sleep_ms(WATCH_MS);
    /* Held: neither copy may have returned while the free is parked. */
    for (int i = 0; i < 2; i++)
        CU_ASSERT_EQUAL(__atomic_load_n(&c[i].done, __ATOMIC_ACQUIRE), 0);
    CU_ASSERT_EQUAL(ipoint_release(point), 0);
    CU_ASSERT_EQUAL(pthread_join(f.t, NULL), 0);
    CU_ASSERT_EQUAL(f.rc, CUDA_SUCCESS);
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(pthread_join(c[i].t, NULL), 0);
        CU_ASSERT_EQUAL(c[i].rc, -ESTALE);
    }
    /* The read brought back no byte (of the freed memory or its new
     * owner's); the write reached neither (after_reuse checks the owner). */
    CU_ASSERT_EQUAL(memcmp(c[0].buf, sentinel, LEN), 0);
    for (int i = 0; i < 2; i++)
        free(c[i].buf);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    free(sentinel);
}

/* Parked after the hold, before the driver's free: the memory is still
 * CUDA's to give back, yet no copy may start on it (the free may succeed
 * in the next instant). */
static void test_copies_wait_before_driver_free(void)
{
    free_parked("mem_events.held", NULL);
}

static CUdeviceptr reused;

/* While the free is parked after the driver's free: the address is handed
 * out again and filled through CUDA. */
static void reuse_address(CUdeviceptr p)
{
    reused = tc_alloc(LEN);
    if (tsim.set_va_reuse)
        CU_ASSERT_EQUAL(reused, p); /* the sim reuses the address */
    tc_fill(reused, LEN, 2);
}

/* Parked after the driver's free, before the revocation, with the address
 * reused meanwhile: the copies wait, return -ESTALE, and the new owner's
 * bytes are as CUDA wrote them. */
static void test_copies_wait_after_driver_free(void)
{
    reused = 0;
    if (tsim.set_va_reuse && tsim.set_va_reuse(1) != 0)
        CU_FAIL("simcu_set_va_reuse");
    free_parked("mem_events.after_driver_free", reuse_address);
    if (!reused)
        return;
    CU_ASSERT(tc_check(reused, LEN, 2));
    tc_free(reused);
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_copies_wait_before_driver_free),
    GDRX_TEST_CASE(test_copies_wait_after_driver_free),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite suites[] = {
    { "free_hold", NULL, NULL, cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    return tc_main(argc, argv, suites, NULL);
}
