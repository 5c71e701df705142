/*
 * copy_dispatch.c - the copy routines of the running process: the CPU's
 * features and the environment, read once.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "copy_select.h"

int gdrx_copy_variant_supported(gdrx_copy_variant_t variant)
{
    return gdrx_copy_variant_supported_on(gdrx_cpu_features(), variant);
}

int gdrx_copy_impl_get(gdrx_copy_variant_t variant, struct gdrx_copy_impl *impl)
{
    if (!impl)
        return -EINVAL;
    if (variant == GDRX_COPY_AUTO) {
        *impl = *gdrx_copy_default();
        return 0;
    }
    return gdrx_copy_impl_for(gdrx_cpu_features(), variant, impl);
}

static struct gdrx_copy_impl default_impl;
static struct gdrx_copy_choice default_choice;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void choose_default(void)
{
    const struct gdrx_cpu_features *f = gdrx_cpu_features();
    struct gdrx_copy_impl from;

    gdrx_copy_choose(f, secure_getenv("GDRX_COPY_VARIANT"), secure_getenv("GDRX_COPY_TO_VARIANT"),
                     secure_getenv("GDRX_COPY_FROM_VARIANT"), &default_choice);
    /* Both are supported: gdrx_copy_choose() returns nothing else. */
    gdrx_copy_impl_for(f, default_choice.to, &default_impl);
    gdrx_copy_impl_for(f, default_choice.from, &from);
    default_impl.from_variant = from.from_variant;
    default_impl.from_mapping = from.from_mapping;
}

const struct gdrx_copy_impl *gdrx_copy_default(void)
{
    pthread_once(&default_once, choose_default);
    return &default_impl;
}

const char *gdrx_copy_default_note(void)
{
    pthread_once(&default_once, choose_default);
    return default_choice.note;
}

/*
 * Which routines a mapping gets.  The mapping type is what the driver
 * gave (the backend reports it at map time, docs/arm64.md):
 *
 *  - GDRX_MAPPING_CACHING: GPU memory the CPU reaches coherently (Grace
 *    Hopper's NVLink-C2C, mapped Normal Write-Back on arm64).  The caches
 *    keep it coherent with the GPU, so no streaming store or load, no
 *    64-B write-combining line and no DSB buys anything: libc's memcpy is
 *    the fastest copy, and the LIBC variant's closing fence (DMB ISH on
 *    arm64, SFENCE on x86) gives the ordering a lock release gives, which
 *    is what the caller's next "done" store needs.  The streaming variants
 *    would be correct there, only slower (a DSB per copy).
 *  - GDRX_MAPPING_WC (and DEVICE, never asked for): memory behind the
 *    PCIe BAR, weakly ordered and uncached.  memcpy is wrong there: it
 *    may store a byte twice (overlapping tails), issue unaligned accesses
 *    (an alignment fault on Device memory) and, on arm64, order nothing.
 *    The default streaming variant keeps copy.h's contract and carries
 *    the fences (copy_arm_order.h for arm64).
 *
 * GDRX_COPY_VARIANT and friends choose among the streaming variants only:
 * a cached mapping always gets LIBC, which is right for every CPU.
 */
static struct gdrx_copy_impl cached_impl;
static pthread_once_t cached_once = PTHREAD_ONCE_INIT;

static void choose_cached(void)
{
    /* LIBC is supported everywhere (copy_select.c). */
    gdrx_copy_impl_for(gdrx_cpu_features(), GDRX_COPY_LIBC, &cached_impl);
}

const struct gdrx_copy_impl *gdrx_copy_for_mapping(gdrx_mapping_type_t type)
{
    if (type != GDRX_MAPPING_CACHING)
        return gdrx_copy_default();
    pthread_once(&cached_once, choose_cached);
    return &cached_impl;
}
