/*
 * ut_fake_ucp.c - a stand-in libucp.so.0 for test_tools: only
 * ucp_get_version, answering what $UT_FAKE_UCP_VERSION says ("1.13.1"), or
 * writing nothing at all when it says anything else ("silent"), as a
 * libucp whose release cannot be told.  test_tools puts it next to a
 * libuct (symbolic links in a directory of its own), where the plugin
 * looks for the libucp of that install.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>

void ucp_get_version(unsigned *major, unsigned *minor, unsigned *release);

void ucp_get_version(unsigned *major, unsigned *minor, unsigned *release)
{
    const char *v = getenv("UT_FAKE_UCP_VERSION");
    unsigned a, b, c;

    if ((v == NULL) || (sscanf(v, "%u.%u.%u", &a, &b, &c) != 3)) {
        return;
    }
    *major   = a;
    *minor   = b;
    *release = c;
}
