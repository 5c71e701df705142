/*
 * test_core_unit.c - libgdrx's core, white-box, on a fake CUDA driver and a
 * fake backend (core_fake.h): the pin state machine and revocation, the
 * copy fast path's handle and sequence checks, and the free hook's index.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core_fake.h"
#include "gdrx_test.h"
#include "pin_index.h"
#include "range.h"

#define KiB 1024u
#define MiB (1024u * 1024u)
#define ALLOC_A 0x7000000000ull
#define ALLOC_B 0x7100000000ull

/* Entries in the free hook's index: every range there overlaps the whole
 * address space. */
static size_t index_size(void)
{
    return gdrx_pin_index_find(0, UINT64_MAX, NULL, 0);
}

static gdrx_pin_t handle(uint64_t id)
{
    return (gdrx_pin_t){ .id = id };
}

static int state_of(struct gdrx_ctx *ctx, uint64_t id)
{
    struct gdrx_pin *pin = fake_locked(ctx, id);
    if (!pin)
        return -1;
    int s = (int)pin->state;
    gdrx_mutex_unlock(&pin->lock, GDRX_LOCK_PIN);
    return s;
}

static int unmap(struct gdrx_ctx *ctx, uint64_t id)
{
    struct gdrx_pin *pin = fake_locked(ctx, id);
    if (!pin)
        return -1;
    int rc = gdrx_pin_on_unmap(pin);
    gdrx_mutex_unlock(&pin->lock, GDRX_LOCK_PIN);
    return rc;
}

static int map(struct gdrx_ctx *ctx, uint64_t id, void **cpu)
{
    struct gdrx_pin *pin = fake_locked(ctx, id);
    if (!pin)
        return -1;
    int rc = gdrx_pin_map_locked(pin, cpu);
    gdrx_mutex_unlock(&pin->lock, GDRX_LOCK_PIN);
    return rc;
}

static int unpin(struct gdrx_ctx *ctx, uint64_t id)
{
    struct gdrx_pin *pin = fake_locked(ctx, id);
    return pin ? gdrx_pin_on_unpin(pin) : -1;
}

/* CUDA freed [base, +size): what a hooked free does around the driver's
 * call, when the driver said yes. */
static void memory_freed(uint64_t base, size_t size)
{
    gdrx_core_release_end(gdrx_core_release_begin(base, size, -1, NULL), 1, NULL);
}

static void touch(void *arg)
{
    *(volatile char *)arg = 1;
}

/* Unpin, pin again into the same slot at the same CPU address: the old
 * handle must not reach the new pin. */
static void test_old_handle_cannot_reach_reused_slot(void)
{
    struct gdrx_ctx ctx;
    uint64_t old_id, new_id;
    void *cpu_old, *cpu_new;
    char buf[8] = "abcdefg", seen[8];

    fake_ctx_init(&ctx);
    fake_alloc(ALLOC_A, 2 * MiB);
    fake_pin_map(&ctx, ALLOC_A, 64 * KiB, &old_id, &cpu_old);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(handle(old_id), cpu_old, buf, 8), 0);
    CU_ASSERT_EQUAL(unpin(&ctx, old_id), 0);

    fk.next_map_at = cpu_old;
    fake_pin_map(&ctx, ALLOC_A, 64 * KiB, &new_id, &cpu_new);
    CU_ASSERT_EQUAL_FATAL(cpu_new, cpu_old);
    CU_ASSERT_EQUAL_FATAL(new_id & GDRX_HT_INDEX_MASK, old_id & GDRX_HT_INDEX_MASK);
    CU_ASSERT_NOT_EQUAL(new_id, old_id);
    memset(cpu_new, 'n', 8);
    int copies = fk.copies;
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(handle(old_id), cpu_new, buf, 8), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(handle(old_id), seen, cpu_new, 8), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(handle(old_id), cpu_new, buf, 0), -EINVAL);
    CU_ASSERT_EQUAL(fk.copies, copies);
    CU_ASSERT_EQUAL(memcmp(cpu_new, "nnnnnnnn", 8), 0);
    /* the new handle works */
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(handle(new_id), cpu_new, buf, 8), 0);
    CU_ASSERT_EQUAL(memcmp(cpu_new, buf, 8), 0);
    CU_ASSERT_EQUAL(unpin(&ctx, new_id), 0);
    fake_ctx_fini(&ctx);
}

