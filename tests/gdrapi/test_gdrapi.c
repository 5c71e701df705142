/*
 * test_gdrapi.c - libgdrapi.so.2 (gdrcopy's API over gdrx) on the
 * simulated GPU: every call, both info versions, the error codes, the copy
 * routines at any alignment, what is pinned for unaligned and page-rounded
 * requests, the library's ABI (soname, exported symbols, versions), and
 * what gdrcopy 2.6's own tests rely on (test_compat.c).
 * The backend is dmabuf unless GDRX_BACKEND says otherwise (the qemu guest
 * runs this program with gdrdrv).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>

#include "test_gdrapi.h"

static const struct gdrx_test_suite suites[] = {
    GAPI_BACKEND_SUITES,
    { "gdrapi_abi", NULL, NULL, gapi_abi_cases },
    { "gdrapi_compat", NULL, NULL, gapi_compat_cases },
    /* last: left out below where the backend is not dmabuf */
    { "gdrapi_coherent", NULL, NULL, gapi_coherent_cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    static struct gdrx_test_suite run[sizeof(suites) / sizeof(suites[0])];

    ga_default_backend();
    memcpy(run, suites, sizeof(suites));
    /* The simulated GPU's coherence reaches libgdrx through the dmabuf
     * backend's export (the guest's gdrdrv has its own, tests/kmod). */
    if (!ga_backend_is("dmabuf")) {
        printf("gdrapi_coherent: not run: needs GDRX_BACKEND=dmabuf\n");
        run[sizeof(suites) / sizeof(suites[0]) - 2] = (struct gdrx_test_suite)GDRX_SUITE_END;
    }
    return gdrx_test_main(argc, argv, run);
}
