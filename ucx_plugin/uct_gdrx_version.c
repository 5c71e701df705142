/*
 * uct_gdrx_version.c - registers the gdrx component and transport with UCX
 * when the library is loaded, but only into the UCX version it was built
 * for: UCX checks nothing, and its internal structures change between minor
 * releases, so a mismatch would corrupt memory instead of failing.
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_iface.h"

#include <dlfcn.h>
#include <stdio.h>
#include <ucs/sys/compiler_def.h>


#ifdef UCT_GDRX_TEST_FAKE_UCX_VERSION
#  define UCT_GDRX_BUILT_FOR UCT_GDRX_TEST_FAKE_UCX_VERSION /* tests only */
#else
#  define UCT_GDRX_BUILT_FOR GDRX_UCX_BUILD_VERSION
#endif


typedef enum uct_gdrx_registration {
    UCT_GDRX_UNREGISTERED,
    UCT_GDRX_REGISTERED,
    UCT_GDRX_REFUSED
} uct_gdrx_registration_t;

typedef void (*uct_gdrx_get_version_func_t)(unsigned *major, unsigned *minor,
                                            unsigned *release);

extern uct_tl_t UCT_TL_NAME(gdrx);

static uct_gdrx_registration_t uct_gdrx_registration = UCT_GDRX_UNREGISTERED;


/* The running UCX's version, from libucp (libucs and libuct export none);
 * 0 if libucp is not loaded, in which case only the dynamic linker's symbol
 * checks stand between us and another version. */
static int uct_gdrx_running_version(unsigned *major, unsigned *minor,
                                    unsigned *release)
{
    uct_gdrx_get_version_func_t get_version;

    *(void**)&get_version = dlsym(RTLD_DEFAULT, "ucp_get_version");
    if (get_version == NULL) {
        return 0;
    }

    get_version(major, minor, release);
    return 1;
}

static int uct_gdrx_version_matches(void)
{
    unsigned built_major, built_minor, built_release;
    unsigned major, minor, release;

    if (sscanf(UCT_GDRX_BUILT_FOR, "%u.%u.%u", &built_major, &built_minor,
               &built_release) != 3) {
        built_major = built_minor = built_release = 0;
    }

    if (!uct_gdrx_running_version(&major, &minor, &release)) {
        return 1;
    }

    if ((major == built_major) && (minor == built_minor)) {
        return 1;
    }

    /* UCX's logger belongs to the other version: write the one line here. */
    fprintf(stderr, "gdrx: libuct_gdrx was built for UCX %s but this process "
            "runs UCX %u.%u.%u; the gdrx transport is not registered "
            "(rebuild gdrx against UCX %u.%u)\n", UCT_GDRX_BUILT_FOR, major,
            minor, release, major, minor);
    return 0;
}

static UCS_F_CTOR void uct_gdrx_init(void)
{
    if (!uct_gdrx_version_matches()) {
        uct_gdrx_registration = UCT_GDRX_REFUSED;
        return;
    }

    uct_component_register(&uct_gdrx_component);
    uct_tl_register(&uct_gdrx_component, &UCT_TL_NAME(gdrx));
    uct_gdrx_registration = UCT_GDRX_REGISTERED;
}

static UCS_F_DTOR void uct_gdrx_cleanup(void)
{
    if (uct_gdrx_registration != UCT_GDRX_REGISTERED) {
        return;
    }

    uct_tl_unregister(&UCT_TL_NAME(gdrx));
    uct_component_unregister(&uct_gdrx_component);
    uct_gdrx_registration = UCT_GDRX_UNREGISTERED;
}