/* Every transition of the table in pin_state.c that a caller can reach. */
static void test_states_and_errors(void)
{
    struct gdrx_ctx ctx;
    uint64_t id;
    void *cpu, *again;
    char buf[16] = { 0 };

    fake_ctx_init(&ctx);
    fake_alloc(ALLOC_A, 2 * MiB);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin_create(&ctx, ALLOC_A + 100, 1000, 0, &id), 0);
    CU_ASSERT_EQUAL(state_of(&ctx, id), GDRX_PIN_PINNED);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(handle(id), buf, buf, 1), -EINVAL);
    CU_ASSERT_EQUAL(unmap(&ctx, id), -EINVAL);
    CU_ASSERT_EQUAL(map(&ctx, id, &cpu), 0);
    CU_ASSERT_EQUAL(state_of(&ctx, id), GDRX_PIN_MAPPED);
    CU_ASSERT_EQUAL(map(&ctx, id, &again), -EEXIST);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(handle(id), cpu, buf, 16), 0);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(handle(id), (char *)cpu + 990, buf, 11), -ERANGE);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(handle(id), (char *)cpu - 1, buf, 1), -ERANGE);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(handle(id), cpu, NULL, 1), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(handle(id), cpu, NULL, 0), 0);
    CU_ASSERT_EQUAL(unmap(&ctx, id), 0);
    CU_ASSERT_EQUAL(state_of(&ctx, id), GDRX_PIN_PINNED);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(handle(id), cpu, buf, 1), -EINVAL);
    CU_ASSERT_EQUAL(fk.unmaps, 1);
    /* freed while not mapped: REVOKED, the backend pin released at once */
    memory_freed(ALLOC_A, 2 * MiB);
    CU_ASSERT_EQUAL(state_of(&ctx, id), GDRX_PIN_REVOKED);
    CU_ASSERT_EQUAL(fk.unpins, 1);
    CU_ASSERT_EQUAL(map(&ctx, id, &cpu), -ESTALE);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(handle(id), cpu, buf, 1), -ESTALE);
    CU_ASSERT_EQUAL(unmap(&ctx, id), -EINVAL);
    CU_ASSERT_EQUAL(unpin(&ctx, id), 0);
    CU_ASSERT_EQUAL(fk.unpins, 1); /* not twice */
    CU_ASSERT_EQUAL(index_size(), 0);
    fake_ctx_fini(&ctx);
}

/* Freed while mapped: our replacement mapping holds the range until unmap,
 * and an access through it raises SIGBUS (gdrcopy's signal after a free);
 * gdrx_map says -ESTALE (not -EEXIST) although the range is still held. */
