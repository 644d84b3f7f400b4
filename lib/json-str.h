/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON string output for the programs that write their JSON by hand
 * (chroot-setup status --json, sim's summary.json).
 */
#pragma once

#include <glib.h>

/*
 * Append @s to @out as a JSON string, in quotes: " and \ escaped, control
 * characters as \u00XX, UTF-8 as it is, and each byte that is not valid
 * UTF-8 (a path may hold any) as U+FFFD, since JSON text is UTF-8.  NULL
 * is written as "".
 */
void qt_json_append_str(GString *out, const char *s);
