/*
 * test_unsubscribe.c - unsubscribe waits for running callbacks, refuses
 * to run inside one, and many threads free concurrently.
 *
 * SPDX-License-Identifier: MIT
 */
#include "test_hooks.h"

#include <errno.h>
#include <stdatomic.h>
#include <time.h>

#include "test_events.h"

static atomic_int cb_entered, cb_release, cb_finished, unsub_returned, finished_at_return;
static gdrx_mem_sub_t blocking_sub;

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static void blocking_cb(const struct gdrx_mem_event *ev, void *arg)
{
    (void)ev; (void)arg;
    atomic_store(&cb_entered, 1);
    while (!atomic_load(&cb_release))
        sleep_ms(1);
    atomic_store(&cb_finished, 1);
}

static void *freer(void *arg)
{
    (void)arg;
    ev_cuda_setup();
    CU_ASSERT_EQUAL(cuMemFree(ev_alloc(4096)), CUDA_SUCCESS);
    return NULL;
}

static void *unsubscriber(void *arg)
{
    (void)arg;
    CU_ASSERT_EQUAL(gdrx_mem_events_unsubscribe(blocking_sub), 0);
    atomic_store(&finished_at_return, atomic_load(&cb_finished));
    atomic_store(&unsub_returned, 1);
    return NULL;
}

static void test_unsubscribe_waits(void)
{
    pthread_t t1, t2;

    ev_cuda_setup();
    CU_ASSERT_EQUAL_FATAL(gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE, blocking_cb, NULL,
                                                    &blocking_sub), 0);
    CU_ASSERT_FATAL(pthread_create(&t1, NULL, freer, NULL) == 0);
    while (!atomic_load(&cb_entered))
        sleep_ms(1);
    CU_ASSERT_FATAL(pthread_create(&t2, NULL, unsubscriber, NULL) == 0);
    sleep_ms(50);
    CU_ASSERT_EQUAL(atomic_load(&unsub_returned), 0); /* still waiting for the callback */
    atomic_store(&cb_release, 1);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    CU_ASSERT_EQUAL(atomic_load(&unsub_returned), 1);
    CU_ASSERT_EQUAL(atomic_load(&finished_at_return), 1);
}

static int inner_rc = 1;
static gdrx_mem_sub_t self_sub;

static void unsubscribing_cb(const struct gdrx_mem_event *ev, void *arg)
{
    (void)ev; (void)arg;
    inner_rc = gdrx_mem_events_unsubscribe(self_sub);
}

static void test_unsubscribe_inside_callback(void)
{
    ev_cuda_setup();
    CU_ASSERT_EQUAL_FATAL(gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE, unsubscribing_cb, NULL,
                                                    &self_sub), 0);
    CU_ASSERT_EQUAL(cuMemFree(ev_alloc(4096)), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(inner_rc, -EDEADLK);
    CU_ASSERT_EQUAL(gdrx_mem_events_unsubscribe(self_sub), 0); /* still live: it failed */
}

/* Two subscriptions both see each event; ending one leaves the other. */
static void test_two_subscribers(void)
{
    static struct event_log other = { .lock = PTHREAD_MUTEX_INITIALIZER };
    gdrx_mem_sub_t a = ev_subscribe(), b;

    CU_ASSERT_EQUAL_FATAL(gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE, ev_record, &other, &b), 0);
    CU_ASSERT_NOT_EQUAL(a.id, b.id);
    ev_cuda_setup();
    CU_ASSERT_EQUAL(cuMemFree(ev_alloc(4096)), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(ev_log.n, 2);
    CU_ASSERT_EQUAL(other.n, 1);
    CU_ASSERT_EQUAL(gdrx_mem_events_unsubscribe(a), 0);
    CU_ASSERT_EQUAL(cuMemFree(ev_alloc(4096)), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(ev_log.n, 2);
    CU_ASSERT_EQUAL(other.n, 2);
}

#define N_THREADS 8
#define N_FREES 200

static void *free_many(void *arg)
{
    (void)arg;
    ev_cuda_setup();
    for (int i = 0; i < N_FREES; i++)
        if (cuMemFree(ev_alloc(4096)) != CUDA_SUCCESS)
            CU_FAIL("free");
    return NULL;
}

static atomic_int frees_seen;

static void count_cb(const struct gdrx_mem_event *ev, void *arg)
{
    (void)arg;
    if (ev->type == GDRX_MEM_EVENT_FREE)
        atomic_fetch_add(&frees_seen, 1);
}

static void test_threads(void)
{
    pthread_t t[N_THREADS];
    gdrx_mem_sub_t sub;

    ev_cuda_setup();
    CU_ASSERT_EQUAL_FATAL(gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE, count_cb, NULL, &sub), 0);
    for (int i = 0; i < N_THREADS; i++)
        CU_ASSERT_FATAL(pthread_create(&t[i], NULL, free_many, NULL) == 0);
    for (int i = 0; i < N_THREADS; i++)
        pthread_join(t[i], NULL);
    CU_ASSERT_EQUAL(atomic_load(&frees_seen), N_THREADS * N_FREES);
    CU_ASSERT_EQUAL(gdrx_mem_events_unsubscribe(sub), 0);
}

const struct gdrx_test_case unsubscribe_cases[] = {
    GDRX_TEST_CASE(test_unsubscribe_waits),
    GDRX_TEST_CASE(test_unsubscribe_inside_callback),
    GDRX_TEST_CASE(test_two_subscribers),
    GDRX_TEST_CASE(test_threads),
    GDRX_TEST_END
};
