/*
 * json_check.h - a strict JSON syntax check for the tools' --json output
 * (RFC 8259 grammar; no semantics).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_JSON_CHECK_H
#define GDRX_JSON_CHECK_H

/* 1 if s is exactly one JSON value (surrounding whitespace allowed). */
int json_check(const char *s);

#endif /* GDRX_JSON_CHECK_H */
