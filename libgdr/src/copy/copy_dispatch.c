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
