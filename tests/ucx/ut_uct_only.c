/*
 * ut_uct_only.c - a UCT-only program for test_tools (no libucp in the
 * process, whatever the suites link): `ut_uct_only PLUGIN...` loads each
 * plugin in turn (RTLD_LOCAL) and prints whether libucp is loaded, then
 * after each plugin the number of components named gdrx on UCX's list.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <uct/api/uct.h>

static int ut_libucp_loaded(void)
{
    return dlsym(RTLD_DEFAULT, "ucp_get_version") != NULL;
}

/* Components named gdrx on UCX's list, or -1. */
static int ut_gdrx_components(void)
{
    uct_component_attr_t attr = {.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME};
    uct_component_h *components;
    unsigned i, n;
    int found = 0;

    if (uct_query_components(&components, &n) != UCS_OK) {
        return -1;
    }
    for (i = 0; i < n; ++i) {
        found += (uct_component_query(components[i], &attr) == UCS_OK) &&
                 !strcmp(attr.name, "gdrx");
    }
    uct_release_component_list(components);
    return found;
}

int main(int argc, char **argv)
{
    int i;

    printf("libucp %d gdrx %d", ut_libucp_loaded(), ut_gdrx_components());
    for (i = 1; i < argc; ++i) {
        if (dlopen(argv[i], RTLD_NOW | RTLD_LOCAL) == NULL) {
            printf("\n%s\n", dlerror());
            return 1;
        }
        printf(" %d", ut_gdrx_components());
    }
    printf(" libucp %d\n", ut_libucp_loaded());
    return 0;
}
