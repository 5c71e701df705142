/*
 * uct_gdrx_version.c - lets the gdrx component and transport register with
 * UCX when the library is loaded, but only into the UCX version it was built
 * for: UCX checks nothing, and its internal structures change between minor
 * releases, so a mismatch would corrupt memory instead of failing.  The
 * registration itself is the transport's (uct_gdrx_iface.c).
 *
 * Only libucp tells its version, and when the plugin is preloaded into an
 * MPI rank libucp arrives later (MPI_Init).  Then the check waits for UCX's
 * first call into the component (listing its resources or opening its MD),
 * which comes from a loaded libucp (or from a UCT-only program, which has
 * no version to compare with).
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_version.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <ucs/debug/log.h>


#ifdef UCT_GDRX_TEST_FAKE_UCX_VERSION
#  define UCT_GDRX_BUILT_FOR UCT_GDRX_TEST_FAKE_UCX_VERSION /* tests only */
#else
#  define UCT_GDRX_BUILT_FOR GDRX_UCX_BUILD_VERSION
#endif


typedef enum uct_gdrx_registration {
    UCT_GDRX_UNREGISTERED,
    UCT_GDRX_REGISTERED_UNCHECKED, /**< no libucp yet: checked at first use */
    UCT_GDRX_REGISTERED,           /**< the running UCX is ours */
    UCT_GDRX_REFUSED
} uct_gdrx_registration_t;

typedef enum uct_gdrx_version_match {
    UCT_GDRX_VERSION_UNKNOWN, /**< libucp is not loaded (yet) */
    UCT_GDRX_VERSION_SAME,
    UCT_GDRX_VERSION_OTHER
} uct_gdrx_version_match_t;

typedef void (*uct_gdrx_get_version_func_t)(unsigned *major, unsigned *minor,
                                            unsigned *release);

static uct_gdrx_registration_t uct_gdrx_registration = UCT_GDRX_UNREGISTERED;
static pthread_mutex_t uct_gdrx_registration_lock    = PTHREAD_MUTEX_INITIALIZER;
static uct_gdrx_version_reg_func_t uct_gdrx_unregister;


/* dl_iterate_phdr callback: the path of a loaded libucp, if any. */
static int uct_gdrx_find_libucp(struct dl_phdr_info *info, size_t size,
                                void *arg)
{
    const char *base = strrchr(info->dlpi_name, '/');

    base = (base == NULL) ? info->dlpi_name : base + 1;
    if (strncmp(base, "libucp.so", strlen("libucp.so")) != 0) {
        return 0;
    }

    *(const char**)arg = info->dlpi_name;
    return 1;
}

/* ucp_get_version of the libucp in this process, also one loaded with
 * RTLD_LOCAL (as a dlopen'ed MPI component may load it); NULL if none. */
static uct_gdrx_get_version_func_t uct_gdrx_ucp_get_version(void **handle_p)
{
    uct_gdrx_get_version_func_t get_version;
    const char *path = NULL;

    *handle_p = NULL;
    *(void**)&get_version = dlsym(RTLD_DEFAULT, "ucp_get_version");
    if (get_version != NULL) {
        return get_version;
    }

    dl_iterate_phdr(uct_gdrx_find_libucp, &path);
    if (path == NULL) {
        return NULL;
    }

    /* RTLD_NOLOAD: the copy already there, nothing new is loaded */
    *handle_p = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (*handle_p == NULL) {
        return NULL;
    }

    *(void**)&get_version = dlsym(*handle_p, "ucp_get_version");
    return get_version;
}

static uct_gdrx_version_match_t uct_gdrx_version_compare(void)
{
    unsigned built_major, built_minor, built_release;
    unsigned major, minor, release;
    uct_gdrx_get_version_func_t get_version;
    void *handle;

    get_version = uct_gdrx_ucp_get_version(&handle);
    if (get_version == NULL) {
        return UCT_GDRX_VERSION_UNKNOWN;
    }

    get_version(&major, &minor, &release);
    if (handle != NULL) {
        dlclose(handle);
    }

    if (sscanf(UCT_GDRX_BUILT_FOR, "%u.%u.%u", &built_major, &built_minor,
               &built_release) != 3) {
        built_major = built_minor = built_release = 0;
    }

    if ((major == built_major) && (minor == built_minor)) {
        return UCT_GDRX_VERSION_SAME;
    }

    /* UCX's logger belongs to the other version: write the one line here. */
    fprintf(stderr, "gdrx: libuct_gdrx was built for UCX %s but this process "
            "runs UCX %u.%u.%u; the gdrx transport is not registered "
            "(rebuild gdrx against UCX %u.%u)\n", UCT_GDRX_BUILT_FOR, major,
            minor, release, major, minor);
    return UCT_GDRX_VERSION_OTHER;
}

ucs_status_t uct_gdrx_version_check(void)
{
    ucs_status_t status;

    pthread_mutex_lock(&uct_gdrx_registration_lock);
    if (uct_gdrx_registration == UCT_GDRX_REGISTERED_UNCHECKED) {
        switch (uct_gdrx_version_compare()) {
        case UCT_GDRX_VERSION_SAME:
            uct_gdrx_registration = UCT_GDRX_REGISTERED;
            break;
        case UCT_GDRX_VERSION_OTHER:
            /* UCX keeps the component on its list (it has no way to take
             * it off): it lists no resource and opens no MD from now on */
            uct_gdrx_unregister();
            uct_gdrx_registration = UCT_GDRX_REFUSED;
            break;
        default:
            ucs_debug("gdrx: no libucp in this process, UCX version not "
                      "checked");
            break;
        }
    }
    status = (uct_gdrx_registration == UCT_GDRX_REFUSED) ?
             UCS_ERR_UNSUPPORTED : UCS_OK;
    pthread_mutex_unlock(&uct_gdrx_registration_lock);
    return status;
}

void uct_gdrx_version_load(uct_gdrx_version_reg_func_t reg,
                           uct_gdrx_version_reg_func_t unreg)
{
    uct_gdrx_version_match_t match = uct_gdrx_version_compare();

    if (match == UCT_GDRX_VERSION_OTHER) {
        uct_gdrx_registration = UCT_GDRX_REFUSED;
        return;
    }

    uct_gdrx_unregister = unreg;
    reg();
    uct_gdrx_registration = (match == UCT_GDRX_VERSION_SAME) ?
                            UCT_GDRX_REGISTERED :
                            UCT_GDRX_REGISTERED_UNCHECKED;
}

void uct_gdrx_version_unload(void)
{
    if ((uct_gdrx_registration != UCT_GDRX_REGISTERED) &&
        (uct_gdrx_registration != UCT_GDRX_REGISTERED_UNCHECKED)) {
        return;
    }

    uct_gdrx_unregister();
    uct_gdrx_registration = UCT_GDRX_UNREGISTERED;
}
