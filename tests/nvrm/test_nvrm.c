/*
 * test_nvrm.c - the nvrm backend against the RM-ioctl emulator and the
 * simulated GPU (see nvrm_test.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>

#include "nvrm_test.h"

extern const struct gdrx_test_case nvrm_open_cases[];
extern const struct gdrx_test_case nvrm_map_cases[];
extern const struct gdrx_test_case nvrm_error_cases[];
extern const struct gdrx_test_case nvrm_life_cases[];
extern const struct gdrx_test_case nvrm_load_cases[];
extern const struct gdrx_test_case nvrm_window_cases[];
extern const struct gdrx_test_case nvrm_branch_cases[];

static const struct gdrx_test_suite suites[] = {
    { "nvrm_open", NULL, NULL, nvrm_open_cases },
    { "nvrm_map", NULL, NULL, nvrm_map_cases },
    { "nvrm_errors", NULL, NULL, nvrm_error_cases },
    { "nvrm_life", NULL, NULL, nvrm_life_cases },
    { "nvrm_load", NULL, NULL, nvrm_load_cases },
    { "nvrm_window", NULL, NULL, nvrm_window_cases },
    { "nvrm_branch", NULL, NULL, nvrm_branch_cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    if (nvt_under_emulator(argv) != 0)
        return 2;
    return gdrx_test_main(argc, argv, suites);
}
