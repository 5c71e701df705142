/*
 * log.h - opt-in diagnostics on stderr.
 *
 * SPDX-License-Identifier: MIT
 *
 * The library never prints unless GDRX_LOG_LEVEL is set in the environment
 * (0 off, 1 error, 2 warn, 3 info, 4 debug); the level is read once.
 */
#ifndef GDRX_LOG_H
#define GDRX_LOG_H

enum gdrx_log_level {
    GDRX_LOG_OFF   = 0,
    GDRX_LOG_ERROR = 1,
    GDRX_LOG_WARN  = 2,
    GDRX_LOG_INFO  = 3,
    GDRX_LOG_DEBUG = 4,
};

/* Current level (reads the environment on first use; thread-safe). */
int gdrx_log_level(void);

void gdrx_log_msg(int level, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The level test is inline so that a disabled message costs one load and
 * evaluates none of its arguments. */
#define GDRX_LOG(level, ...)                                      \
    do {                                                          \
        if (gdrx_log_level() >= (level))                          \
            gdrx_log_msg((level), __func__, __VA_ARGS__);         \
    } while (0)

#define gdrx_err(...)   GDRX_LOG(GDRX_LOG_ERROR, __VA_ARGS__)
#define gdrx_warn(...)  GDRX_LOG(GDRX_LOG_WARN, __VA_ARGS__)
#define gdrx_info(...)  GDRX_LOG(GDRX_LOG_INFO, __VA_ARGS__)
#define gdrx_dbg(...)   GDRX_LOG(GDRX_LOG_DEBUG, __VA_ARGS__)

#endif /* GDRX_LOG_H */