static void test_revoke_mapped(void)
{
    struct gdrx_ctx ctx;
    uint64_t id;
    void *cpu, *again;
    char buf[8] = { 0 };

    fake_ctx_init(&ctx);
    fake_alloc(ALLOC_A, 2 * MiB);
    fake_pin_map(&ctx, ALLOC_A, 64 * KiB, &id, &cpu);
    memory_freed(ALLOC_A, 2 * MiB);
    CU_ASSERT_EQUAL(state_of(&ctx, id), GDRX_PIN_REVOKED_MAPPED);
    CU_ASSERT_EQUAL(fk.unpins, 1);
    CU_ASSERT_EQUAL(fk.unmaps, 0); /* replaced, not unmapped */
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(handle(id), cpu, buf, 8), -ESTALE);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(handle(id), buf, cpu, 8), -ESTALE);
    CU_ASSERT_EQUAL(map(&ctx, id, &again), -ESTALE);
    CU_ASSERT(fake_is_mapped(cpu, 64 * KiB));
    CU_ASSERT_EQUAL(gdrx_test_signal_here(touch, cpu), SIGBUS);
    CU_ASSERT_EQUAL(unmap(&ctx, id), 0);
    CU_ASSERT(!fake_is_mapped(cpu, 64 * KiB));
    CU_ASSERT_EQUAL(unmap(&ctx, id), -EINVAL);
    CU_ASSERT_EQUAL(unpin(&ctx, id), 0);
    CU_ASSERT_EQUAL(fk.unpins, 1);
    CU_ASSERT_EQUAL(fk.unmaps, 0);
    fake_ctx_fini(&ctx);
}

/* The replacement fails: the range is never given back, neither at
 * revocation nor at unmap or unpin, and it is inaccessible (PROT_NONE). */
static void test_failed_replacement_keeps_range(void)
{
    struct gdrx_ctx ctx;
    uint64_t id;
    void *cpu;

    fake_ctx_init(&ctx);
    fake_alloc(ALLOC_A, 2 * MiB);
    fake_pin_map(&ctx, ALLOC_A, 64 * KiB, &id, &cpu);
    fk.revoke_mmap_errno = ENOMEM;
    memory_freed(ALLOC_A, 2 * MiB);
    CU_ASSERT_EQUAL(state_of(&ctx, id), GDRX_PIN_REVOKED_LEAKED);
    CU_ASSERT_EQUAL(fk.unpins, 1);
    CU_ASSERT_EQUAL(fk.unmaps, 0);
    CU_ASSERT(fake_is_mapped(cpu, 64 * KiB));
    CU_ASSERT_EQUAL(gdrx_test_signal_here(touch, cpu), SIGSEGV);
    CU_ASSERT_EQUAL(unmap(&ctx, id), 0);
    CU_ASSERT(fake_is_mapped(cpu, 64 * KiB));
    CU_ASSERT_EQUAL(unpin(&ctx, id), 0);
    CU_ASSERT(fake_is_mapped(cpu, 64 * KiB));
    CU_ASSERT_EQUAL(fk.unmaps, 0);
    CU_ASSERT_EQUAL(fk.unpins, 1);
    fake_ctx_fini(&ctx);
}

/* Many slots ever created, few pins live: the index holds the live ones
 * only, and a free revokes exactly the pins of its range. */
