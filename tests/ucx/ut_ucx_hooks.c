/*
 * ut_ucx_hooks.c - see ut_ucx_hooks.h.
 *
 * SPDX-License-Identifier: MIT
 */
#include "config.h"
#include "ut_ucx_hooks.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ucm/api/ucm.h>
#include <uct/api/version.h>

#include "gdrx_test.h"
#include "tcuda.h"

static void ut_noop_event(ucm_event_type_t type, ucm_event_t *event, void *arg)
{
    (void)type;
    (void)event;
    (void)arg;
}

int ut_ucx_hooks_work(void)
{
    void *ucm_cuda = dlopen("libucm_cuda.so.0", RTLD_LAZY | RTLD_NOLOAD);
    ucs_status_t status;

    if (ucm_cuda == NULL) {
        return 0;
    }
    dlclose(ucm_cuda);
    status = ucm_set_event_handler(UCM_EVENT_MEM_TYPE_FREE, 0, ut_noop_event,
                                   NULL);
    if (status == UCS_OK) {
        ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_FREE, ut_noop_event, NULL);
    }
    return status == UCS_OK;
}

void ut_reexec_with_ucx_cuda(char **argv, char *why, size_t len)
{
    char prefix[PATH_MAX], path[2 * PATH_MAX + 8];
    const char *old = getenv("LD_LIBRARY_PATH");

    if (UCT_API != UCT_VERSION(1, 13)) {
        snprintf(why, len, "built against UCX %d.%d; the CUDA-enabled UCX "
                 "the tests use is 1.13.1", UCT_VERNO_MAJOR, UCT_VERNO_MINOR);
        return;
    }
    if (!tc_ucx_cuda_prefix(prefix, sizeof(prefix))) {
        snprintf(why, len, "no CUDA-enabled UCX 1.13.1: set "
                 "GDRX_UCX_CUDA_PREFIX or run config/deps.sh");
        return;
    }
    snprintf(path, sizeof(path), "%s/lib%s%s", prefix, old ? ":" : "",
             old ? old : "");
    setenv("LD_LIBRARY_PATH", path, 1);
    setenv("UT_UCX_HOOKS_PREFIX", prefix, 1);
    execv("/proc/self/exe", argv);
    snprintf(why, len, "cannot run again: %s", strerror(errno));
}

int ut_ucx_hooks_main(int argc, char **argv, int hooks, const char *suite_name,
                      const struct gdrx_test_suite *suites, const char *not_run)
{
    static const struct gdrx_test_suite none[] = { GDRX_SUITE_END };
    char why[PATH_MAX + 128];

    if (hooks && (getenv("UT_UCX_HOOKS_PREFIX") == NULL)) {
        ut_reexec_with_ucx_cuda(argv, why, sizeof(why));
        tc_report_skip(suite_name, why);
        return gdrx_test_main(argc, argv, none);
    }
    if (not_run != NULL) {
        printf("NOT RUN: %s\n", not_run);
    }
    return gdrx_test_main(argc, argv, suites);
}
