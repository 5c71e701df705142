/*
 * env_probe.c - prints the log level libgdrx takes from GDRX_LOG_LEVEL,
 * for test_env.c (built with libgdrx's log.c alone, so that a setgid copy
 * needs no library from the build tree).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>

#include "log.h"

/* LeakSanitizer cannot inspect a setgid process (it is not dumpable): an
 * ASan build of this probe runs without it. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "detect_leaks=0";
}

int main(void)
{
    printf("level %d\n", gdrx_log_level());
    return 0;
}
