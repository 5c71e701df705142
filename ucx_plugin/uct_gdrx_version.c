/*
 * uct_gdrx_version.c - lets the gdrx component and transport register with
 * UCX when the library is loaded, but only into the UCX version it was built
 * for: UCX checks nothing, and its internal structures change between minor
 * releases, so a mismatch would corrupt memory instead of failing.  The
 * registration itself is the transport's (uct_gdrx_iface.c).
 *
 * Only libucp tells its version.  Where none is loaded yet (a UCT-only
 * program; an MPI rank the plugin is preloaded into, whose libucp comes
 * with MPI_Init) the libucp next to the loaded libuct, of the same UCX
 * install, is loaded for the question and closed again: gdrx registers
 * into no libuct whose release it does not know.
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_version.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>


#ifdef UCT_GDRX_TEST_FAKE_UCX_VERSION
#  define UCT_GDRX_BUILT_FOR UCT_GDRX_TEST_FAKE_UCX_VERSION /* tests only */
#else
#  define UCT_GDRX_BUILT_FOR GDRX_UCX_BUILD_VERSION
#endif


typedef enum uct_gdrx_registration {
    UCT_GDRX_UNREGISTERED,
    UCT_GDRX_REGISTERED, /**< the running UCX is ours */
    UCT_GDRX_REFUSED
} uct_gdrx_registration_t;

typedef enum uct_gdrx_version_match {
    UCT_GDRX_VERSION_UNKNOWN, /**< no libucp tells */
    UCT_GDRX_VERSION_SAME,
    UCT_GDRX_VERSION_OTHER
} uct_gdrx_version_match_t;

typedef void (*uct_gdrx_get_version_func_t)(unsigned *major, unsigned *minor,
                                            unsigned *release);

static uct_gdrx_registration_t uct_gdrx_registration = UCT_GDRX_UNREGISTERED;
static uct_gdrx_version_reg_func_t uct_gdrx_unregister;


/* What uct_gdrx_find_lib looks for, and the path it found. */
typedef struct uct_gdrx_lib_search {
    const char *prefix; /* "libucp.so" */
    const char *path;
} uct_gdrx_lib_search_t;

/* dl_iterate_phdr callback: the path of a loaded library, if any. */
static int uct_gdrx_find_lib(struct dl_phdr_info *info, size_t size,
                             void *arg)
{
    uct_gdrx_lib_search_t *search = arg;
    const char *base              = strrchr(info->dlpi_name, '/');

    base = (base == NULL) ? info->dlpi_name : base + 1;
    if (strncmp(base, search->prefix, strlen(search->prefix)) != 0) {
        return 0;
    }

    search->path = info->dlpi_name;
    return 1;
}

/* The path of the loaded library whose file name starts with prefix, or
 * NULL. */
static const char *uct_gdrx_loaded_path(const char *prefix)
{
    uct_gdrx_lib_search_t search = {prefix, NULL};

    dl_iterate_phdr(uct_gdrx_find_lib, &search);
    return search.path;
}

/* The libucp of the install the loaded libuct belongs to (its directory),
 * loaded RTLD_LOCAL for the version question; NULL if there is none. */
static void *uct_gdrx_open_libucp_near_libuct(void)
{
    const char *libuct = uct_gdrx_loaded_path("libuct.so");
    const char *slash  = (libuct == NULL) ? NULL : strrchr(libuct, '/');
    char path[PATH_MAX];

    if ((slash == NULL) ||
        (snprintf(path, sizeof(path), "%.*s/libucp.so.0", (int)(slash - libuct),
                  libuct) >= (int)sizeof(path))) {
        return NULL;
    }

    /* not a word through UCX's logger: its release is the question */
    return dlopen(path, RTLD_LAZY | RTLD_LOCAL);
}

/* ucp_get_version of the libucp in this process, also one loaded with
 * RTLD_LOCAL (as a dlopen'ed MPI component may load it), else of the one
 * next to libuct; *handle_p is then to be closed.  NULL if none. */
static uct_gdrx_get_version_func_t uct_gdrx_ucp_get_version(void **handle_p)
{
    uct_gdrx_get_version_func_t get_version;
    const char *path;

    *handle_p = NULL;
    *(void**)&get_version = dlsym(RTLD_DEFAULT, "ucp_get_version");
    if (get_version != NULL) {
        return get_version;
    }

    path = uct_gdrx_loaded_path("libucp.so");
    /* RTLD_NOLOAD: the copy already there, nothing new is loaded */
    *handle_p = (path != NULL) ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) :
                                 uct_gdrx_open_libucp_near_libuct();
    if (*handle_p == NULL) {
        return NULL;
    }

    *(void**)&get_version = dlsym(*handle_p, "ucp_get_version");
    if (get_version == NULL) {
        dlclose(*handle_p);
        *handle_p = NULL;
    }
    return get_version;
}

static uct_gdrx_version_match_t uct_gdrx_version_compare(void)
{
    unsigned built_major, built_minor, built_release;
    /* a libucp that writes nothing answers 0.0.0, never stack leftovers
     * that could equal our release */
    unsigned major = 0, minor = 0, release = 0;
    uct_gdrx_get_version_func_t get_version;
    void *handle;

    get_version = uct_gdrx_ucp_get_version(&handle);
    if (get_version == NULL) {
        fprintf(stderr, "gdrx: no libucp in this process or next to libuct "
                "tells the UCX release; the gdrx transport (built for UCX "
                "%s) is not registered\n", UCT_GDRX_BUILT_FOR);
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

    /* No UCX release is 0.x: such an answer (or a build that recorded no
     * release, read as 0.0.0) tells nothing, and must not match either. */
    if ((major == 0) || (built_major == 0)) {
        fprintf(stderr, "gdrx: libucp answers UCX %u.%u.%u, not a release "
                "gdrx can tell; the gdrx transport (built for UCX %s) is not "
                "registered\n", major, minor, release, UCT_GDRX_BUILT_FOR);
        return UCT_GDRX_VERSION_UNKNOWN;
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
    return (uct_gdrx_registration == UCT_GDRX_REGISTERED) ? UCS_OK :
                                                            UCS_ERR_UNSUPPORTED;
}

void uct_gdrx_version_load(uct_gdrx_version_reg_func_t reg,
                           uct_gdrx_version_reg_func_t unreg)
{
    /* known before the first write into UCX's lists, or nothing is
     * written: their layout is the release's */
    if (uct_gdrx_version_compare() != UCT_GDRX_VERSION_SAME) {
        uct_gdrx_registration = UCT_GDRX_REFUSED;
        return;
    }

    uct_gdrx_unregister = unreg;
    reg();
    uct_gdrx_registration = UCT_GDRX_REGISTERED;
}

void uct_gdrx_version_unload(void)
{
    if (uct_gdrx_registration != UCT_GDRX_REGISTERED) {
        return;
    }

    uct_gdrx_unregister();
    uct_gdrx_registration = UCT_GDRX_UNREGISTERED;
}