static void test_free_sees_only_its_pins(void)
{
    struct gdrx_ctx ctx;
    uint64_t a[3], b, id;

    fake_ctx_init(&ctx);
    fake_alloc(ALLOC_A, 2 * MiB);
    fake_alloc(ALLOC_B, 4 * MiB);
    uint64_t *many = malloc(3000 * sizeof(*many));
    for (int i = 0; i < 3000; i++)
        CU_ASSERT_EQUAL_FATAL(gdrx_pin_create(&ctx, ALLOC_B + 4096, 8, 0, &many[i]), 0);
    for (int i = 0; i < 3000; i++)
        CU_ASSERT_EQUAL(unpin(&ctx, many[i]), 0);
    free(many);
    CU_ASSERT(atomic_load(&gdrx_pin_table.used) >= 3000);
    CU_ASSERT_EQUAL(index_size(), 0);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(gdrx_pin_create(&ctx, ALLOC_A + (uint64_t)i * 100000, 100, 0, &a[i]), 0);
    CU_ASSERT_EQUAL(gdrx_pin_create(&ctx, ALLOC_B + 3 * MiB, 100, 0, &b), 0);
    CU_ASSERT_EQUAL(index_size(), 4);

    struct gdrx_pin_ref refs[4];
    CU_ASSERT_EQUAL(gdrx_pin_index_find(ALLOC_B, ALLOC_B + 4 * MiB, refs, 4), 1);
    CU_ASSERT_EQUAL(refs[0].id, b);
    CU_ASSERT_EQUAL(gdrx_pin_index_find(ALLOC_A + 2 * MiB, ALLOC_B, refs, 4), 0);
    CU_ASSERT_EQUAL(gdrx_pin_index_find(ALLOC_A + MiB, ALLOC_A + MiB + 1, refs, 1), 3);

    memory_freed(ALLOC_A, 2 * MiB);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(state_of(&ctx, a[i]), GDRX_PIN_REVOKED);
    CU_ASSERT_EQUAL(state_of(&ctx, b), GDRX_PIN_PINNED);
    CU_ASSERT_EQUAL(index_size(), 1);
    /* a pin whose allocation went unseen still overlaps a later one */
    fake_free(ALLOC_B);
    fake_alloc(ALLOC_B + MiB, MiB);
    CU_ASSERT_EQUAL(gdrx_pin_create(&ctx, ALLOC_B + MiB, 100, 0, &id), 0);
    memory_freed(ALLOC_B + MiB, MiB);
    CU_ASSERT_EQUAL(state_of(&ctx, id), GDRX_PIN_REVOKED);
    /* b's recorded range [B, B+4M) starts before the freed one: found too */
    CU_ASSERT_EQUAL(state_of(&ctx, b), GDRX_PIN_REVOKED);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(unpin(&ctx, a[i]), 0);
    CU_ASSERT_EQUAL(unpin(&ctx, b), 0);
    CU_ASSERT_EQUAL(unpin(&ctx, id), 0);
    CU_ASSERT_EQUAL(index_size(), 0);
    fake_ctx_fini(&ctx);
}

/* The index against a brute-force scan, on random overlapping ranges. */
static void test_index_matches_scan(void)
{
    enum { N = 300 };
    static uint64_t lo[N], hi[N];
    static struct gdrx_pin fake_pins[N];
    static struct gdrx_pin_ref refs[N];
    uint64_t rnd = 12345;

    for (int i = 0; i < N; i++) {
        lo[i] = gdrx_test_rand(&rnd) % 100000;
        hi[i] = lo[i] + 1 + gdrx_test_rand(&rnd) % (i % 10 == 0 ? 50000 : 500);
        CU_ASSERT_EQUAL_FATAL(gdrx_pin_index_add(&fake_pins[i], (uint64_t)i + 1, lo[i], hi[i], 0), 0);
    }
    for (int q = 0; q < 2000; q++) {
        if (q == 1000) /* remove every other entry half way */
            for (int i = 0; i < N; i += 2)
                gdrx_pin_index_remove(&fake_pins[i], (uint64_t)i + 1, lo[i]);
        uint64_t qlo = gdrx_test_rand(&rnd) % 110000;
        uint64_t qhi = qlo + 1 + gdrx_test_rand(&rnd) % 1000;
        size_t want = 0;
        for (int i = q < 1000 ? 0 : 1; i < N; i += q < 1000 ? 1 : 2)
            want += lo[i] < qhi && hi[i] > qlo;
        size_t n = gdrx_pin_index_find(qlo, qhi, refs, N);
        CU_ASSERT_EQUAL_FATAL(n, want);
        for (size_t k = 0; k < n; k++) {
            size_t i = refs[k].id - 1;
            CU_ASSERT(refs[k].pin == &fake_pins[i] && lo[i] < qhi && hi[i] > qlo);
        }
    }
    for (int i = 1; i < N; i += 2)
        gdrx_pin_index_remove(&fake_pins[i], (uint64_t)i + 1, lo[i]);
    CU_ASSERT_EQUAL(index_size(), 0);
}

/* ---- the sequence counter ---- */

static struct {
    struct gdrx_pin *watch;   /* NULL: the hook only records */
    sem_t            go, done;
    uint32_t         seen;    /* what the other thread read */
} pub;

