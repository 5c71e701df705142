/*
 * export.h - marks the public entry points.
 *
 * SPDX-License-Identifier: MIT
 *
 * The library is built with -fvisibility=hidden and a version script that
 * exports gdrx_* only; a function is public when it carries GDRX_EXPORT.
 * copy/copy.h defines the same macro for the copy engine; including it first
 * keeps a single definition.
 */
#ifndef GDRX_EXPORT_H
#define GDRX_EXPORT_H

#include "copy/copy.h"

#ifndef GDRX_EXPORT
#define GDRX_EXPORT __attribute__((visibility("default")))
#endif

#endif /* GDRX_EXPORT_H */
