/*
 * log.c - opt-in diagnostics on stderr (see log.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int log_level_value;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void log_init(void)
{
    const char *v = secure_getenv("GDRX_LOG_LEVEL");
    long level = 0;

    if (v && *v) {
        char *end = NULL;
        level = strtol(v, &end, 10);
        if (*end != '\0' || level < 0)
            level = GDRX_LOG_ERROR; /* set but unreadable: errors only */
        if (level > GDRX_LOG_DEBUG)
            level = GDRX_LOG_DEBUG;
    }
    log_level_value = (int)level;
}

int gdrx_log_level(void)
{
    /* pthread_once is one predictable branch after the first call. */
    pthread_once(&log_once, log_init);
    return log_level_value;
}

void gdrx_log_msg(int level, const char *func, const char *fmt, ...)
{
    static const char *const tag[] = { "", "error", "warn", "info", "debug" };
    char msg[512];
    va_list ap;
    int saved_errno = errno; /* logging must not clobber the caller's errno */

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (level < GDRX_LOG_ERROR || level > GDRX_LOG_DEBUG)
        level = GDRX_LOG_ERROR;
    /* One fprintf per message keeps lines from different threads whole. */
    fprintf(stderr, "gdrx[%d] %s: %s: %s\n", (int)getpid(), tag[level], func, msg);
    errno = saved_errno;
}