/* Called by gdrx_pin_fp_publish between making the counter odd and
 * storing the fields. */
void core_test_publishing(struct gdrx_pin *pin)
{
    fk.publishing_seen++;
    if (!(atomic_load(&pin->fp.seq) & 1))
        fk.publishing_even++;
    if (pub.watch == pin) {
        sem_post(&pub.go);
        sem_wait(&pub.done);
    }
}

static void *observer(void *arg)
{
    (void)arg;
    sem_wait(&pub.go);
    pub.seen = atomic_load(&pub.watch->fp.seq);
    sem_post(&pub.done);
    return NULL;
}

/* Another thread sees the counter odd while a writer publishes, and even
 * before and after. */
static void test_seq_odd_while_publishing(void)
{
    struct gdrx_ctx ctx;
    uint64_t id;
    pthread_t t;
    void *cpu;

    fake_ctx_init(&ctx);
    fake_alloc(ALLOC_A, 2 * MiB);
    fake_pin_map(&ctx, ALLOC_A, 4096, &id, &cpu);
    CU_ASSERT(fk.publishing_seen >= 2); /* pinned, mapped */
    CU_ASSERT_EQUAL(fk.publishing_even, 0);

    struct gdrx_pin *pin = fake_locked(&ctx, id);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pin);
    uint32_t before = atomic_load(&pin->fp.seq);
    CU_ASSERT_EQUAL(before & 1, 0);
    sem_init(&pub.go, 0, 0);
    sem_init(&pub.done, 0, 0);
    pub.watch = pin;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, observer, NULL), 0);
    CU_ASSERT_EQUAL(gdrx_pin_on_unmap(pin), 0);
    pthread_join(t, NULL);
    pub.watch = NULL;
    CU_ASSERT_EQUAL(pub.seen & 1, 1);
    uint32_t after = atomic_load(&pin->fp.seq);
    CU_ASSERT_EQUAL(after & 1, 0);
    CU_ASSERT_NOT_EQUAL(after, before);
    CU_ASSERT_EQUAL(fk.publishing_even, 0);
    CU_ASSERT_EQUAL(gdrx_pin_on_unpin(pin), 0);
    fake_ctx_fini(&ctx);
}

/* A pin flipping between view A (its own mapping, 4096 bytes) and view B
 * (another mapping, 8192 bytes); a copy 64 bytes past the end of A is
 * outside both, so only a torn read (A's address, B's length) lets it
 * through. */
struct flip {
    uint64_t   id;
    char      *dst;
    atomic_int stop;
    atomic_int calls;
    int        torn, ranged;
};

static void *copier(void *arg)
{
    struct flip *f = arg;
    char src[64] = { 1 };

    while (!atomic_load(&f->stop)) {
        int rc = gdrx_copy_to_mapping(handle(f->id), f->dst, src, 64);
        if (rc == -ERANGE)
            f->ranged++;
        else
            f->torn++;
        atomic_fetch_add(&f->calls, 1);
    }
    return NULL;
}

/* Copies racing with publications never act on a mix of two views. */
static void test_copies_race_publication(void)
{
    struct gdrx_ctx ctx;
    void *cpu;
    pthread_t t;
    struct flip f = { .torn = 0 };

    fake_ctx_init(&ctx);
    fake_alloc(ALLOC_A, 2 * MiB);
    struct gdrx_pin *pin = fake_pin_map(&ctx, ALLOC_A, 4096, &f.id, &cpu);
    char *other = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    f.dst = (char *)cpu + 4096 + 64; /* inside the 64 KiB the fake mapped */
    CU_ASSERT_FATAL(f.dst < other || f.dst >= other + 8192);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, copier, &f), 0);
    gdrx_mutex_lock(&pin->lock, GDRX_LOCK_PIN);
    /* until both sides did plenty (the copier may start late) */
    for (int i = 0; i < 20000 || atomic_load(&f.calls) < 20000; i++) {
        pin->bp.cpu_base = i & 1 ? (void *)other : cpu;
        pin->req.len = i & 1 ? 8192 : 4096;
        gdrx_pin_fp_publish(pin, 0);
    }
    pin->bp.cpu_base = cpu;
    pin->req.len = 4096;
    gdrx_pin_fp_publish(pin, 0);
    gdrx_mutex_unlock(&pin->lock, GDRX_LOCK_PIN);
    atomic_store(&f.stop, 1);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(f.torn, 0);
    CU_ASSERT(f.ranged > 0);
    CU_ASSERT_EQUAL(unpin(&ctx, f.id), 0);
    munmap(other, 8192);
    fake_ctx_fini(&ctx);
}

