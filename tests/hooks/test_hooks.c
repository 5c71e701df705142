/*
 * test_hooks.c - the hooks suite: the relocator and entry patcher, the
 * memory events through libgdrx's public API, and coexistence with a
 * patcher that works the way UCX's does.
 *
 * SPDX-License-Identifier: MIT
 */
#include "test_hooks.h"

static const struct gdrx_test_suite suites[] = {
    { "hooks/reloc", NULL, NULL, reloc_cases },
    { "hooks/events", NULL, NULL, event_cases },
    { "hooks/unsubscribe", NULL, NULL, unsubscribe_cases },
    { "hooks/coexist", NULL, NULL, coexist_cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    return gdrx_test_main(argc, argv, suites);
}
