/*
 * json_check.c - strict JSON syntax check (json_check.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>
#include <string.h>

#include "json_check.h"

static int value(const char **p, int depth);

static void ws(const char **p)
{
    while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
        (*p)++;
}

static int string(const char **p)
{
    if (**p != '"')
        return 0;
    for ((*p)++; **p != '"'; (*p)++) {
        if ((unsigned char)**p < 0x20)
            return 0;
        if (**p == '\\') {
            (*p)++;
            if (**p == 'u') {
                for (int i = 0; i < 4; i++)
                    if (!isxdigit((unsigned char)*++*p))
                        return 0;
            } else if (!strchr("\"\\/bfnrt", **p) || !**p) {
                return 0;
            }
        }
    }
    (*p)++;
    return 1;
}

static int number(const char **p)
{
    const char *s = *p;
    if (**p == '-')
        (*p)++;
    if (**p == '0')
        (*p)++;
    else if (isdigit((unsigned char)**p))
        while (isdigit((unsigned char)**p))
            (*p)++;
    else
        return 0;
    if (**p == '.') {
        (*p)++;
        if (!isdigit((unsigned char)**p))
            return 0;
        while (isdigit((unsigned char)**p))
            (*p)++;
    }
    if (**p == 'e' || **p == 'E') {
        (*p)++;
        if (**p == '+' || **p == '-')
            (*p)++;
        if (!isdigit((unsigned char)**p))
            return 0;
        while (isdigit((unsigned char)**p))
            (*p)++;
    }
    return *p > s;
}

/* Elements of an array (close ']') or members of an object ('}'). */
static int items(const char **p, char close, int depth)
{
    (*p)++;
    ws(p);
    if (**p == close) {
        (*p)++;
        return 1;
    }
    for (;;) {
        if (close == '}') {
            if (!string(p))
                return 0;
            ws(p);
            if (*(*p)++ != ':')
                return 0;
        }
        if (!value(p, depth + 1))
            return 0;
        ws(p);
        if (**p == close) {
            (*p)++;
            return 1;
        }
        if (*(*p)++ != ',')
            return 0;
        ws(p);
    }
}

static int value(const char **p, int depth)
{
    if (depth > 64)
        return 0;
    ws(p);
    switch (**p) {
    case '{': return items(p, '}', depth);
    case '[': return items(p, ']', depth);
    case '"': return string(p);
    case 't': return strncmp(*p, "true", 4) == 0 ? (*p += 4, 1) : 0;
    case 'f': return strncmp(*p, "false", 5) == 0 ? (*p += 5, 1) : 0;
    case 'n': return strncmp(*p, "null", 4) == 0 ? (*p += 4, 1) : 0;
    default: return number(p);
    }
}

int json_check(const char *s)
{
    if (!value(&s, 0))
        return 0;
    ws(&s);
    return *s == '\0';
}