/* The lock-order check (lock_order.h): taking locks in rank order passes,
 * an outer lock taken under an inner one, or two of one rank, aborts this
 * build (GDRX_LOCK_ORDER_FATAL). */
static pthread_mutex_t order_a = PTHREAD_MUTEX_INITIALIZER, order_b = PTHREAD_MUTEX_INITIALIZER;

static void take_two(enum gdrx_lock_rank first, enum gdrx_lock_rank second)
{
    gdrx_mutex_lock(&order_a, first);
    gdrx_mutex_lock(&order_b, second);
    gdrx_mutex_unlock(&order_b, second);
    gdrx_mutex_unlock(&order_a, first);
}

static void in_order(void *arg)
{
    (void)arg;
    take_two(GDRX_LOCK_PIN, GDRX_LOCK_MAP);
    take_two(GDRX_LOCK_MAP, GDRX_LOCK_BACKEND);
    take_two(GDRX_LOCK_BACKEND, GDRX_LOCK_TRACE);
    take_two(GDRX_LOCK_CTX_TABLE, GDRX_LOCK_PIN_TABLE);
}

static void backend_then_map(void *arg)
{
    (void)arg;
    take_two(GDRX_LOCK_BACKEND, GDRX_LOCK_MAP); /* the fork hang of issue 29 */
}

static void two_pins(void *arg)
{
    (void)arg;
    take_two(GDRX_LOCK_PIN, GDRX_LOCK_PIN);
}

/* A lock that is only ever taken under another (the hooks' entry patcher
 * under CUDA_HOOKS): expected, it passes when this thread holds that one,
 * also as owned during fork (a fork handler after libgdrx's that makes a
 * CUDA call whose hooks libgdrx adopts there), and aborts otherwise. */
static void expect_under_held(void *arg)
{
    (void)arg;
    gdrx_mutex_lock(&order_a, GDRX_LOCK_CUDA_HOOKS);
    gdrx_lock_order_expect(GDRX_LOCK_CUDA_HOOKS, "test");
    gdrx_mutex_unlock(&order_a, GDRX_LOCK_CUDA_HOOKS);
}

static void expect_under_owned(void *arg)
{
    (void)arg;
    gdrx_mutex_lock(&order_a, GDRX_LOCK_CUDA_HOOKS);
    gdrx_lock_order_fork_own();
    gdrx_lock_order_expect(GDRX_LOCK_CUDA_HOOKS, "test");
    gdrx_lock_order_fork_disown();
    gdrx_mutex_unlock(&order_a, GDRX_LOCK_CUDA_HOOKS);
}

static void expect_without(void *arg)
{
    (void)arg;
    gdrx_lock_order_expect(GDRX_LOCK_CUDA_HOOKS, "test");
}

/* gdrx_range_within (range.h), every containment check of libgdrx and
 * the UCX plugin: the edges, then random ranges against 128-bit sums. */
static void test_range_within(void)
{
    const uint64_t top = UINT64_MAX;

    CU_ASSERT(gdrx_range_within(100, 50, 100, 50));     /* equal */
    CU_ASSERT(gdrx_range_within(100, 50, 149, 1));      /* last byte */
    CU_ASSERT(!gdrx_range_within(100, 50, 149, 2));     /* one past */
    CU_ASSERT(!gdrx_range_within(100, 50, 99, 1));      /* one before */
    CU_ASSERT(!gdrx_range_within(100, 50, 100, 51));
    CU_ASSERT(gdrx_range_within(100, 50, 120, 0));      /* empty, inside */
    CU_ASSERT(gdrx_range_within(100, 50, 150, 0));      /* empty, at the end */
    CU_ASSERT(!gdrx_range_within(100, 50, 151, 0));     /* empty, past it */
    CU_ASSERT(!gdrx_range_within(100, 50, 99, 0));      /* empty, before it */
    CU_ASSERT(gdrx_range_within(100, 0, 100, 0));       /* empty in empty */
    CU_ASSERT(!gdrx_range_within(100, 0, 100, 1));
    /* Ranges ending at 2^64, and claims past it (a naive lo + len wraps). */
    CU_ASSERT(gdrx_range_within(top - 10, 11, top, 1));
    CU_ASSERT(!gdrx_range_within(top - 10, 11, top, 2));
    CU_ASSERT(gdrx_range_within(0, top, 0, top));
    CU_ASSERT(!gdrx_range_within(0, top, 1, top));
    CU_ASSERT(!gdrx_range_within(10, 20, 15, top));
    CU_ASSERT(!gdrx_range_within(top - 10, 11, top, top));
    CU_ASSERT(gdrx_range_within(top - 10, 100, top - 5, 5)); /* base + size wraps */
    CU_ASSERT(!gdrx_range_within(top - 10, 100, 5, 5));
#ifdef __SIZEOF_INT128__
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 100000; i++) {
        uint64_t v[4];
        for (int k = 0; k < 4; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
            /* near 0, near 2^64, or anywhere, so the edges meet */
            v[k] = (x & 3) == 0 ? (x >> 2) % 64 : (x & 3) == 1 ? top - (x >> 2) % 64 : x;
        }
        unsigned __int128 base = v[0], size = v[1], lo = v[2], len = v[3];
        int want = lo >= base && lo + len <= base + size;
        if (gdrx_range_within(v[0], v[1], v[2], v[3]) != want) {
            CU_FAIL("gdrx_range_within disagrees with the 128-bit sums");
            break;
        }
    }
#endif
}

static void test_lock_order_checked(void)
{
    CU_ASSERT_EQUAL(gdrx_test_signal_of(in_order, NULL), 0);
    CU_ASSERT_EQUAL(gdrx_test_signal_of(backend_then_map, NULL), SIGABRT);
    CU_ASSERT_EQUAL(gdrx_test_signal_of(two_pins, NULL), SIGABRT);
    CU_ASSERT_EQUAL(gdrx_test_signal_of(expect_under_held, NULL), 0);
    CU_ASSERT_EQUAL(gdrx_test_signal_of(expect_under_owned, NULL), 0);
    CU_ASSERT_EQUAL(gdrx_test_signal_of(expect_without, NULL), SIGABRT);
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_lock_order_checked),
    GDRX_TEST_CASE(test_range_within),
    GDRX_TEST_CASE(test_old_handle_cannot_reach_reused_slot),
    GDRX_TEST_CASE(test_states_and_errors),
    GDRX_TEST_CASE(test_revoke_mapped),
    GDRX_TEST_CASE(test_failed_replacement_keeps_range),
    GDRX_TEST_CASE(test_free_sees_only_its_pins),
    GDRX_TEST_CASE(test_index_matches_scan),
    GDRX_TEST_CASE(test_seq_odd_while_publishing),
    GDRX_TEST_CASE(test_copies_race_publication),
    GDRX_TEST_END
};

static const struct gdrx_test_suite suites[] = {
    { "core_unit", NULL, NULL, cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    return gdrx_test_main(argc, argv, suites);
}
